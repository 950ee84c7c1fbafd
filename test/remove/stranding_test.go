package remove

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/pipeline"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// TestANamespaceTheScanDidNotIndexIsNeverTakenForEmpty: `remove` scans with the index,
// then reads afresh a target the scan did not find stuck. A namespace deleted after the
// scan listed it is such a target: the index holds nothing about its content, which is
// not proof that it is empty. The planner refuses its kubernetes finalizer, or reads
// what it holds afresh and refuses while it holds anything.
func TestANamespaceTheScanDidNotIndexIsNeverTakenForEmpty(t *testing.T) {
	cp.RequireNoControllerManager(t)
	ctx := t.Context()
	kc := cp.Kube(t)
	full, empty := cp.Namespace(t), cp.Namespace(t)
	if _, err := kc.CoreV1().ConfigMaps(full).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "left-behind"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	typed, err := client.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	clients := &client.Clients{Discovery: memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cp.Config)),
		Metadata: metadata.NewForConfigOrDie(cp.Config), Kube: typed, Dynamic: dynamic.NewForConfigOrDie(cp.Config)}
	res, err := pipeline.Scan(ctx, clients, scan.Options{Index: true})
	if err != nil {
		t.Fatal(err)
	}
	// Deleted after the scan listed them: the scan saw two live namespaces.
	requests := map[string]plan.Request{}
	for _, ns := range []string{full, empty} {
		if err := kc.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		obj, err := remover(t).Read(ctx, plan.Target{Ref: kube.Ref{Resource: namespaces, Name: ns}})
		if err != nil {
			t.Fatal(err)
		}
		requests[ns] = plan.Request{Object: obj, Finalizers: []string{"kubernetes"}}
	}
	opts := plan.Options{ForceUnverified: true, Reason: "test", AllowSystem: true}
	p := (&plan.Planner{Result: res}).Plan(ctx, []plan.Request{requests[full]}, opts)
	if len(p.Actions) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Kind != finalizev1alpha1.RefusalStranding {
		t.Fatalf("a namespace the scan did not index, holding a configmap: %d actions, refusals %+v; want a Stranding refusal", len(p.Actions), p.Refusals)
	}
	readAfresh(t, ctx, clients, res, requests, full, empty, opts)
}

// readAfresh plans the kubernetes finalizer of two namespaces the scan did not index,
// reading their content afresh: the one that holds a configmap is refused, naming it;
// the empty one may go.
func readAfresh(t *testing.T, ctx context.Context, clients *client.Clients, res *scan.Result, requests map[string]plan.Request, full, empty string, opts plan.Options) {
	t.Helper()
	planner := &plan.Planner{Result: res, Content: &plan.ContentReader{Discovery: clients.Discovery, Metadata: clients.Metadata}}
	p := planner.Plan(ctx, []plan.Request{requests[full], requests[empty]}, opts)
	if len(p.Refusals) != 1 || p.Refusals[0].Target.Name != full || p.Refusals[0].Kind != finalizev1alpha1.RefusalStranding ||
		!strings.Contains(p.Refusals[0].Message, "configmaps/left-behind") {
		t.Errorf("read afresh, the namespace holding a configmap: refusals %+v; want one Stranding refusal naming configmaps/left-behind", p.Refusals)
	}
	if len(p.Actions) != 1 || p.Actions[0].Name != empty {
		t.Errorf("read afresh, the empty namespace: actions %+v; want its removal", p.Actions)
	}
}
