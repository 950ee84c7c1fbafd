package plan

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// DefaultPodGraceMargin is how long after its grace period ended a pod's deletion must
// still wait for its kubelet before it is overdue, and may be forced: the scan's.
const DefaultPodGraceMargin = scan.DefaultPodGraceMargin

// MinPodGraceMargin is the least margin a force deletion should wait after a pod's grace
// period: a kubelet that reports, slowed by a busy node, may still be stopping the pod's
// containers seconds after the grace period ended. Below it, remove warns.
const MinPodGraceMargin = 30 * time.Second

// PodVerifier tells whether the machine of the node a pod's deletion waits for is gone.
// pkg/policy implements it with the policy's rules that set waitsForNode.
type PodVerifier interface {
	// VerifyPod answers for one pod. A Verification without a Rule means no rule
	// applies: the force deletion is unverified.
	VerifyPod(ctx context.Context, req PodRequest) Verification
}

// PodRequest is one question to a PodVerifier, with the pod and its node as just read.
type PodRequest struct {
	// Object is the pod as the scan found it; Pod and Node are read afresh.
	Object *kube.Object
	Pod    *corev1.Pod
	// Node is nil when the Node object named by the pod's spec.nodeName does not exist
	// (the API server answered 404), or when the pod was never scheduled.
	Node *corev1.Node
}

// NodeReady returns the node's Ready condition, or nil when it has none.
func NodeReady(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady reports whether the node's Ready condition is True.
func IsReady(n *corev1.Node) bool {
	c := NodeReady(n)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Overdue says why a pod may not be force-deleted yet, or "": it must be being deleted,
// waiting for its kubelet, and its deletionTimestamp (the end of its grace period) at
// least margin in the past, by kube.PodDeletionAt, the rule the scan lists pods by.
func Overdue(pod *corev1.Pod, margin time.Duration, now time.Time) string {
	dt := pod.DeletionTimestamp
	switch kube.PodDeletionAt(&pod.ObjectMeta, now, margin) {
	case kube.PodNotDeleting:
		return "it is not being deleted: delete it first (kubectl delete), and its kubelet gets its grace period"
	case kube.PodKubeletDone:
		if pod.DeletionGracePeriodSeconds == nil {
			return "its deletion waits for no kubelet (it has no grace period, which the API server sets on every pod it deletes gracefully): only its finalizers hold it, and a force deletion changes nothing; their removal is what it waits for"
		}
		return "its deletion waits for no kubelet (its grace period is 0 already): only its finalizers hold it, and a force deletion changes nothing; their removal is what it waits for"
	case kube.PodInGrace, kube.PodWaiting:
		left := margin - now.Sub(dt.Time)
		return fmt.Sprintf("its grace period ends at %s, and a force deletion waits %s more after it (margin %s): its kubelet may still stop it",
			dt.UTC().Format(time.RFC3339), duration.HumanDuration(left), margin)
	}
	return ""
}

// MirrorPodAnnotation marks a mirror pod: the API server's copy of a static pod that a
// kubelet runs from a file on its node. Deleting it stops nothing: the kubelet creates it
// again while it runs the pod.
const MirrorPodAnnotation = corev1.MirrorPodAnnotationKey

// KubeletAliveWindow is how recently a kubelet must have shown a sign of life (renewed
// its node's Lease, or written its node's Ready condition) for it to count as running:
// twice the default node-monitor-grace-period of kube-controller-manager (50 s), the
// time after which the node lifecycle controller itself takes a silent kubelet for gone.
// A Lease whose leaseDurationSeconds is longer stretches it to twice that duration
// (AliveWindow).
const KubeletAliveWindow = 100 * time.Second

// defaultLeaseDuration is the kubelet's default nodeLeaseDurationSeconds: it renews its
// Lease every quarter of it (nodeLeaseRenewIntervalFraction 0.25), every 10 s.
const defaultLeaseDuration = 40 * time.Second

// Bounds of LeaseWatchFor.
const (
	minLeaseWatch = 2 * time.Second
	// MaxLeaseWatch bounds how long a force deletion watches its node's Lease: a Lease
	// that claims a renewal interval longer than that is judged by its last change
	// (AliveWindow stretches with its duration) more than by the watch.
	MaxLeaseWatch = time.Minute
)

// leaseDuration is the Lease's leaseDurationSeconds, or the kubelet's default.
func leaseDuration(lease *coordinationv1.Lease) time.Duration {
	if lease != nil && lease.Spec.LeaseDurationSeconds != nil && *lease.Spec.LeaseDurationSeconds > 0 {
		return time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	return defaultLeaseDuration
}

// AliveWindow is the window within which a sign of life of the kubelet that renews lease
// (nil when there is none) counts: KubeletAliveWindow, or twice the Lease's
// leaseDurationSeconds when that is longer.
func AliveWindow(lease *coordinationv1.Lease) time.Duration {
	return max(KubeletAliveWindow, 2*leaseDuration(lease))
}

// LeaseWatchFor is how long a force deletion watches the Lease of its pod's node before
// the DELETE, for a running kubelet's next renewal to show: one and a half of its
// renewal intervals (a quarter of leaseDurationSeconds, 40 s when the Lease does not say
// or does not exist, so 15 s; a kubelet renews every interval with a jitter of 4 % plus
// the time its write takes), between 2 s and MaxLeaseWatch.
func LeaseWatchFor(lease *coordinationv1.Lease) time.Duration {
	return min(max(leaseDuration(lease)/4*3/2, minLeaseWatch), MaxLeaseWatch)
}

// LastChange is when the API server last saw a write change obj, by its own clock: the
// latest time of its managedFields entries, which the API server stamps (to the second)
// on the entry of each manager whose fields a write changed. Every entry counts: a
// change by any writer is a change the API server saw, and it only ever keeps a pod
// (for one window). Zero when obj has none.
func LastChange(obj metav1.Object) time.Time {
	var last time.Time
	for _, f := range obj.GetManagedFields() {
		if f.Time != nil && f.Time.After(last) {
			last = f.Time.Time
		}
	}
	return last
}

// ago says how long before now t was, or how far after it, for a message.
func ago(now, t time.Time) string {
	if d := now.Sub(t); d < 0 {
		return duration.HumanDuration(-d) + " ahead of the API server's clock"
	}
	return duration.HumanDuration(now.Sub(t)) + " ago"
}

// KubeletSigns says why the kubelet of node name may still run pods, or "" when nothing
// shows it, from its Lease kube-node-lease/NAME (nil when there is none) and its Node
// (nil when there is none), against now, the API server's clock. Any of these is a sign
// of life within AliveWindow:
//   - the API server saw the Lease change (LastChange, by its own clock): a running
//     kubelet renews it every 10 s, whether its Node is Ready, NotReady or deleted, and
//     however wrong the clock of its machine;
//   - the Lease's renewTime, the kubelet's own clock's, is recent (or in the future): a
//     renewTime that looks old never proves a kubelet dead, since its clock may be
//     behind;
//   - the Node's Ready condition is True or False with a recent heartbeat: only a
//     kubelet writes those (the node lifecycle controller writes Unknown).
//
// A Node with no Ready condition was not registered by a kubelet (a kubelet writes its
// conditions into the Node it creates, and runs its Lease controller from its start):
// only its Lease can show one running. It is the one rule of a kubelet's liveness: the
// plan and the write of a force deletion apply it, and the doctor does too.
func KubeletSigns(name string, lease *coordinationv1.Lease, node *corev1.Node, now time.Time) string {
	window := AliveWindow(lease)
	ref := corev1.NamespaceNodeLease + "/" + name
	if lease != nil {
		if changed := LastChange(lease); !changed.IsZero() && now.Sub(changed) < window {
			return fmt.Sprintf("the API server saw the Lease %s that the kubelet of node %s renews change at %s, %s by the API server's clock (within %s): its kubelet runs, and may still run the pod's containers",
				ref, name, changed.UTC().Format(time.RFC3339), ago(now, changed), window)
		}
		renewed := lease.CreationTimestamp.Time
		switch {
		case lease.Spec.RenewTime != nil:
			renewed = lease.Spec.RenewTime.Time
		case lease.Spec.AcquireTime != nil:
			renewed = lease.Spec.AcquireTime.Time
		}
		if now.Sub(renewed) < window {
			return fmt.Sprintf("the kubelet of node %s renewed its Lease %s at %s, %s (within %s): it runs, and may still run the pod's containers",
				name, ref, renewed.UTC().Format(time.RFC3339), ago(now, renewed), window)
		}
	}
	if node == nil {
		return ""
	}
	c := NodeReady(node)
	switch {
	case c == nil:
	case c.Status == corev1.ConditionFalse && now.Sub(c.LastHeartbeatTime.Time) < window:
		return fmt.Sprintf("node %s is Ready=False (%s) with a heartbeat at %s, %s: only its kubelet writes False, so it runs (its runtime may be down, or it is shutting down)",
			name, c.Reason, c.LastHeartbeatTime.UTC().Format(time.RFC3339), ago(now, c.LastHeartbeatTime.Time))
	case c.Status == corev1.ConditionTrue && now.Sub(c.LastHeartbeatTime.Time) < window:
		return fmt.Sprintf("node %s is Ready with a heartbeat at %s, %s: its kubelet reports", name, c.LastHeartbeatTime.UTC().Format(time.RFC3339), ago(now, c.LastHeartbeatTime.Time))
	}
	return ""
}

// KubeletAlive reads the Lease kube-node-lease/NAME of node name and applies
// KubeletSigns: why the kubelet may still run pods, or "". node is the Node as just
// read, nil when it does not exist; now is the API server's clock. An error means the
// Lease could not be read: the caller refuses.
func KubeletAlive(ctx context.Context, kc client.Interface, name string, node *corev1.Node, now time.Time) (string, error) {
	lease, err := kc.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	switch {
	case kube.IsNotFoundOf(err, leases, name):
		lease = nil
	case err != nil:
		return "", fmt.Errorf("reading the Lease %s/%s its kubelet renews: %w", corev1.NamespaceNodeLease, name, NotTheAPIServers(err, "Lease "+corev1.NamespaceNodeLease+"/"+name))
	}
	return KubeletSigns(name, lease, node, now), nil
}

// The types whose absence a force deletion reads: a Node's absence verifies one (a rule
// with waitsForNode and no provider), a Lease's shows no sign of its kubelet.
var (
	Nodes  = schema.GroupResource{Resource: "nodes"}
	leases = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
)

// NotTheAPIServers says, of an error reading what, that a 404 among it is not the API
// server's NotFound of it (kube.IsNotFoundOf): a proxy in front of the API server that
// answers "404 page not found" for a path it does not pass on proves no absence.
func NotTheAPIServers(err error, what string) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("a 404 that is not the API server's NotFound of %s, which proves no absence: %w", what, err)
	}
	return err
}
