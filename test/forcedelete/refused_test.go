package forcedelete

import (
	"context"
	"fmt"
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
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
)

// silentNode creates a Node whose Ready condition is status with its last heartbeat at
// heartbeat, as the node lifecycle controller (Unknown) or a kubelet (False) leaves it.
func silentNode(t *testing.T, name, providerID string, status corev1.ConditionStatus, heartbeat time.Time) *corev1.Node {
	t.Helper()
	kc := cp.Kube(t)
	n, err := kc.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Kube(t).CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	hb := metav1.NewTime(heartbeat)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "NodeStatusUnknown", LastHeartbeatTime: hb, LastTransitionTime: hb}}
	if n, err = kc.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return n
}

// kubeletLease writes the Lease a kubelet renews in kube-node-lease, renewed at renewed.
func kubeletLease(t *testing.T, name string, renewed time.Time) {
	t.Helper()
	leases := cp.Kube(t).CoordinationV1().Leases(corev1.NamespaceNodeLease)
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(renewed))}}
	cur, err := leases.Get(t.Context(), name, metav1.GetOptions{})
	if err == nil {
		cur.Spec = l.Spec
		_, err = leases.Update(t.Context(), cur, metav1.UpdateOptions{})
	} else {
		_, err = leases.Create(t.Context(), l, metav1.CreateOptions{})
		t.Cleanup(func() {
			_ = cp.Kube(t).CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestAProviderThatSaysPresentCannotBeForced: a rule's provider answers that the machine
// of a NotReady node runs; --force-unverified --reason does not override it, and the
// refusal names no flag.
func TestAProviderThatSaysPresentCannotBeForced(t *testing.T) {
	c := fakecloud.New(t)
	ns := cp.Namespace(t)
	old := time.Now().Add(-time.Hour)
	node(t, "fd-live-"+ns, "live-"+ns, true)
	silentNode(t, "fd-running-"+ns, "running-"+ns, corev1.ConditionUnknown, old)
	stuckPod(t, ns, "db-0", "fd-running-"+ns, yes)
	policy := nodePolicy(t, ns, fmt.Sprintf(`  verify:
    http:
      url: "%s/instances/{identity.providerID}"
      tls: {caFile: %q}
      timeout: 3s
`, c.URL, c.CAFile))
	for name, flags := range map[string][]string{
		"policy":        {"--policy", policy},
		"policy forced": {"--policy", policy, "--force-unverified", "--reason", "I looked (INC-8)"},
	} {
		r := cli.Run(t, cp.AdminKubeconfig, append([]string{"remove", "pod/db-0", "-n", ns, "--yes", "--pod-grace-margin", margin}, flags...)...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "force deletion: rule gone-nodes: Present:") || strings.Contains(r.Stderr, "to remove it anyway") {
			t.Errorf("%s: code %d, want 1 saying Present, naming no flag; stderr:\n%s", name, r.Code, r.Stderr)
		}
	}
	if !podExists(t, ns, "db-0") {
		t.Error("the pod of a running machine was deleted")
	}
}

// TestAKubeletThatRenewsItsLeaseStopsAForceDeletion: the Node object deleted by hand
// while its kubelet runs: the kubelet does not register it again until it restarts, but
// renews its Lease. While the Lease is fresh, neither a rule (the Node's absence) nor
// --force-unverified deletes the pod; once the Lease is older than the window, by its
// renewTime and by the time the API server last saw it change, and nothing changes it
// while the write watches it, the rule does, within podgc's quarantine.
func TestAKubeletThatRenewsItsLeaseStopsAForceDeletion(t *testing.T) {
	ns := cp.Namespace(t)
	created := time.Now()
	name := "fd-unregistered-" + ns
	kubeletLease(t, name, time.Now())
	stuckPod(t, ns, "web-0", name, yes)
	policy := nodePolicy(t, ns, "")
	for what, flags := range map[string][]string{
		"policy": {"--policy", policy},
		"forced": {"--force-unverified", "--reason", "the node object is gone (INC-9)"},
	} {
		r := cli.Run(t, cp.AdminKubeconfig, append([]string{"remove", "pod/web-0", "-n", ns, "--yes", "--pod-grace-margin", margin}, flags...)...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "the API server saw the Lease kube-node-lease/"+name+" that the kubelet of node "+name+" renews change") || strings.Contains(r.Stderr, "to remove it anyway") {
			t.Errorf("%s: code %d, want 1 naming the Lease, no flag; stderr:\n%s", what, r.Code, r.Stderr)
		}
	}
	if !podExists(t, ns, "web-0") {
		t.Fatal("a pod of a running kubelet was deleted")
	}
	// The kubelet stopped renewing it: its renewTime, and its last change by the API
	// server's clock, are older than the window.
	kubeletLease(t, name, time.Now().Add(-plan.KubeletAliveWindow-time.Minute))
	ageLease(t, name, plan.KubeletAliveWindow+time.Minute)
	r := cli.Run(t, cp.AdminKubeconfig, "remove", "pod/web-0", "-n", ns, "--yes", "--policy", policy, "--pod-grace-margin", margin)
	took := time.Since(created)
	if r.Code != 0 || !strings.Contains(r.Stdout, "force-deleted; the pod is gone") {
		t.Fatalf("a stale Lease: code %d, stdout %q; stderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if took >= podgcQuarantine {
		t.Errorf("deleted %s after the pod's creation, past podgc's quarantine: whose deletion it was cannot be told", took)
	}
}

// TestAKubeletThatWritesReadyFalseStopsAForceDeletion: a Node whose kubelet reported
// Ready=False seconds ago (its runtime is down) is refused, even forced; and remove warns
// of a --pod-grace-margin below 30 s.
func TestAKubeletThatWritesReadyFalseStopsAForceDeletion(t *testing.T) {
	ns := cp.Namespace(t)
	name := "fd-runtime-down-" + ns
	silentNode(t, name, "", corev1.ConditionFalse, time.Now())
	stuckPod(t, ns, "web-0", name, nil)
	r := cli.Run(t, cp.AdminKubeconfig, "remove", "pod/web-0", "-n", ns, "--yes", "--force-unverified", "--reason", "INC-10", "--pod-grace-margin", margin)
	if r.Code != 1 || !strings.Contains(r.Stderr, "node "+name+" is Ready=False") || !strings.Contains(r.Stderr, "only its kubelet writes False") ||
		!strings.Contains(r.Stderr, "Warning: --pod-grace-margin 1s is below 30s") {
		t.Errorf("code %d; stderr:\n%s", r.Code, r.Stderr)
	}
	if !podExists(t, ns, "web-0") {
		t.Error("the pod of a kubelet that reports was deleted")
	}
}

// TestTheWriteRefusesANodeThatIsNotTheOnePlanned: planned with the Node absent (forced),
// a machine registers under that name before the write; planned with a Node, the Node is
// deleted and created again (another uid) before the write: no DELETE is sent.
func TestTheWriteRefusesANodeThatIsNotTheOnePlanned(t *testing.T) {
	ns := cp.Namespace(t)
	kc := cp.Kube(t)
	name := "fd-reregistered-" + ns
	p := stuckPod(t, ns, "web-0", name, nil)
	planner := &plan.Planner{Kube: kc}
	scanned := &kube.Object{Resource: pods, Meta: p.ObjectMeta}
	planned := planner.Plan(t.Context(), []plan.Request{{Object: scanned, ForceDelete: true}}, plan.Options{ForceUnverified: true, Reason: "INC-11", PodGraceMargin: time.Second})
	if len(planned.Actions) != 1 || !planned.Actions[0].NodeAbsent {
		t.Fatalf("plan %+v", planned)
	}
	silentNode(t, name, "", corev1.ConditionUnknown, time.Now().Add(-time.Hour))
	_, err := (&write.Remover{Kube: kc}).ForceDelete(t.Context(), planned.Actions[0].Target, write.DryRunNone)
	if err == nil || !strings.Contains(err.Error(), "did not exist when it was planned, and a Node of that name exists now") {
		t.Errorf("a machine registered since the plan: %v", err)
	}

	planned = planner.Plan(t.Context(), []plan.Request{{Object: scanned, ForceDelete: true}}, plan.Options{ForceUnverified: true, Reason: "INC-11", PodGraceMargin: time.Second})
	if len(planned.Actions) != 1 || planned.Actions[0].NodeUID == "" {
		t.Fatalf("plan %+v", planned)
	}
	if err := kc.CoreV1().Nodes().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := silentNode(t, name, "", corev1.ConditionUnknown, time.Now().Add(-time.Hour))
	_, err = (&write.Remover{Kube: kc}).ForceDelete(t.Context(), planned.Actions[0].Target, write.DryRunNone)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("is another Node than the one it was planned with (uid %s, planned %s)", again.UID, planned.Actions[0].NodeUID)) {
		t.Errorf("a Node created again: %v", err)
	}
	if !podExists(t, ns, "web-0") {
		t.Error("the pod was deleted")
	}
}

// TestReconcileDoesNotAskForAPodHeldOnlyByFinalizers: a pod never scheduled is deleted
// with a grace period of 0 and stays for its finalizer: a pass matches it by a
// waitsForNode rule and asks nothing of it (no Kept every pass).
func TestReconcileDoesNotAskForAPodHeldOnlyByFinalizers(t *testing.T) {
	ns := cp.Namespace(t)
	kc := cp.Kube(t)
	_, err := kc.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "held", Labels: yes, Finalizers: []string{"example.com/hold"}},
		Spec:       corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cp.Kube(t).CoreV1().Pods(ns).Patch(context.Background(), "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := kc.CoreV1().Pods(ns).Delete(t.Context(), "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := kc.CoreV1().Pods(ns).Get(t.Context(), "held", metav1.GetOptions{})
	if err != nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 0 {
		t.Fatalf("want the pod held with a grace period of 0: %+v %v", p, err)
	}
	time.Sleep(1500 * time.Millisecond)
	r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--dry-run", "--policy", nodePolicy(t, ns, ""), "--pod-grace-margin", margin, "-o", "json")
	rep := cli.Report(t, r)
	if r.Code != 0 {
		t.Fatalf("code %d; stderr:\n%s", r.Code, r.Stderr)
	}
	for _, a := range rep.Actions {
		if a.Target.Name == "held" && a.Action == finalizev1alpha1.ActionForceDelete {
			t.Errorf("a force deletion of a pod held only by its finalizer: %+v", a)
		}
	}
}
