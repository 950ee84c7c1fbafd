package plan

import (
	"context"
	"fmt"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// Finalize removes a namespace's own finalizer from its spec.finalizers through the
// /finalize subresource, with the resourceVersion just read as its precondition
// (pkg/remove/write, finalize.go). It is refused while the namespace may still hold
// objects (Stranding), unless the options allow it.
var Finalize Kind = finalize{}

type finalize struct{}

func (finalize) Action() finalizev1alpha1.RemovalAction { return "" }

func (finalize) Describe(t *Target) string {
	return fmt.Sprintf("finalizer %s of %s", t.Finalizer, t.Ref)
}

func (finalize) Permissions(*Target) []Permission {
	return []Permission{{Verb: "update", Resource: "namespaces", Subresource: "finalize"}}
}

func (finalize) Reason(verified bool) string { return finalizerReason(verified) }

func (finalize) Event(t *Target) (string, string) { return finalizerEvent(t) }

// refuse keeps the kubernetes finalizer of a namespace that may still hold objects: they
// would stay in etcd.
func (finalize) refuse(ctx context.Context, p *Planner, a *Action, o *kube.Object, opts Options) *Refusal {
	if a.Finalizer.Name != "kubernetes" || opts.AllowStranding {
		return nil
	}
	if why := p.stranding(ctx, o); why != "" {
		return refusal(finalizev1alpha1.RefusalStranding,
			why+"; removing it now would strand those objects in etcd, where a namespace created later under the same name shows them again")
	}
	return nil
}
