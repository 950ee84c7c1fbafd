package write

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// finalize makes one attempt at the removal of a namespace's spec.finalizers entry
// through /finalize (the plan.Finalize kind), guarded by the resourceVersion it read.
func (r *Remover) finalize(ctx context.Context, t *plan.Target, dry DryRun, attempt int) (Effect, bool, error) {
	if err := decidedFor(t); err != nil {
		return Effect{}, false, err
	}
	ns, err := r.Kube.CoreV1().Namespaces().Get(ctx, t.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Effect{Result: ObjectGone, Deleted: true}, false, nil
	}
	if err != nil {
		return Effect{}, false, fmt.Errorf("reading namespace %s: %w", t.Name, err)
	}
	if ns.UID != t.UID {
		return Effect{}, false, fmt.Errorf("%s: %w (uid %s, expected %s): nothing was removed", t.String(), ErrUIDChanged, ns.UID, t.UID)
	}
	idx := slices.Index(ns.Spec.Finalizers, corev1.FinalizerName(t.Finalizer))
	if idx < 0 {
		return Effect{Result: AlreadyRemoved, Remaining: allFinalizers(&ns.ObjectMeta, ns)}, false, nil
	}
	if t.ResourceVersion != "" && ns.ResourceVersion != t.ResourceVersion {
		return Effect{}, true, errChangedSinceVerified
	}
	ns.Spec.Finalizers = slices.Delete(ns.Spec.Finalizers, idx, idx+1)
	if dry == DryRunClient {
		return Effect{Result: WouldRemove, Remaining: allFinalizers(&ns.ObjectMeta, ns)}, false, nil
	}
	if r.BeforeWrite != nil {
		r.BeforeWrite(attempt)
	}
	opts := metav1.UpdateOptions{FieldManager: FieldManager}
	if dry == DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	// ns carries the resourceVersion just read: the precondition of the update.
	after, err := r.Kube.CoreV1().Namespaces().Finalize(ctx, ns, opts)
	switch {
	case err == nil:
		if dry == DryRunServer {
			return Effect{Result: WouldRemove, Remaining: allFinalizers(&after.ObjectMeta, after)}, false, nil
		}
		return Effect{Result: Removed}, false, nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return Effect{}, true, err
	case unanswered(err):
		return Effect{}, true, &unansweredError{err}
	}
	return Effect{}, false, writeError(*t, err)
}

func allFinalizers(meta *metav1.ObjectMeta, ns *corev1.Namespace) []string {
	out := slices.Clone(meta.Finalizers)
	if ns != nil {
		for _, f := range ns.Spec.Finalizers {
			out = append(out, string(f))
		}
	}
	return out
}
