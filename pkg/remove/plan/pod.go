package plan

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// DefaultPodGraceMargin is how long after its grace period ended a pod's deletion must
// still wait for its kubelet before it is overdue, and may be forced: the scan's.
const DefaultPodGraceMargin = scan.DefaultPodGraceMargin

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
// and its deletionTimestamp (the end of its grace period) at least margin in the past.
func Overdue(pod *corev1.Pod, margin time.Duration, now time.Time) string {
	dt := pod.DeletionTimestamp
	switch {
	case dt == nil:
		return "it is not being deleted: delete it first (kubectl delete), and its kubelet gets its grace period"
	case pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0:
		return "its deletion waits for no kubelet (its grace period is 0 already): only its finalizers hold it; name them (--finalizer)"
	case now.Sub(dt.Time) < margin:
		left := margin - now.Sub(dt.Time)
		return fmt.Sprintf("its grace period ends at %s, and a force deletion waits %s more after it (margin %s): its kubelet may still stop it",
			dt.UTC().Format(time.RFC3339), duration.HumanDuration(left), margin)
	}
	return ""
}

// IsPods reports whether r is the core pods resource.
func IsPods(r kube.Resource) bool { return r.Group == "" && r.Resource == "pods" }

// readPod reads the pod and its node afresh. A refusal says why the pod cannot be
// force-deleted whatever verifies it.
func readPod(ctx context.Context, kc client.Interface, o *kube.Object, margin time.Duration, now time.Time) (*corev1.Pod, *corev1.Node, *Refusal) {
	notOverdue := func(format string, args ...any) *Refusal {
		return &Refusal{Kind: finalizev1alpha1.RefusalNotOverdue, Why: fmt.Sprintf(format, args...)}
	}
	if kc == nil {
		return nil, nil, notOverdue("the pod could not be read: no client")
	}
	pod, err := kc.CoreV1().Pods(o.Meta.Namespace).Get(ctx, o.Meta.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil, notOverdue("the pod is gone")
	case err != nil:
		return nil, nil, notOverdue("reading the pod: %v", err)
	case pod.UID != o.Meta.UID:
		return nil, nil, notOverdue("the pod was replaced by a namesake (uid %s, not %s)", pod.UID, o.Meta.UID)
	}
	if why := Overdue(pod, margin, now); why != "" {
		return nil, nil, notOverdue("%s", why)
	}
	if pod.Spec.NodeName == "" {
		return pod, nil, nil
	}
	node, err := kc.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return pod, nil, nil
	case err != nil:
		return nil, nil, notOverdue("reading node %s: %v", pod.Spec.NodeName, err)
	}
	if IsReady(node) {
		c := NodeReady(node)
		return nil, nil, &Refusal{Kind: finalizev1alpha1.RefusalNodeReady,
			Why: fmt.Sprintf("node %s is Ready (since %s, last heartbeat %s): its kubelet answers and may still run the pod's containers; "+
				"a force deletion would let a replacement start while they run (two writers of one volume); see why its kubelet does not finish the pod (kubectl finalize doctor)",
				node.Name, c.LastTransitionTime.UTC().Format(time.RFC3339), c.LastHeartbeatTime.UTC().Format(time.RFC3339))}
	}
	return pod, node, nil
}

// planForce decides the force deletion of one pod.
func (p *Planner) planForce(ctx context.Context, o *kube.Object, opts Options) (*Action, *Refusal) {
	margin := opts.PodGraceMargin
	if margin <= 0 {
		margin = DefaultPodGraceMargin
	}
	now := time.Now()
	if p.Now != nil {
		now = p.Now()
	}
	node := ""
	refuse := func(r *Refusal, v Verification) (*Action, *Refusal) {
		r.Target, r.Verification, r.Node, r.ForceDelete = o.Ref(), v, node, true
		if p.CauseOf != nil {
			if c := p.CauseOf(o); c != nil {
				r.Cause = c.Reason
			}
		}
		return nil, r
	}
	if !IsPods(o.Resource) {
		return refuse(&Refusal{Kind: finalizev1alpha1.RefusalNotOverdue, Why: "only a pod is force-deleted; name the finalizers to remove (--finalizer)"}, Verification{})
	}
	pod, nodeObj, r := readPod(ctx, p.Kube, o, margin, now)
	if r != nil {
		return refuse(r, Verification{})
	}
	node = pod.Spec.NodeName
	var v Verification
	if pv, ok := p.Verifier.(PodVerifier); ok {
		v = pv.VerifyPod(ctx, PodRequest{Object: o, Pod: pod, Node: nodeObj})
	}
	a := &Action{
		Target: Target{Resource: o.Resource, Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			ForceDelete: true, Node: node, NodeGone: node != "" && nodeObj == nil, GraceMargin: margin},
		Verification: v,
		Verified:     v.Gone(),
	}
	if p.CauseOf != nil {
		a.Cause = p.CauseOf(o)
	}
	if a.Verified || (opts.ForceUnverified && opts.Reason != "") {
		if !a.Verified {
			a.Reason = opts.Reason
			// Forced without a rule, the node's absence is not what the write checks: a
			// node that came back Ready is refused at the write all the same.
			a.NodeGone = false
		}
		return a, nil
	}
	what := "the machine of node " + node + " is gone"
	if node == "" {
		what = "the pod may be deleted without its kubelet"
	}
	var why string
	switch {
	case v.Rule == "":
		why = fmt.Sprintf("no policy rule verified that %s (a rule with waitsForNode: true, or --force-unverified --reason)", what)
	case v.Status == TooYoung:
		return refuse(&Refusal{Kind: finalizev1alpha1.RefusalTooYoung, Why: fmt.Sprintf("rule %s does not verify it yet: %s", v.Rule, v.Evidence)}, v)
	case v.Unread():
		why = fmt.Sprintf("rule %s could not verify it: %s", v.Rule, v.Detail)
	case v.Status == Distrusted:
		why = fmt.Sprintf("rule %s cannot be trusted: %s", v.Rule, v.Detail)
	default:
		why = fmt.Sprintf("rule %s: %s: %s", v.Rule, v.Verdict, v.Evidence)
	}
	return refuse(&Refusal{Kind: finalizev1alpha1.RefusalUnverified, Why: why}, v)
}
