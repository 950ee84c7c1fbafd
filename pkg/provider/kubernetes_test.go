package provider

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

var instances = schema.GroupVersionResource{Group: "compute.example.com", Version: "v1", Resource: "instances"}

func instance(ns, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(instances.GroupVersion().WithKind("Instance"))
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	u.SetUID(types.UID("uid-" + name))
	return u
}

func TestKubernetesProvider(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{instances: "InstanceList"},
		instance("team-a", "db-1", map[string]string{"app": "db-1"}))
	dyn.PrependReactor("get", "instances", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "secret-ns" {
			return true, nil, apierrors.NewForbidden(instances.GroupResource(), "db-1", errors.New("no"))
		}
		return false, nil, nil
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(instances.GroupVersion().WithKind("Instance"), meta.RESTScopeNamespace)
	opts := Options{Dynamic: dyn, Mapper: mapper}
	tests := []struct {
		name string
		spec finalizev1alpha1.KubernetesProvider
		want finalizev1alpha1.Verdict
		says string
	}{
		{"found by name", finalizev1alpha1.KubernetesProvider{Resource: "instances.compute.example.com", Namespace: "{.metadata.namespace}", Name: "{.metadata.name}"},
			finalizev1alpha1.VerdictPresent, "instances.compute.example.com/db-1 -n team-a exists in this cluster (uid uid-db-1)"},
		{"not found by name", finalizev1alpha1.KubernetesProvider{Resource: "instances", Namespace: "{.metadata.namespace}", Name: "{.status.instanceID}"},
			finalizev1alpha1.VerdictGone, "instances.compute.example.com/i-123 -n team-a not found in this cluster"},
		{"forbidden", finalizev1alpha1.KubernetesProvider{Resource: "instances", Namespace: "secret-ns", Name: "{.metadata.name}"},
			finalizev1alpha1.VerdictUnknown, "forbidden"},
		{"selected", finalizev1alpha1.KubernetesProvider{Resource: "instances", Selector: "app={.metadata.name}"},
			finalizev1alpha1.VerdictPresent, `instances.compute.example.com/db-1 -n team-a matches "app=db-1"`},
		{"nothing selected", finalizev1alpha1.KubernetesProvider{Resource: "instances", Namespace: "other", Selector: "app={.metadata.name}"},
			finalizev1alpha1.VerdictGone, `no instances.compute.example.com in namespace other matches "app=db-1"`},
		{"a type the cluster does not serve", finalizev1alpha1.KubernetesProvider{Resource: "gizmos", Name: "{.metadata.name}"},
			finalizev1alpha1.VerdictUnknown, `the server doesn't have a resource type "gizmos"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := askVia(t, &finalizev1alpha1.Verify{Kubernetes: &tt.spec}, opts)
			if a.Verdict != tt.want || !strings.Contains(a.Evidence, tt.says) {
				t.Errorf("got %s: %s; want %s saying %q", a.Verdict, a.Evidence, tt.want, tt.says)
			}
		})
	}
	// A hostile value cannot become a name or add terms to a selector.
	for _, spec := range []finalizev1alpha1.KubernetesProvider{
		{Resource: "instances", Namespace: "team-a", Name: "{.metadata.annotations.hostile}"},
		{Resource: "instances", Selector: "app={.metadata.annotations.hostile}"},
	} {
		p, _ := New(&finalizev1alpha1.Verify{Kubernetes: &spec}, opts)
		if _, err := p.Prepare(request()); err == nil {
			t.Errorf("%+v: a hostile value was accepted", spec)
		}
	}
	if _, err := New(&finalizev1alpha1.Verify{Kubernetes: &finalizev1alpha1.KubernetesProvider{Resource: "instances", Name: "x", Context: "nope", Kubeconfig: "/nonexistent"}}, opts); err == nil {
		t.Error("a kubeconfig that does not exist must fail the provider")
	}
}

// TestKubernetesALateAnswerIsNotUsed: a NotFound read after the deadline, or an empty
// list, does not count as Gone.
func TestKubernetesALateAnswerIsNotUsed(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{instances: "InstanceList"})
	dyn.PrependReactor("*", "instances", func(clienttesting.Action) (bool, runtime.Object, error) {
		time.Sleep(150 * time.Millisecond)
		return false, nil, nil
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(instances.GroupVersion().WithKind("Instance"), meta.RESTScopeNamespace)
	late := &metav1.Duration{Duration: 50 * time.Millisecond}
	for _, spec := range []finalizev1alpha1.KubernetesProvider{
		{Resource: "instances", Namespace: "{.metadata.namespace}", Name: "{.metadata.name}", Timeout: late},
		{Resource: "instances", Selector: "app={.metadata.name}", Timeout: late},
	} {
		if a := askVia(t, &finalizev1alpha1.Verify{Kubernetes: &spec}, Options{Dynamic: dyn, Mapper: mapper}); a.Verdict != finalizev1alpha1.VerdictUnknown || !strings.Contains(a.Evidence, "no answer within 50ms") {
			t.Errorf("an answer after the deadline: %s %s, want Unknown: no answer within 50ms", a.Verdict, a.Evidence)
		}
	}
}

// TestKubernetesAnswersAreAboutWhatWasAsked: Gone only on a NotFound whose details name
// the object asked about, and on a list read to its end. The API server's 404 for a path
// it does not serve (a type or group that is not installed, a CRD deleted since
// discovery, an aggregated API whose server is gone) names no object; an empty page that
// carries a continue token says nothing about the pages after it.
func TestKubernetesAnswersAreAboutWhatWasAsked(t *testing.T) {
	unserved := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{}}}
	page := func(cont string, items ...*unstructured.Unstructured) *unstructured.UnstructuredList {
		l := &unstructured.UnstructuredList{}
		l.SetContinue(cont)
		for _, u := range items {
			l.Items = append(l.Items, *u)
		}
		return l
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{instances: "InstanceList"})
	dyn.PrependReactor("get", "instances", func(a clienttesting.Action) (bool, runtime.Object, error) {
		name := a.(clienttesting.GetAction).GetName()
		switch a.GetNamespace() {
		case "unserved":
			return true, nil, unserved
		case "not-a-status":
			// What client-go makes of a 404 whose body is not a Status ("404 page not
			// found" from a mux): it names the object, from the request, not the answer.
			return true, nil, apierrors.NewGenericServerResponse(404, "get", instances.GroupResource(), name, "404 page not found", 0, true)
		case "another-object":
			return true, nil, apierrors.NewNotFound(instances.GroupResource(), "not-"+name)
		case "another-type":
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "compute.example.com", Resource: "disks"}, name)
		case "named":
			return true, nil, apierrors.NewNotFound(instances.GroupResource(), name)
		}
		return false, nil, nil
	})
	pages := map[string][]*unstructured.UnstructuredList{
		"then-an-item": {page("c1"), page("c2"), page("", instance("then-an-item", "db-1", map[string]string{"app": "db-1"}))},
		"then-nothing": {page("c1"), page("")},
		"endless":      nil,
	}
	var continues []string
	dyn.PrependReactor("list", "instances", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ns := a.GetNamespace()
		if ns == "unserved" {
			return true, nil, unserved
		}
		list, ok := pages[ns]
		if !ok {
			return false, nil, nil
		}
		if ns == "endless" {
			return true, page("again"), nil
		}
		// Each page is asked for with the continue token of the one before it.
		n := len(continues)
		if want := map[bool]string{true: "", false: list[max(n-1, 0)].GetContinue()}[n == 0]; a.(clienttesting.ListActionImpl).ListOptions.Continue != want {
			return true, nil, fmt.Errorf("page %d asked for with continue %q, want %q", n, a.(clienttesting.ListActionImpl).ListOptions.Continue, want)
		}
		continues = append(continues, ns)
		if n >= len(list) {
			return true, nil, errors.New("read past the last page")
		}
		return true, list[n], nil
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(instances.GroupVersion().WithKind("Instance"), meta.RESTScopeNamespace)
	opts := Options{Dynamic: dyn, Mapper: mapper}
	tests := []struct {
		name      string
		namespace string
		selector  string
		want      finalizev1alpha1.Verdict
		says      string
	}{
		{"the NotFound names the object", "named", "", finalizev1alpha1.VerdictGone, "instances.compute.example.com/db-1 -n named not found in this cluster"},
		{"a path the server does not serve", "unserved", "", finalizev1alpha1.VerdictUnknown, "the 404 is not a NotFound of instances.compute.example.com db-1"},
		{"a 404 that is not a Status", "not-a-status", "", finalizev1alpha1.VerdictUnknown, "the 404 is not a NotFound of instances.compute.example.com db-1"},
		{"a NotFound about another object", "another-object", "", finalizev1alpha1.VerdictUnknown, "the 404 is not a NotFound of instances.compute.example.com db-1"},
		{"a NotFound about another type", "another-type", "", finalizev1alpha1.VerdictUnknown, "the 404 is not a NotFound of instances.compute.example.com db-1"},
		{"an empty page, then an item", "then-an-item", "app=db-1", finalizev1alpha1.VerdictPresent, `instances.compute.example.com/db-1 -n then-an-item matches "app=db-1"`},
		{"empty pages to the end", "then-nothing", "app=db-1", finalizev1alpha1.VerdictGone, `no instances.compute.example.com in namespace then-nothing matches "app=db-1"`},
		{"empty pages without end", "endless", "app=db-1", finalizev1alpha1.VerdictUnknown, "empty pages"},
		{"a list the server does not serve", "unserved", "app=db-1", finalizev1alpha1.VerdictUnknown, "the server could not find the requested resource"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			continues = nil
			spec := finalizev1alpha1.KubernetesProvider{Resource: "instances", Namespace: tt.namespace, Name: "{.metadata.name}"}
			if tt.selector != "" {
				spec.Name, spec.Selector = "", tt.selector
			}
			a := askVia(t, &finalizev1alpha1.Verify{Kubernetes: &spec}, opts)
			if a.Verdict != tt.want || !strings.Contains(a.Evidence, tt.says) {
				t.Errorf("got %s: %s; want %s saying %q", a.Verdict, a.Evidence, tt.want, tt.says)
			}
		})
	}
}

func init() {
	examples["kubernetes"] = &finalizev1alpha1.Verify{Kubernetes: &finalizev1alpha1.KubernetesProvider{
		Resource: "instances.compute.example.com", Namespace: "{.metadata.namespace}", Name: "{.status.instance}",
	}}
}

// TestKubernetesAnObjectOfAnotherTypeIsNotAsked: when the identity says the type of the
// resource (provider-kubernetes's manifest: apiVersion and kind), a rule whose resource
// is another type is not asked: a Secret looked up as an Instance is not found, and would
// read as Gone while it exists (#38).
func TestKubernetesAnObjectOfAnotherTypeIsNotAsked(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{instances: "InstanceList"})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(instances.GroupVersion().WithKind("Instance"), meta.RESTScopeNamespace)
	p, err := New(&finalizev1alpha1.Verify{Kubernetes: &finalizev1alpha1.KubernetesProvider{Resource: "instances", Namespace: "team-a", Name: "{identity.manifestName}"}},
		Options{Dynamic: dyn, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		apiVersion, kind string
		refused          bool
	}{
		{"v1", "Secret", true},
		{"compute.example.com/v2", "Instance", false}, // another version of the type: the same objects
		{"other.example.com/v1", "Instance", true},
		{"", "Instance", true},
	} {
		req := request()
		req.Identity = map[string]string{"manifestName": "db-1", "manifestAPIVersion": tc.apiVersion, "manifestKind": tc.kind}
		_, err := p.Prepare(req)
		if refused := err != nil && strings.Contains(err.Error(), "the rule's resource"); refused != tc.refused {
			t.Errorf("%s %s: %v, want refused: %v", tc.apiVersion, tc.kind, err, tc.refused)
		}
	}
}
