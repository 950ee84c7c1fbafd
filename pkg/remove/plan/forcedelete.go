package plan

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
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

// ForceDelete deletes a pod whose deletion waits for the kubelet of a node whose machine
// is gone, with gracePeriodSeconds 0, preconditioned on the uid and resourceVersion it
// was planned from (pkg/remove/write, forcedelete.go). Its target names no finalizer. It
// is planned from the pod and its node read afresh (planForce, pod.go), not by the
// finalizer's verification.
var ForceDelete Kind = forceDelete{}

type forceDelete struct{}

func (forceDelete) Action() finalizev1alpha1.RemovalAction { return finalizev1alpha1.ActionForceDelete }

func (forceDelete) Describe(t *Target) string {
	return fmt.Sprintf("force deletion of %s", t.Ref)
}

// Permissions: the pod is read afresh and deleted; its node is read, and the node's
// Lease read, then listed by its name and watched from that list's resourceVersion
// before the DELETE.
func (forceDelete) Permissions(t *Target) []Permission {
	perms := []Permission{{Verb: "delete", Resource: "pods", Namespace: t.Namespace}, {Verb: "get", Resource: "pods", Namespace: t.Namespace}}
	if t.Node != "" {
		lease := Permission{Group: leases.Group, Resource: leases.Resource, Namespace: corev1.NamespaceNodeLease}
		get, list, watch := lease, lease, lease
		get.Verb, list.Verb, watch.Verb = "get", "list", "watch"
		perms = append(perms, Permission{Verb: "get", Resource: Nodes.Resource}, get, list, watch)
	}
	return perms
}

func (forceDelete) Reason(verified bool) string {
	if verified {
		return ReasonPodForceDeleted
	}
	return ReasonPodForceDeletedUnverified
}

func (forceDelete) Event(t *Target) (string, string) {
	node := "a node"
	if t.Node != "" {
		node = "node " + t.Node
	}
	return "ForceDeletePod", fmt.Sprintf("Force-deleted (gracePeriodSeconds 0) a pod whose deletion waited for the kubelet of %s", node)
}

// refuse: a force deletion is decided whole when it is planned (planForce).
func (forceDelete) refuse(context.Context, *Planner, *Action, *kube.Object, Options) *Refusal {
	return nil
}

// podRead is the pod and its node as read afresh for a force deletion.
type podRead struct {
	pod  *corev1.Pod
	node *corev1.Node
}

// readPod reads the pod and its node afresh. A refusal says why the pod cannot be
// force-deleted whatever verifies it; a read that failed is an Unread verification
// with it, so that a pass reports it Failed, not kept by a decision.
func readPod(ctx context.Context, kc client.Interface, o *kube.Object, margin time.Duration, now time.Time) (podRead, *Refusal, Verification) {
	unread := func(format string, args ...any) (podRead, *Refusal, Verification) {
		why := fmt.Sprintf(format, args...)
		return podRead{}, refusal(finalizev1alpha1.RefusalUnverified, why), Verification{Status: Unread, Detail: why}
	}
	refuse := func(kind finalizev1alpha1.RefusalKind, format string, args ...any) (podRead, *Refusal, Verification) {
		return podRead{}, refusal(kind, fmt.Sprintf(format, args...)), Verification{}
	}
	if kc == nil {
		return unread("the pod could not be read: no client")
	}
	pod, err := kc.CoreV1().Pods(o.Meta.Namespace).Get(ctx, o.Meta.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		ref := refusal(finalizev1alpha1.RefusalNotOverdue, "the pod is gone")
		ref.ObjectGone = true
		return podRead{}, ref, Verification{}
	case err != nil:
		return unread("reading the pod: %v", err)
	case pod.UID != o.Meta.UID:
		_, ref, v := refuse(finalizev1alpha1.RefusalNotOverdue, "the pod was replaced by a namesake (uid %s, not %s)", pod.UID, o.Meta.UID)
		ref.ObjectGone = true
		return podRead{}, ref, v
	}
	if pod.Annotations[MirrorPodAnnotation] != "" {
		return refuse(finalizev1alpha1.RefusalNotOverdue, "it is a mirror pod (annotation %s): the kubelet of node %s runs it from a file and creates it again; "+
			"deleting it stops nothing: remove its manifest from the node's static pod directory", MirrorPodAnnotation, pod.Spec.NodeName)
	}
	if why := Overdue(pod, margin, now); why != "" {
		return refuse(finalizev1alpha1.RefusalNotOverdue, "%s", why)
	}
	if pod.Spec.NodeName == "" {
		return podRead{pod: pod}, nil, Verification{}
	}
	node, err := kc.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	switch {
	case kube.IsNotFoundOf(err, Nodes, pod.Spec.NodeName):
		node = nil
	case err != nil:
		return unread("reading node %s: %v", pod.Spec.NodeName, NotTheAPIServers(err, "node "+pod.Spec.NodeName))
	case IsReady(node):
		c := NodeReady(node)
		return refuse(finalizev1alpha1.RefusalNodeReady,
			"node %s is Ready (since %s, last heartbeat %s): its kubelet answers and may still run the pod's containers; "+
				"a force deletion would let a replacement start while they run (two writers of one volume); see why its kubelet does not finish the pod (kubectl finalize doctor)",
			node.Name, c.LastTransitionTime.UTC().Format(time.RFC3339), c.LastHeartbeatTime.UTC().Format(time.RFC3339))
	}
	alive, err := KubeletAlive(ctx, kc, pod.Spec.NodeName, node, now)
	switch {
	case err != nil:
		return unread("%v", err)
	case alive != "":
		return refuse(finalizev1alpha1.RefusalKubeletAlive, "%s", alive)
	}
	return podRead{pod: pod, node: node}, nil, Verification{}
}

// planForce decides the force deletion of one pod.
func (p *Planner) planForce(ctx context.Context, o *kube.Object, opts Options) (*Action, *Refusal) {
	margin := opts.PodGraceMargin
	if margin <= 0 {
		margin = DefaultPodGraceMargin
	}
	now := p.now(ctx)
	node := ""
	refuse := func(r *Refusal, v Verification) (*Action, *Refusal) {
		r.Target, r.Verification, r.Node, r.Action = o.Ref().API(), v, node, ForceDelete.Action()
		if p.CauseOf != nil {
			if c := p.CauseOf(o); c != nil {
				r.Cause = c.Reason
			}
		}
		return nil, r
	}
	if !o.Resource.IsPods() {
		return refuse(refusal(finalizev1alpha1.RefusalNotOverdue, "only a pod is force-deleted; name the finalizers to remove (--finalizer)"), Verification{})
	}
	read, r, rv := readPod(ctx, p.Kube, o, margin, now)
	if r != nil {
		return refuse(r, rv)
	}
	pod, nodeObj := read.pod, read.node
	node = pod.Spec.NodeName
	var v Verification
	if pv, ok := p.Verifier.(PodVerifier); ok {
		v = pv.VerifyPod(ctx, PodRequest{Object: o, Pod: pod, Node: nodeObj})
	}
	a := &Action{
		Target: Target{Ref: kube.Ref{Resource: o.Resource, Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}, Kind: ForceDelete, ResourceVersion: pod.ResourceVersion,
			Node: node, NodeGone: node != "" && nodeObj == nil, GraceMargin: margin},
		Verification: v,
		Verified:     v.Gone(),
	}
	if nodeObj != nil {
		a.NodeUID, a.NodeProviderID = nodeObj.UID, nodeObj.Spec.ProviderID
	}
	if p.CauseOf != nil {
		a.Cause = p.CauseOf(o)
	}
	what := "the machine of node " + node + " is gone"
	if node == "" {
		what = "the pod may be deleted without its kubelet"
	}
	// Evidence against the deletion is not overridden by a person: a rule's provider that
	// said Present, or a Gone that cannot be trusted. --force-unverified covers only the
	// absence of evidence (no rule applies, or the provider could not tell).
	switch {
	case v.Rule == "" || a.Verified:
	case v.Distrusted():
		return refuse(refusal(finalizev1alpha1.RefusalMachinePresent, fmt.Sprintf("rule %s said %s, but it cannot be trusted: %s; nothing allows a force deletion against a rule's evidence: fix the rule or its provider", v.Rule, v.Verdict, v.Detail)), v)
	case v.Verdict == finalizev1alpha1.VerdictPresent:
		return refuse(refusal(finalizev1alpha1.RefusalMachinePresent, fmt.Sprintf("rule %s: Present: %s: the machine runs, and may still run the pod's containers; nothing allows a force deletion against a rule's evidence", v.Rule, v.Evidence)), v)
	}
	if a.Verified || (opts.ForceUnverified && opts.Reason != "") {
		if !a.Verified {
			a.Reason = opts.Reason
			// Forced, the node's absence is not what verified it; but a Node of that name
			// found at the write still refuses it (NodeAbsent), as does any other node.
			a.NodeGone = false
		}
		a.NodeAbsent = node != "" && nodeObj == nil
		return a, nil
	}
	var why string
	switch {
	case v.Rule == "":
		why = fmt.Sprintf("no policy rule verified that %s (a rule with waitsForNode: true, or --force-unverified --reason)", what)
	case v.Status == TooYoung:
		return refuse(refusal(finalizev1alpha1.RefusalTooYoung, fmt.Sprintf("rule %s does not verify it yet: %s", v.Rule, v.Evidence)), v)
	case v.Unread():
		why = fmt.Sprintf("rule %s could not verify it: %s", v.Rule, v.Detail)
	default:
		why = fmt.Sprintf("rule %s: %s: %s", v.Rule, v.Verdict, v.Evidence)
	}
	return refuse(refusal(finalizev1alpha1.RefusalUnverified, why), v)
}
