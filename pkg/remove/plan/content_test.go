package plan

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// TestANamespaceTheScanDidNotIndexIsNotEmpty: a namespace the scan did not list as being
// deleted has no content in the index, which proves nothing: without a ContentReader,
// its kubernetes finalizer is refused.
func TestANamespaceTheScanDidNotIndexIsNotEmpty(t *testing.T) {
	ts := metav1.Now()
	nsRes := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}
	fin := finalizev1alpha1.Finalizer{Name: "kubernetes", Field: finalizev1alpha1.FieldSpecFinalizers, System: true}
	late := &kube.Object{Resource: nsRes, Meta: metav1.ObjectMeta{Name: "late", UID: "uid-late", DeletionTimestamp: &ts}, Finalizers: []finalizev1alpha1.Finalizer{fin}}
	listed := &kube.Object{Resource: nsRes, Meta: metav1.ObjectMeta{Name: "listed", UID: "uid-listed", DeletionTimestamp: &ts}, Finalizers: []finalizev1alpha1.Finalizer{fin}}
	res := &scan.Result{Objects: []*kube.Object{listed}, Index: &scan.Index{Content: map[string]*scan.NamespaceContent{}}}
	opts := Options{ForceUnverified: true, Reason: "x", AllowSystem: true}
	p := (&Planner{Result: res}).Plan(context.Background(), []Request{{Object: late, All: true}, {Object: listed, All: true}}, opts)
	if len(p.Refusals) != 1 || p.Refusals[0].Target.Name != "late" || p.Refusals[0].Kind != finalizev1alpha1.RefusalStranding ||
		!strings.Contains(p.Refusals[0].Message, "the scan did not index what namespace late holds") {
		t.Errorf("refusals %+v; want the namespace the scan did not index refused", p.Refusals)
	}
	if len(p.Actions) != 1 || p.Actions[0].Name != "listed" {
		t.Errorf("actions %+v; want the indexed, empty namespace", p.Actions)
	}
}

// TestAnEmptyPageWithAContinueTokenIsNotEmpty: a namespace's content is read on past an
// empty page that carries a continue token; a type that answers only such pages is
// unread, never empty.
func TestAnEmptyPageWithAContinueTokenIsNotEmpty(t *testing.T) {
	kc := kubefake.NewClientset()
	disc := kc.Discovery().(*fakediscovery.FakeDiscovery)
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"list"}},
	}}}
	for _, tt := range []struct {
		name  string
		pages int // empty pages with a continue token before the one with an object; -1: never one
		want  string
	}{
		{"an object after two empty pages", 2, "the namespace still holds objects"},
		{"empty pages without end", -1, "could not list configmaps"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = metav1.AddMetaToScheme(scheme)
			meta := metadatafake.NewSimpleMetadataClient(scheme)
			served := 0
			meta.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
				served++
				list := &metav1.List{}
				if tt.pages >= 0 && served > tt.pages {
					list.Items = []runtime.RawExtension{{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}}}}
					return true, list, nil
				}
				list.Continue = fmt.Sprintf("token-%d", served)
				return true, list, nil
			})
			got := (&ContentReader{Discovery: disc, Metadata: meta}).Holds(context.Background(), "ns")
			if !strings.Contains(got, tt.want) {
				t.Errorf("Holds: %q; want %q", got, tt.want)
			}
		})
	}
}
