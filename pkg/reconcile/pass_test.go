package reconcile

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
)

// TestEachPassDiscoversAfresh: the run's discovery is cached in memory; a type the
// cluster serves from the second pass on is listed by the second pass.
func TestEachPassDiscoversAfresh(t *testing.T) {
	kube := kubefake.NewClientset()
	served := kube.Discovery().(*fakediscovery.FakeDiscovery)
	served.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "namespaces", Kind: "Namespace", Verbs: []string{"list", "get"}},
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"list", "get"}},
	}}}
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	meta := metadatafake.NewSimpleMetadataClient(scheme)
	r := &Reconciler{
		Clients: &client.Clients{Discovery: memory.NewMemCacheClient(served), Metadata: meta, Kube: kube, Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())},
		Options: Options{Policy: compile(t, `- name: widgets
  finalizers: [example.com/cleanup]
  verify:
    kubernetes: {resource: secrets, namespace: "{.metadata.namespace}", name: "{.metadata.name}"}
`), DryRun: true},
	}
	listedWidgets := func() bool {
		for _, a := range meta.Actions() {
			if l, ok := a.(clienttesting.ListActionImpl); ok && l.GetResource().Resource == "widgets" {
				return true
			}
		}
		return false
	}
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if listedWidgets() {
		t.Fatal("widgets listed before the cluster served them")
	}
	served.Resources = append(served.Resources, &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: []string{"list", "get"}},
	}})
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !listedWidgets() {
		t.Error("the second pass did not list widgets, a type the cluster served since the first")
	}
}

// TestARuleNamingItsTypeInTheSingularMatchesThePlural: a rule that names its type in the
// singular is resolved as kubectl resolves it, and the pass says to what; a name the
// cluster does not serve matches nothing, and the pass says so instead of staying silent.
// (Until #32, the singular matched nothing, and was only warned about.)
func TestARuleNamingItsTypeInTheSingularMatchesThePlural(t *testing.T) {
	kube := kubefake.NewClientset()
	served := kube.Discovery().(*fakediscovery.FakeDiscovery)
	served.Resources = []*metav1.APIResourceList{{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", SingularName: "widget", Kind: "Widget", Namespaced: true, Verbs: []string{"list", "get"}},
	}}}
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	meta := metadatafake.NewSimpleMetadataClient(scheme)
	var warnings []string
	r := &Reconciler{
		Clients: &client.Clients{Discovery: memory.NewMemCacheClient(served), Metadata: meta, Kube: kube,
			Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())},
		Options: Options{Policy: compile(t, `- name: widgets
  finalizers: [example.com/cleanup]
  resources: [widget.example.com, gizmos.example.com]
  verify:
    kubernetes: {resource: secrets, namespace: "{.metadata.namespace}", name: "{.metadata.name}"}
`), DryRun: true, Warn: func(err error) { warnings = append(warnings, err.Error()) }},
	}
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(warnings, "\n")
	if !strings.Contains(joined, `rule widgets: resources "widget.example.com" is widgets.example.com, as kubectl resolves it`) ||
		!strings.Contains(joined, `rule widgets: resources "gizmos.example.com" names no type this cluster serves`) {
		t.Errorf("warnings %q; want one resolving widget.example.com, one naming gizmos.example.com unserved", warnings)
	}
	listed := false
	for _, a := range meta.Actions() {
		if l, ok := a.(clienttesting.ListActionImpl); ok && l.GetResource().Resource == "widgets" {
			listed = true
		}
	}
	if !listed {
		t.Error("the pass did not list widgets, the type the rule names in the singular")
	}
}

// TestANameThatCouldBeTwoTypesFailsThePass: a short name two groups serve is not guessed:
// the pass fails before it lists anything, naming both.
func TestANameThatCouldBeTwoTypesFailsThePass(t *testing.T) {
	kube := kubefake.NewClientset()
	served := kube.Discovery().(*fakediscovery.FakeDiscovery)
	served.Resources = []*metav1.APIResourceList{
		{GroupVersion: "a.example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", SingularName: "widget", Kind: "Widget", ShortNames: []string{"wd"}, Namespaced: true, Verbs: []string{"list"}}}},
		{GroupVersion: "b.example.com/v1", APIResources: []metav1.APIResource{{Name: "wonders", SingularName: "wonder", Kind: "Wonder", ShortNames: []string{"wd"}, Namespaced: true, Verbs: []string{"list"}}}},
	}
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	meta := metadatafake.NewSimpleMetadataClient(scheme)
	r := &Reconciler{
		Clients: &client.Clients{Discovery: memory.NewMemCacheClient(served), Metadata: meta, Kube: kube,
			Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())},
		Options: Options{Policy: compile(t, `- name: w
  finalizers: [example.com/cleanup]
  resources: [wd]
  verify: {exec: {command: [x]}}
`), DryRun: true},
	}
	_, err := r.Pass(context.Background())
	var unresolved *UnresolvedError
	if !errors.As(err, &unresolved) || !strings.Contains(err.Error(), `rule w: resources "wd": it could name any of widgets.a.example.com, wonders.b.example.com`) {
		t.Errorf("the pass: %v", err)
	}
	if len(meta.Actions()) != 0 {
		t.Errorf("the pass listed %d times before it failed", len(meta.Actions()))
	}
}

// TestAPassListsEachTypeWhereItsRulesAct: a type every rule of which names its namespaces
// is listed in each of them, where its Role grants it; a type a rule without namespaces
// matches is listed cluster-wide, in the same pass. The requests are counted, for two
// namespaced rules.
func TestAPassListsEachTypeWhereItsRulesAct(t *testing.T) {
	kube := kubefake.NewClientset()
	served := kube.Discovery().(*fakediscovery.FakeDiscovery)
	served.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "secrets", SingularName: "secret", Kind: "Secret", Namespaced: true, Verbs: []string{"list", "get"}},
		{Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", ShortNames: []string{"cm"}, Namespaced: true, Verbs: []string{"list", "get"}},
		{Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true, Verbs: []string{"list", "get"}},
	}}}
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	lists := func(policy string) []string {
		meta := metadatafake.NewSimpleMetadataClient(scheme)
		r := &Reconciler{
			Clients: &client.Clients{Discovery: memory.NewMemCacheClient(served), Metadata: meta, Kube: kube, Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())},
			Options: Options{Policy: compile(t, policy), DryRun: true},
		}
		if _, err := r.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range meta.Actions() {
			if l, ok := a.(clienttesting.ListActionImpl); ok {
				where := l.GetNamespace()
				if where == "" {
					where = "*"
				}
				out = append(out, l.GetResource().Resource+" in "+where)
			}
		}
		slices.Sort(out)
		return out
	}
	two := `- {name: a-secrets, finalizers: [example.com/x], resources: [secrets], namespaces: [team-a], verify: {exec: {command: [x]}}}
- {name: b-configmaps, finalizers: [example.com/x], resources: [cm], namespaces: [team-b], verify: {exec: {command: [x]}}}
`
	// Until #32 both types were listed in both namespaces: 4 lists.
	if got, want := lists(two), []string{"configmaps in team-b", "secrets in team-a"}; !slices.Equal(got, want) {
		t.Errorf("two namespaced rules: lists %q, want %q", got, want)
	}
	mixed := two + `- {name: all-configmaps, finalizers: [example.com/y], resources: [configmaps], verify: {exec: {command: [x]}}}
`
	if got, want := lists(mixed), []string{"configmaps in *", "secrets in team-a"}; !slices.Equal(got, want) {
		t.Errorf("a namespaced rule and a cluster-wide one: lists %q, want %q", got, want)
	}
}
