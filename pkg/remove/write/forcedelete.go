package write

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// Event reasons of force deletions.
const (
	// ReasonPodForceDeleted is the reason of an Event for the force deletion of a pod that
	// a rule verified: the machine of its node is gone.
	ReasonPodForceDeleted = "PodForceDeleted"
	// ReasonPodForceDeletedUnverified is the reason of an Event for a force deletion a
	// person forced without verification (--force-unverified --reason).
	ReasonPodForceDeletedUnverified = "PodForceDeletedUnverified"
)

// ForceDelete deletes the pod t names with gracePeriodSeconds 0, preconditioned on the
// uid and resourceVersion it was planned from, after reading the pod and its node once
// more: nothing is deleted when the pod changed, is no longer overdue, or its node exists
// and is Ready (or, for a deletion verified by the Node object's absence, exists at all).
// A pod that changed since it was planned is not decided again here: the error says so,
// and the next run plans it afresh. With DryRunClient it only reads; with DryRunServer
// the DELETE is sent with dryRun=All.
func (r *Remover) ForceDelete(ctx context.Context, t plan.Target, dry DryRun) (Outcome, error) {
	out := Outcome{Attempts: 1, Pinned: t.ResourceVersion}
	if t.UID == "" || t.ResourceVersion == "" {
		return out, fmt.Errorf("%s: refusing a force deletion without the uid and resourceVersion of the pod it was decided for", t.String())
	}
	pods := r.Kube.CoreV1().Pods(t.Namespace)
	pod, err := pods.Get(ctx, t.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		out.Result, out.Deleted, out.Observed = ObjectGone, true, true
		return out, nil
	case err != nil:
		return out, fmt.Errorf("reading %s: %w", t.Ref(), err)
	case pod.UID != t.UID:
		return out, fmt.Errorf("%s: %w (uid %s, expected %s): nothing was deleted", t.String(), ErrUIDChanged, pod.UID, t.UID)
	case pod.ResourceVersion != t.ResourceVersion:
		return out, fmt.Errorf("%s: %w (resourceVersion %s, planned at %s): nothing was deleted; run again to decide it afresh", t.String(), errChangedSincePlanned, pod.ResourceVersion, t.ResourceVersion)
	}
	margin := t.GraceMargin
	if margin <= 0 {
		margin = plan.DefaultPodGraceMargin
	}
	now := plan.ServerNow(ctx, r.Kube)
	if why := plan.Overdue(pod, margin, now); why != "" {
		return out, fmt.Errorf("%s: not deleted: %s", t.String(), why)
	}
	if pod.Spec.NodeName != t.Node {
		return out, fmt.Errorf("%s: not deleted: the pod is bound to node %q, not %q as planned", t.String(), pod.Spec.NodeName, t.Node)
	}
	if t.Node != "" {
		if err := r.checkNode(ctx, t, now); err != nil {
			return out, err
		}
	}
	if dry == DryRunClient {
		out.Result = WouldRemove
		return out, nil
	}
	if r.BeforeWrite != nil {
		r.BeforeWrite(1)
	}
	opts := metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &t.UID, ResourceVersion: &t.ResourceVersion},
	}
	if dry == DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	err = pods.Delete(ctx, t.Name, opts)
	switch {
	case err == nil:
		if dry == DryRunServer {
			out.Result = WouldRemove
			return out, nil
		}
		out.Result = Removed
		return out, nil
	case apierrors.IsNotFound(err):
		out.Result, out.Deleted, out.Observed = ObjectGone, true, true
		return out, nil
	case apierrors.IsConflict(err):
		return out, fmt.Errorf("%s: %w: the precondition on uid %s and resourceVersion %s failed, nothing was deleted; run again to decide it afresh: %w",
			t.String(), errChangedSincePlanned, t.UID, t.ResourceVersion, err)
	case unanswered(err):
		return out, fmt.Errorf("%s: the API server did not answer the DELETE (%w): whether the pod was deleted is unknown until it is read again, which a rerun does", t.String(), err)
	}
	return out, writeError(t, "delete", err)
}

// checkNode reads the pod's node and its Lease once more, and says why the pod must not
// be deleted now: the node is Ready, its kubelet shows signs of life, or the Node is not
// the one the deletion was decided about (one of that name registered since it was
// planned absent, or its uid or providerID changed: a machine nobody verified).
func (r *Remover) checkNode(ctx context.Context, t plan.Target, now time.Time) error {
	node, err := r.Kube.CoreV1().Nodes().Get(ctx, t.Node, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		node = nil
	case err != nil:
		return fmt.Errorf("%s: not deleted: reading node %s: %w", t.String(), t.Node, err)
	case plan.IsReady(node):
		return fmt.Errorf("%s: not deleted: node %s is Ready: its kubelet answers and may still run the pod's containers", t.String(), t.Node)
	case t.NodeGone:
		return fmt.Errorf("%s: not deleted: it was verified by the absence of node %s, and a Node of that name exists again (uid %s)", t.String(), t.Node, node.UID)
	case t.NodeAbsent:
		return fmt.Errorf("%s: not deleted: node %s did not exist when it was planned, and a Node of that name exists now (uid %s): a machine registered since; run again to decide it afresh", t.String(), t.Node, node.UID)
	case t.NodeUID != "" && node.UID != t.NodeUID:
		return fmt.Errorf("%s: not deleted: node %s is another Node than the one it was planned with (uid %s, planned %s): run again to decide it afresh", t.String(), t.Node, node.UID, t.NodeUID)
	case t.NodeUID != "" && node.Spec.ProviderID != t.NodeProviderID:
		return fmt.Errorf("%s: not deleted: node %s has providerID %q, not %q as planned: another machine; run again to decide it afresh", t.String(), t.Node, node.Spec.ProviderID, t.NodeProviderID)
	}
	alive, err := plan.KubeletAlive(ctx, r.Kube, t.Node, node, now)
	switch {
	case err != nil:
		return fmt.Errorf("%s: not deleted: %w", t.String(), err)
	case alive != "":
		return fmt.Errorf("%s: not deleted: %s", t.String(), alive)
	}
	return nil
}

// errChangedSincePlanned means the pod is not at the resourceVersion its force deletion
// was planned from.
var errChangedSincePlanned = fmt.Errorf("the pod changed since its force deletion was planned")
