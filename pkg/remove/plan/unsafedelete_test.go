package plan

import (
	"errors"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

var configMaps = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

// The API server's answers to a GET of an object it cannot read, as kube-apiserver v1.36
// words them: with the AllowUnsafeMalformedObjectDeletion gate, and without it.
var (
	corruptAnswer = apierrors.NewInternalError(errors.New("StorageError: corrupt object, Code: 7, Key: /registry/configmaps/team-a/bad, ResourceVersion: 0, " +
		"AdditionalErrorMsg: object not decodable revision=42: proto: wrong wireType = 7 for field TypeMeta"))
	undecodableAnswer = apierrors.NewInternalError(errors.New("proto: wrong wireType = 7 for field TypeMeta"))
)

// planUnsafeOne plans the unsafe deletion of configmaps/bad -n team-a: a GET of it answers
// get, and a SelfSubjectAccessReview allows the verbs in allowed.
func planUnsafeOne(t *testing.T, get error, allowed map[string]bool, opts Options) (*Plan, []authorizationv1.ResourceAttributes) {
	t.Helper()
	return planUnsafeAmong(t, get, nil, allowed, opts)
}

// planUnsafeAmong is planUnsafeOne where a list of one configmap in another namespace, or
// after bad, answers siblings (nil: configmaps/ok -n team-b).
func planUnsafeAmong(t *testing.T, get, siblings error, allowed map[string]bool, opts Options) (*Plan, []authorizationv1.ResourceAttributes) {
	t.Helper()
	return planUnsafeWith(t, get, siblings, nil, allowed, opts)
}

// planUnsafeWith is planUnsafeAmong where a GET of another configmap answers siblingGet
// (nil: the tracker's).
func planUnsafeWith(t *testing.T, get, siblings, siblingGet error, allowed map[string]bool, opts Options) (*Plan, []authorizationv1.ResourceAttributes) {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	md := metadatafake.NewSimpleMetadataClient(scheme,
		&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "ok"}})
	md.PrependReactor("list", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return siblings != nil, nil, siblings
	})
	md.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if name := a.(k8stesting.GetAction).GetName(); name != "bad" {
			// Another configmap, read from etcd: as siblings says, or the tracker's.
			return siblingGet != nil, nil, siblingGet
		}
		if get == nil {
			return true, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "bad", UID: "uid-bad"}}, nil
		}
		return true, nil, get
	})
	kc := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}})
	var asked []authorizationv1.ResourceAttributes
	kc.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		asked = append(asked, *r.Spec.ResourceAttributes)
		r.Status.Allowed = allowed[r.Spec.ResourceAttributes.Verb]
		return true, r, nil
	})
	planner := &Planner{Kube: kc, Metadata: md}
	u := Unreadable{Resource: configMaps, Namespace: "team-a", Name: "bad"}
	return planner.Plan(t.Context(), []Request{{Unreadable: &u, Cause: &finalizev1alpha1.Cause{Reason: finalizev1alpha1.ReasonUnreadable}}}, opts), asked
}

// TestAnUnsafeDeletionIsOnlyForAnObjectProvenUnreadable: nothing but a GET made now that
// fails with the gate's "corrupt object", naming the object's own key, with both verbs
// granted on it by name and a person's reason, plans an unsafe deletion; every other
// answer refuses it, and only the missing reason is a flag away.
func TestAnUnsafeDeletionIsOnlyForAnObjectProvenUnreadable(t *testing.T) {
	forced := Options{UnsafeDelete: true, ForceUnverified: true, Reason: "INC-77"}
	both := map[string]bool{"delete": true, VerbUnsafeDelete: true}
	tests := []struct {
		name     string
		get      error
		allowed  map[string]bool
		opts     Options
		wantKind finalizev1alpha1.RefusalKind
		wantWhy  string
	}{
		{"read", nil, both, forced, finalizev1alpha1.RefusalReadable, "the API server reads it"},
		{"gone", apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "bad"), both, forced, finalizev1alpha1.RefusalReadable, "it is gone"},
		{"timeout", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), both, forced, finalizev1alpha1.RefusalReadable, "not on its stored bytes"},
		{"forbidden read", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "bad", errors.New("no")), both, forced, finalizev1alpha1.RefusalReadable, "not on its stored bytes"},
		{"conversion webhook", apierrors.NewInternalError(errors.New(`conversion webhook for example.com/v1, Kind=Widget failed: failed to decode response`)), both, forced,
			finalizev1alpha1.RefusalReadable, "not on its stored bytes"},
		{"gate off", undecodableAnswer, both, forced, finalizev1alpha1.RefusalGateOff, "--feature-gates=AllowUnsafeMalformedObjectDeletion=true"},
		{"another key", apierrors.NewInternalError(errors.New("StorageError: corrupt object, Code: 7, Key: /registry/configmaps/team-b/bad, ResourceVersion: 0, AdditionalErrorMsg: x")),
			both, forced, finalizev1alpha1.RefusalReadable, "is not the key of configmaps/bad -n team-a"},
		{"no unsafe verb", corruptAnswer, map[string]bool{"delete": true}, forced, finalizev1alpha1.RefusalForbidden, "you may not unsafe-delete-ignore-read-errors configmaps in namespace team-a (name bad)"},
		{"no delete", corruptAnswer, map[string]bool{VerbUnsafeDelete: true}, forced, finalizev1alpha1.RefusalForbidden, "you may not delete configmaps"},
		{"no reason", corruptAnswer, both, Options{UnsafeDelete: true}, finalizev1alpha1.RefusalUnverified, "only deleted with a person's reason"},
		{"not asked for", corruptAnswer, both, Options{ForceUnverified: true, Reason: "x"}, finalizev1alpha1.RefusalUnverified, "only made when a person asks for it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := planUnsafeOne(t, tt.get, tt.allowed, tt.opts)
			if len(p.Actions) != 0 || len(p.Refusals) != 1 {
				t.Fatalf("got %d actions, %d refusals; want one refusal", len(p.Actions), len(p.Refusals))
			}
			r := p.Refusals[0]
			if r.Kind != tt.wantKind || !strings.Contains(r.Message, tt.wantWhy) || r.Action != finalizev1alpha1.ActionUnsafeDelete || r.Cause != finalizev1alpha1.ReasonUnreadable {
				t.Errorf("got %s %s (cause %s): %s; want %s: ...%s...", r.Action, r.Kind, r.Cause, r.Message, tt.wantKind, tt.wantWhy)
			}
		})
	}

	// Every other configmap fails too, or there is none: the type's configuration, not
	// this object.
	for _, siblings := range []error{undecodableAnswer, apierrors.NewInternalError(errors.New("StorageError: corrupt object, Code: 7, Key: /registry/configmaps/team-b/ok, ResourceVersion: 0, AdditionalErrorMsg: x"))} {
		p, _ := planUnsafeAmong(t, corruptAnswer, siblings, both, forced)
		if len(p.Refusals) != 1 || p.Refusals[0].Kind != finalizev1alpha1.RefusalTypeWide || !strings.Contains(p.Refusals[0].Message, "the API server reads no other configmaps from etcd either (2 requests") {
			t.Errorf("every other configmap unreadable: %+v", p)
		}
	}

	// A list answered from the watch cache, where a GET of what it named fails: that
	// proves nothing of etcd now.
	if p, _ := planUnsafeWith(t, corruptAnswer, nil, undecodableAnswer, both, forced); len(p.Refusals) != 1 || p.Refusals[0].Kind != finalizev1alpha1.RefusalTypeWide {
		t.Errorf("a sibling listed from the cache but not read from etcd: %+v", p)
	}
	// The KMS plugin's refusal is the KMS's answer, whatever the gate calls it.
	kmsAnswer := apierrors.NewInternalError(errors.New("StorageError: corrupt object, Code: 7, Key: /registry/configmaps/team-a/bad, ResourceVersion: 0, " +
		"AdditionalErrorMsg: data from the storage is not transformable revision=0: failed to decrypt DEK, error: rpc error: code = PermissionDenied desc = key disabled"))
	if p, _ := planUnsafeOne(t, kmsAnswer, both, forced); len(p.Refusals) != 1 || p.Refusals[0].Kind != finalizev1alpha1.RefusalTypeWide || !strings.Contains(p.Refusals[0].Message, "the KMS plugin did not decrypt it") {
		t.Errorf("a KMS refusal: %+v", p)
	}

	p, asked := planUnsafeOne(t, corruptAnswer, both, forced)
	if len(p.Actions) != 1 {
		t.Fatalf("the proven case was refused: %+v", p.Refusals)
	}
	a := p.Actions[0]
	if a.WriteKind() != UnsafeDelete || a.Key != "/registry/configmaps/team-a/bad" || a.UID != "" || a.Reason != "INC-77" || a.Verified ||
		!strings.Contains(a.Verification.Evidence, "AllowUnsafeMalformedObjectDeletion") || !strings.Contains(a.Verification.Evidence, "reads other configmaps (configmaps/ok -n team-b)") || !strings.Contains(a.Unreadable, "corrupt object") {
		t.Errorf("action %+v", a)
	}
	api := a.API()
	if api.Action != finalizev1alpha1.ActionUnsafeDelete || api.Finalizer != "" || api.Reason != "INC-77" || api.Evidence == "" {
		t.Errorf("row %+v", api)
	}
	for _, r := range asked {
		if r.Name != "bad" || r.Namespace != "team-a" || r.Resource != "configmaps" {
			t.Errorf("asked about %+v, not the object by name", r)
		}
	}
}

func TestKeyNames(t *testing.T) {
	u := Unreadable{Resource: configMaps, Namespace: "a", Name: "x"}
	for key, want := range map[string]bool{"/registry/configmaps/a/x": true, "/configmaps/a/x": true, "/registry/configmaps/b/x": false, "/registry/configmaps/a/xy": false, "x": false, "/a/x": false, "a/x/y/x": false} {
		if got := keyNames(key, u); got != want {
			t.Errorf("keyNames(%q) = %v", key, got)
		}
	}
	if !keyNames("/registry/minions/n1", Unreadable{Name: "n1"}) {
		t.Error("a cluster-scoped key")
	}
}

// TestTypesTheAPIServerCannotDeleteUnsafely: namespaces and RBAC's types have no unsafe
// deleter, and a type an aggregated API server serves is not in the kube-apiserver's
// storage: each is refused before anything is read; a type served locally, or a CRD's, is
// not.
func TestTypesTheAPIServerCannotDeleteUnsafely(t *testing.T) {
	apiService := func(name string, service map[string]any) *unstructured.Unstructured {
		spec := map[string]any{"group": "x", "version": "v1"}
		if service != nil {
			spec["service"] = service
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": name}, "spec": spec}}
	}
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{apiServices: "APIServiceList"},
		apiService("v1.metrics.example.com", map[string]any{"namespace": "kube-system", "name": "metrics"}), apiService("v1.local.example.com", nil))
	p := &Planner{Dynamic: dyn}
	res := func(group, resource string, namespaced bool) kube.Resource {
		return kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}, Namespaced: namespaced}
	}
	for _, tt := range []struct {
		r    kube.Resource
		want string
	}{
		{res("", "namespaces", false), "no unsafe deletion of a namespace"},
		{res("apiextensions.k8s.io", "customresourcedefinitions", false), "every object of its type in etcd"},
		{res("rbac.authorization.k8s.io", "rolebindings", true), "no unsafe deletion of rolebindings.rbac.authorization.k8s.io"},
		{res("metrics.example.com", "samples", true), "APIService v1.metrics.example.com sends it to an aggregated API server (service kube-system/metrics)"},
		{res("unknown.example.com", "things", true), "whether an aggregated API server serves it could not be read"},
		{res("local.example.com", "widgets", true), ""},
		{res("", "configmaps", true), ""},
	} {
		got := p.unsupported(t.Context(), Unreadable{Resource: tt.r, Namespace: "a", Name: "x"})
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.r, got, tt.want)
		}
	}
}
