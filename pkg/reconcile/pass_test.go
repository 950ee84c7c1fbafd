package reconcile

import (
	"context"
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

// TestATypeTheClusterDoesNotServeIsNamed: a rule that names its type in the singular
// matches nothing, ever; the pass says so instead of staying silent.
func TestATypeTheClusterDoesNotServeIsNamed(t *testing.T) {
	kube := kubefake.NewClientset()
	served := kube.Discovery().(*fakediscovery.FakeDiscovery)
	served.Resources = []*metav1.APIResourceList{{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", SingularName: "widget", Kind: "Widget", Namespaced: true, Verbs: []string{"list", "get"}},
	}}}
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	var warnings []string
	r := &Reconciler{
		Clients: &client.Clients{Discovery: memory.NewMemCacheClient(served), Metadata: metadatafake.NewSimpleMetadataClient(scheme), Kube: kube,
			Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())},
		Options: Options{Policy: compile(t, `- name: widgets
  finalizers: [example.com/cleanup]
  resources: [widget.example.com, widgets.example.com]
  verify:
    kubernetes: {resource: secrets, namespace: "{.metadata.namespace}", name: "{.metadata.name}"}
`), DryRun: true, Warn: func(err error) { warnings = append(warnings, err.Error()) }},
	}
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	var unserved []string
	for _, w := range warnings {
		if strings.Contains(w, "which this cluster does not serve") {
			unserved = append(unserved, w)
		}
	}
	if len(unserved) != 1 || !strings.Contains(unserved[0], "the policy names resources widget.example.com,") || !strings.Contains(unserved[0], "write widgets.example.com") {
		t.Errorf("warnings %q; want one naming widget.example.com, and only it", warnings)
	}
}
