package write

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// ForceDelete deletes the pod t names with gracePeriodSeconds 0, preconditioned on the
// uid and resourceVersion it was planned from, after reading the pod and its node once
// more and watching its node's Lease: nothing is deleted when the pod changed, is no
// longer overdue, its node exists and is Ready (or, for a deletion verified by the Node
// object's absence, exists at all), its kubelet shows a sign of life, or the API server
// shows its Lease change while it is watched (or the watch cannot be made).
// A pod that changed since it was planned is not decided again here: the error says so,
// and the next run plans it afresh. With DryRunClient it only reads; with DryRunServer
// the DELETE is sent with dryRun=All.
func (r *Remover) ForceDelete(ctx context.Context, t plan.Target, dry DryRun) (Effect, error) {
	out := Effect{Attempts: 1, Pinned: t.ResourceVersion}
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
		return out, fmt.Errorf("reading %s: %w", t.Ref, err)
	case pod.UID != t.UID:
		return out, fmt.Errorf("%s: %w (uid %s, expected %s): nothing was deleted", t.String(), ErrUIDChanged, pod.UID, t.UID)
	case pod.ResourceVersion != t.ResourceVersion:
		return out, fmt.Errorf("%s: %w (resourceVersion %s, planned at %s): nothing was deleted; run again to decide it afresh", t.String(), errChangedSincePlanned, pod.ResourceVersion, t.ResourceVersion)
	}
	margin := t.GraceMargin
	if margin <= 0 {
		margin = plan.DefaultPodGraceMargin
	}
	now := r.now(ctx)
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
	return out, writeError(t, err)
}

// forceDelete is ForceDelete as the write of the plan.ForceDelete kind: a pod that
// changed is never decided again here, but planned afresh by the next run.
func (r *Remover) forceDelete(ctx context.Context, t *plan.Target, dry DryRun, _ int) (Effect, bool, error) {
	out, err := r.ForceDelete(ctx, *t, dry)
	return out, false, err
}

// checkNode reads the pod's node and its Lease once more, and says why the pod must not
// be deleted now: the node is Ready, its kubelet shows signs of life, or the Node is not
// the one the deletion was decided about (one of that name registered since it was
// planned absent, or its uid or providerID changed: a machine nobody verified).
func (r *Remover) checkNode(ctx context.Context, t plan.Target, now time.Time) error {
	node, err := r.Kube.CoreV1().Nodes().Get(ctx, t.Node, metav1.GetOptions{})
	switch {
	case kube.IsNotFoundOf(err, plan.Nodes, t.Node):
		node = nil
	case err != nil:
		return fmt.Errorf("%s: not deleted: reading node %s: %w", t.String(), t.Node, plan.NotTheAPIServers(err, "node "+t.Node))
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
	// Last, what the API server sees: a running kubelet renews its Lease while it is
	// watched, whatever its clock says. A watch that could not be made or ended early
	// proves nothing: it refuses too.
	leases := r.leases
	if leases == nil {
		leases = &leaseWatches{}
	}
	w := leases.start(ctx, r.Kube, t.Node, r.LeaseWatch)
	select {
	case <-w.done:
	case <-ctx.Done():
		return fmt.Errorf("%s: not deleted: watching the Lease %s/%s of its node: %w", t.String(), corev1.NamespaceNodeLease, t.Node, ctx.Err())
	}
	switch {
	case w.err != nil:
		return fmt.Errorf("%s: not deleted: %w", t.String(), w.err)
	case w.changed != "":
		return fmt.Errorf("%s: not deleted: %s", t.String(), w.changed)
	}
	return nil
}

// now is the API server's time.
func (r *Remover) now(ctx context.Context) time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return plan.NewServerClock(ctx, r.Kube).Now()
}

// leaseWatches are the watches of node Leases of one execution: one per node, which the
// force deletions of its pods share, all started at once (startLeaseWatches) so that the
// pods of several nodes wait for one watch, not one after another.
type leaseWatches struct {
	mu    sync.Mutex
	nodes map[string]*leaseWatch
}

// leaseWatch is the watch of one node's Lease: done is closed when it ended.
type leaseWatch struct {
	done chan struct{}
	// changed says what change of the Lease the API server showed, "" when none.
	changed string
	// err says why the watch could not be made or ended early.
	err error
}

// startLeaseWatches starts watching the Lease of the node of each force deletion among
// actions, once per node, and returns the watches for a Remover of these actions, and
// the function that stops those still running.
func (r *Remover) startLeaseWatches(ctx context.Context, actions []plan.Action) (*leaseWatches, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ws := &leaseWatches{}
	for i := range actions {
		if a := &actions[i]; a.WriteKind() == plan.ForceDelete && a.Node != "" {
			ws.start(ctx, r.Kube, a.Node, r.LeaseWatch)
		}
	}
	return ws, cancel
}

// start starts the watch of node's Lease through kc unless one was started already, and
// returns it. d, if set, is how long it watches; otherwise plan.LeaseWatchFor the Lease.
func (ws *leaseWatches) start(ctx context.Context, kc client.Interface, node string, d time.Duration) *leaseWatch {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w, ok := ws.nodes[node]; ok {
		return w
	}
	if ws.nodes == nil {
		ws.nodes = map[string]*leaseWatch{}
	}
	w := &leaseWatch{done: make(chan struct{})}
	ws.nodes[node] = w
	go func() {
		defer close(w.done)
		w.changed, w.err = watchLease(ctx, kc, node, d)
	}()
	return w
}

// watchLease reads the Lease kube-node-lease/NODE (a list by its name, which answers
// whether it exists or not, with the resourceVersion to watch from), then watches it
// from that resourceVersion for d (plan.LeaseWatchFor the Lease when d is 0): long enough
// for a running kubelet to renew it. It says what change the API server showed, "" when
// none; the error says why the watch could not be made or ended early (forbidden, a
// timeout, an expired resourceVersion).
func watchLease(ctx context.Context, kc client.Interface, node string, d time.Duration) (string, error) {
	ref := corev1.NamespaceNodeLease + "/" + node
	leases := kc.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	// A list by metadata.name is a read of one key (the API server turns it into one):
	// it needs no pages.
	selector := fields.OneTermEqualSelector("metadata.name", node).String()
	list, err := leases.List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return "", fmt.Errorf("reading the Lease %s to watch it: %w", ref, err)
	}
	var lease *coordinationv1.Lease
	for i := range list.Items {
		if list.Items[i].Name == node {
			lease = &list.Items[i]
		}
	}
	if d <= 0 {
		d = plan.LeaseWatchFor(lease)
	}
	// The API server ends a watch at its timeout: asked for longer than d, so that a watch
	// that ends before d ended early.
	timeout := int64((d + 30*time.Second) / time.Second)
	wctx, cancel := context.WithTimeout(ctx, d+time.Minute)
	defer cancel()
	w, err := leases.Watch(wctx, metav1.ListOptions{FieldSelector: selector, ResourceVersion: list.ResourceVersion, TimeoutSeconds: &timeout})
	if err != nil {
		return "", fmt.Errorf("watching the Lease %s from resourceVersion %s: %w", ref, list.ResourceVersion, err)
	}
	defer w.Stop()
	started := time.Now()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return "", nil
		case <-ctx.Done():
			return "", fmt.Errorf("watching the Lease %s: %w", ref, ctx.Err())
		case ev, ok := <-w.ResultChan():
			switch {
			case !ok:
				return "", fmt.Errorf("watching the Lease %s: the API server ended the watch after %s of %s", ref, duration.HumanDuration(time.Since(started)), d)
			case ev.Type == watch.Error:
				return "", fmt.Errorf("watching the Lease %s: %w", ref, apierrors.FromObject(ev.Object))
			case ev.Type == watch.Bookmark:
				continue
			}
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok || l.Name != node || lease != nil && l.ResourceVersion == lease.ResourceVersion {
				continue // not the Lease, or the version already read
			}
			after := duration.HumanDuration(time.Since(started))
			if ev.Type == watch.Deleted {
				return fmt.Sprintf("the API server showed its Lease %s deleted while it was watched before the DELETE (%s after the watch began): whether the kubelet of node %s runs is decided afresh by the next run",
					ref, after, node), nil
			}
			what := "changed"
			if ev.Type == watch.Added {
				what = "created"
			}
			renewed := "no renewTime"
			if l.Spec.RenewTime != nil {
				renewed = "renewTime " + l.Spec.RenewTime.UTC().Format(time.RFC3339)
			}
			return fmt.Sprintf("the API server showed its Lease %s change while it was watched before the DELETE (%s %s after the watch began: resourceVersion %s, %s): the kubelet of node %s runs, and may still run the pod's containers",
				ref, what, after, l.ResourceVersion, renewed, node), nil
		}
	}
}

// errChangedSincePlanned means the pod is not at the resourceVersion its force deletion
// was planned from.
var errChangedSincePlanned = fmt.Errorf("the pod changed since its force deletion was planned")
