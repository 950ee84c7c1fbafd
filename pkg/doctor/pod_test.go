package doctor

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

var podsRes = coreResource("pods", "Pod", true)

// waitingPod is a pod of namespace ns whose grace period ended 10 minutes ago and whose
// deletion waits for the kubelet of node worker-3, as the scan lists it, and the pod as
// read.
func waitingPod(ns, name string, finalizers ...string) (*kube.Object, *corev1.Pod) {
	const node = "worker-3"
	ts := metav1.NewTime(now.Add(-10 * time.Minute))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), DeletionTimestamp: &ts,
			DeletionGracePeriodSeconds: ptr.To[int64](30), Finalizers: finalizers},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Hour))}}},
		}},
	}
	o := kube.NewObject(podsRes, &p.ObjectMeta, nil)
	o.WaitsFor = &finalizev1alpha1.WaitsFor{Node: node}
	return o, p
}

func node(name string, ready corev1.ConditionStatus, since, heartbeat time.Duration) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: ready, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.",
			LastTransitionTime: metav1.NewTime(now.Add(-since)), LastHeartbeatTime: metav1.NewTime(now.Add(-heartbeat)),
		}}},
	}
}

func lease(name string, renewed time.Duration) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNamespace, Name: name},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: now.Add(-renewed)}}}
}

func TestAPodOfAMissingNodeWaitsForAKubeletThatWillNeverAnswer(t *testing.T) {
	o, p := waitingPod("a", "web-0")
	o.Meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", Controller: ptr.To(true)}}
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}}}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "data-web-0"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}
	rep := diagnose(t, result(o), p, claim)
	wantCause(t, rep, o, finalizev1alpha1.ReasonNodeGone,
		"Node worker-3 does not exist", "grace period ended 10m ago",
		"kubectl delete pod -n a web-0 --grace-period=0 --force",
		"StatefulSet web starts web-0 again on another node", "claim data-web-0 is ReadWriteOnce", "two writers")
	wantRoot(t, rep, finalizev1alpha1.ReasonNodeGone, finalizev1alpha1.Subject{Kind: "Node", Name: "worker-3"}, 1)
}

func TestAPodOfANotReadyNodeSaysSinceWhenAndTheLastHeartbeat(t *testing.T) {
	o, p := waitingPod("a", "web-0")
	other, q := waitingPod("b", "api-0", "example.com/x")
	rep := diagnose(t, result(o, other), p, q, node("worker-3", corev1.ConditionUnknown, 5*time.Minute, 6*time.Minute), lease("worker-3", 5*time.Minute+30*time.Second))
	wantCause(t, rep, o, finalizev1alpha1.ReasonNodeNotReady,
		"node worker-3 is NotReady (Ready=Unknown since 5m ago, NodeStatusUnknown: Kubelet stopped posting node status",
		"last reported 5m30s ago (Lease kube-node-lease/worker-3)",
		"kubectl taint nodes worker-3 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute",
		"kubectl delete pod -n a web-0 --grace-period=0 --force")
	if c := rep.Cause(o); strings.Contains(c.NextStep, "two writers") {
		t.Errorf("a pod of no StatefulSet without claims needs no caution: %s", c.NextStep)
	}
	// One node, one root cause, for both pods; the finalizer of the second is its own.
	wantRoot(t, rep, finalizev1alpha1.ReasonNodeNotReady, finalizev1alpha1.Subject{Kind: "Node", Name: "worker-3"}, 2)
	wantCause(t, rep, other, finalizev1alpha1.ReasonNodeNotReady)

	// Ready=True, but nothing heard for longer than the node lifecycle controller's grace:
	// it is not running, and the node is not ready.
	rep = diagnose(t, result(o), p, node("worker-3", corev1.ConditionTrue, time.Hour, 3*time.Minute), lease("worker-3", 3*time.Minute))
	wantCause(t, rep, o, finalizev1alpha1.ReasonNodeNotReady, "node worker-3 is Ready=True since 60m ago, but stale", "last reported 3m ago (node status)")
}

// TestAKubeletWhoseClockIsBehindStillReports: a Ready node whose kubelet's machine is 10
// minutes behind the API server: its heartbeat and its Lease's renewTime look 10 minutes
// old, but the API server saw the Lease change 5 s ago. The kubelet reports (the rule a
// force deletion is refused by): the pod waits for it to finish, not for a stale node,
// and no force deletion is offered.
func TestAKubeletWhoseClockIsBehindStillReports(t *testing.T) {
	o, p := waitingPod("a", "web-0")
	o.WaitsFor.Node, p.Spec.NodeName = "worker-4", "worker-4"
	l := lease("worker-4", 10*time.Minute)
	l.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Time: ptr.To(metav1.NewTime(now.Add(-5 * time.Second)))}}
	rep := diagnose(t, result(o), p, node("worker-4", corev1.ConditionTrue, time.Hour, 10*time.Minute), l)
	wantCause(t, rep, o, finalizev1alpha1.ReasonKubeletNotFinishing,
		"node worker-4 is Ready and its kubelet reported 5s ago")
	if c := rep.Cause(o); strings.Contains(c.NextStep, "--force") {
		t.Errorf("a force deletion offered for a pod whose kubelet reports: %s", c.NextStep)
	}
}

func TestAReadyNodesKubeletThatDoesNotFinishNamesContainersAndVolumes(t *testing.T) {
	o, p := waitingPod("a", "web-0")
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "vol-1"}}}}
	n := node("worker-3", corev1.ConditionTrue, time.Hour, 5*time.Second)
	n.Status.VolumesInUse = []corev1.UniqueVolumeName{"kubernetes.io/csi/csi.example.com^vol-1"}
	rep := diagnose(t, result(o), p, claim, pv, n, lease("worker-3", 2*time.Second))
	wantCause(t, rep, o, finalizev1alpha1.ReasonKubeletNotFinishing,
		"node worker-3 is Ready and its kubelet reported 2s ago",
		"containers not stopped: app running since 60m ago",
		"claim data (volume pv-1) in use on the node (status.volumesInUse)",
		"journalctl -u kubelet | grep uid-web-0",
		"the node plugin of CSI driver csi.example.com on node worker-3")
	wantRoot(t, rep, finalizev1alpha1.ReasonKubeletNotFinishing, finalizev1alpha1.Subject{Kind: "Node", Name: "worker-3"}, 1)
}

func TestANamespaceHeldByPodsNamesThemAndTheirNodes(t *testing.T) {
	ts := metav1.NewTime(now.Add(-time.Hour))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "uid-a", DeletionTimestamp: &ts},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
		Status: corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue,
			Message: "Some resources are remaining: pods. has 1 resource instances"}}}}
	nsObj := kube.NewObject(namespaces, &ns.ObjectMeta, ns)
	o, p := waitingPod("a", "web-0")
	rep := diagnose(t, result(nsObj, o), p)
	wantCause(t, rep, nsObj, finalizev1alpha1.ReasonNamespaceContentRemaining, "pods. has 1 resource instances")
	c := rep.Cause(nsObj)
	if len(c.Blockers) != 1 || c.Blockers[0].Target.Name != "web-0" || c.Blockers[0].Message != "waits for the kubelet of node worker-3" {
		t.Errorf("blockers %+v, want pod web-0 that waits for the kubelet of node worker-3", c.Blockers)
	}
	// The pod's cause is the namespace's root cause.
	wantRoot(t, rep, finalizev1alpha1.ReasonNodeGone, finalizev1alpha1.Subject{Kind: "Node", Name: "worker-3"}, 2)

	// Without the controller's conditions, the pods are named as what remains.
	ns.Status.Conditions = []corev1.NamespaceCondition{{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionFalse}}
	nsObj = kube.NewObject(namespaces, &ns.ObjectMeta, ns)
	rep = diagnose(t, result(nsObj, o), p)
	wantCause(t, rep, nsObj, finalizev1alpha1.ReasonNamespaceContentRemaining, "1 pod being deleted waits for its kubelet")
}

func TestThePodTheScanReadIsNotReadAgain(t *testing.T) {
	o, p := waitingPod("a", "web-0")
	res := result(o)
	res.Pods = map[types.UID]*corev1.Pod{p.UID: p}
	// The API server no longer has it: the doctor does not ask.
	rep := diagnose(t, res)
	wantCause(t, rep, o, finalizev1alpha1.ReasonNodeGone, "Node worker-3 does not exist")
}
