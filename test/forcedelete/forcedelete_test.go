package forcedelete

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// podgcQuarantine is how long kube-controller-manager's pod garbage collector waits
// before it force-deletes a pod bound to a node that does not exist (its
// quarantineTime, 40 s, not a flag). A scenario that acts on such a pod must act sooner.
const podgcQuarantine = 40 * time.Second

// margin is the --pod-grace-margin of these tests: their pods are deleted with a grace
// period of 1 s, and are overdue 1 s after it.
const margin = "1s"

var pods = kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}

// node creates a Node object no kubelet runs. Ready sets its Ready condition True with a
// heartbeat of now through the status subresource: a fake heartbeat, which only the
// refusal of a Ready node uses; the node lifecycle controller does not run here, so the
// condition stays. Without ready, the node has no Ready condition: a kubelet that never
// reported.
func node(t *testing.T, name, providerID string, ready bool) {
	t.Helper()
	kc := cp.Kube(t)
	n, err := kc.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Kube(t).CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if ready {
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
		if _, err = kc.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// stuckPod creates a pod bound to nodeName, with no finalizer, and deletes it with a
// grace period of 1 s. No kubelet answers for any node here, so it stays Terminating;
// it returns once the grace period and the margin are over.
func stuckPod(t *testing.T, ns, name, nodeName string, labels map[string]string) *corev1.Pod {
	t.Helper()
	kc := cp.Kube(t)
	_, err := kc.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := kc.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}); err != nil {
		t.Fatal(err)
	}
	p, err := kc.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("pod %s is not terminating: %v", name, err)
	}
	time.Sleep(time.Until(p.DeletionTimestamp.Add(1500 * time.Millisecond))) // the grace period, then the margin: the pod's own timeline
	return p
}

func podExists(t *testing.T, ns, name string) bool {
	t.Helper()
	_, err := cp.Kube(t).CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// auditLines reads the complete lines of an audit log.
func auditLines(t *testing.T, path string) []write.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []write.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec write.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if rec.Stage == write.StageComplete {
			out = append(out, rec)
		}
	}
	return out
}

// event finds the Event kubectl-finalize recorded about the pod.
func event(t *testing.T, ns string, uid types.UID) string {
	t.Helper()
	list, err := cp.Kube(t).EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Regarding.UID == uid && e.ReportingController == write.FieldManager {
			return e.Reason + ": " + e.Note
		}
	}
	return ""
}

func nodePolicy(t *testing.T, ns, verify string) string {
	t.Helper()
	return cli.WritePolicy(t, "", fmt.Sprintf(`- name: gone-nodes
  waitsForNode: true
  namespaces: [%s]
  selector: "fd=yes"
%s`, ns, verify))
}

var yes = map[string]string{"fd": "yes"}

// TestAPodOfADeletedNodeIsForceDeletedOnlyVerified: a pod stuck Terminating on a node
// whose kubelet never answers. Without a policy and without --force-unverified, remove
// refuses; --force-unverified without --reason is an invalid invocation; with a policy
// whose rule verifies by the Node object's absence, it refuses while the Node exists (no
// provider to ask), and once the Node object is deleted, it force-deletes the pod:
// audited, evented, within podgc's quarantine, so that the deletion is ours.
func TestAPodOfADeletedNodeIsForceDeletedOnlyVerified(t *testing.T) {
	t.Parallel() // see the package doc: no Ready node, no provider
	ns := cp.Namespace(t)
	nodeName := "fd-deleted-" + ns
	node(t, nodeName, "", false)
	p := stuckPod(t, ns, "web-0", nodeName, yes)
	policy := nodePolicy(t, ns, "")

	r := cli.Run(t, cp.AdminKubeconfig, "remove", "pod/web-0", "-n", ns, "--yes", "--pod-grace-margin", margin)
	if r.Code != 2 || !strings.Contains(r.Stderr, "force deletion: no policy rule verified that the machine of node "+nodeName+" is gone") ||
		!strings.Contains(r.Stderr, "--force-unverified --reason TEXT") {
		t.Errorf("without a policy: code %d, want 2 naming --force-unverified; stderr:\n%s", r.Code, r.Stderr)
	}
	r = cli.Run(t, cp.AdminKubeconfig, "remove", "pod/web-0", "-n", ns, "--yes", "--force-unverified", "--pod-grace-margin", margin)
	if r.Code != 2 || !strings.Contains(r.Stderr, "--force-unverified requires --reason") {
		t.Errorf("--force-unverified without --reason: code %d, want 2; stderr:\n%s", r.Code, r.Stderr)
	}
	r = cli.Run(t, cp.AdminKubeconfig, "remove", "pod/web-0", "-n", ns, "--yes", "--policy", policy, "--pod-grace-margin", margin)
	if r.Code != 2 || !strings.Contains(r.Stderr, "the rule names no provider to ask whether its machine is gone") {
		t.Errorf("node still there: code %d, want 2; stderr:\n%s", r.Code, r.Stderr)
	}
	if !podExists(t, ns, "web-0") {
		t.Fatal("a refused force deletion deleted the pod")
	}

	if err := cp.Kube(t).CoreV1().Nodes().Delete(t.Context(), nodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nodeDeleted := time.Now()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r = cli.Run(t, cp.AdminKubeconfig, "remove", "pod/web-0", "-n", ns, "--yes", "--policy", policy, "--pod-grace-margin", margin, "--audit-log", audit, "-o", "json")
	took := time.Since(nodeDeleted)
	if r.Code != 0 {
		t.Fatalf("node deleted: code %d; stderr:\n%s", r.Code, r.Stderr)
	}
	if took >= podgcQuarantine {
		t.Fatalf("the pass took %s after the node's deletion, past podgc's quarantine: whose deletion it was cannot be told", took)
	}
	var out finalizev1alpha1.RemovalPlan
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if len(out.Actions) != 1 || out.Actions[0].Action != finalizev1alpha1.ActionForceDelete || out.Actions[0].Node != nodeName ||
		out.Actions[0].Result != finalizev1alpha1.ResultRemoved || out.Actions[0].Rule != "gone-nodes" || out.Actions[0].Verdict != finalizev1alpha1.VerdictGone {
		t.Errorf("plan %+v", out.Actions)
	}
	if podExists(t, ns, "web-0") {
		t.Error("the pod still exists")
	}
	recs := auditLines(t, audit)
	if len(recs) != 1 || recs[0].Action != plan.ReasonPodForceDeleted || recs[0].Node != nodeName || !recs[0].Verified ||
		!strings.Contains(recs[0].Evidence, "GET nodes/"+nodeName+": 404") || recs[0].ResourceVersion != p.ResourceVersion || !recs[0].Deleted {
		t.Errorf("audit %+v", recs)
	}
	if ev := event(t, ns, p.UID); !strings.HasPrefix(ev, "PodForceDeleted: Force-deleted (gracePeriodSeconds 0) a pod whose deletion waited for the kubelet of node "+nodeName) ||
		!strings.Contains(ev, "verified by rule gone-nodes") {
		t.Errorf("event %q", ev)
	}
	t.Logf("force-deleted %s after the node's deletion (podgc's quarantine is %s)", took.Round(time.Millisecond), podgcQuarantine)
}

// TestAPodOfAReadyNodeIsNeverForceDeleted: a Ready node's kubelet answers, and may run
// the pod's containers: neither --force-unverified nor a rule deletes its pod.
func TestAPodOfAReadyNodeIsNeverForceDeleted(t *testing.T) {
	ns := cp.Namespace(t)
	nodeName := "fd-ready-" + ns
	node(t, nodeName, "", true)
	stuckPod(t, ns, "db-0", nodeName, yes)
	for name, flags := range map[string][]string{
		"forced": {"--force-unverified", "--reason", "the node is gone, I checked (INC-7)"},
		"policy": {"--policy", nodePolicy(t, ns, "")},
	} {
		r := cli.Run(t, cp.AdminKubeconfig, append([]string{"remove", "pod/db-0", "-n", ns, "--yes", "--pod-grace-margin", margin}, flags...)...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "force deletion: node "+nodeName+" is Ready") || strings.Contains(r.Stderr, "to remove it anyway") {
			t.Errorf("%s: code %d, want 1 saying the node is Ready, with no flag to force it; stderr:\n%s", name, r.Code, r.Stderr)
		}
	}
	if !podExists(t, ns, "db-0") {
		t.Error("the pod of a Ready node was deleted")
	}
}

// TestAProviderVerifiesTheMachineByProviderID: the Node objects exist, not Ready; an
// HTTPS cloud API on loopback answers 404 for the instance of one node's
// spec.providerID, 200 for the other's. The rule's provider is checked against a Ready
// node first (Present). One pod is force-deleted, the other kept.
func TestAProviderVerifiesTheMachineByProviderID(t *testing.T) {
	c := fakecloud.New(t)
	ns := cp.Namespace(t)
	node(t, "fd-live-"+ns, "live-"+ns, true) // the control: a Ready node, whose machine runs
	node(t, "fd-gone-"+ns, "deleted-"+ns, false)
	node(t, "fd-down-"+ns, "running-"+ns, false)
	gone := stuckPod(t, ns, "gone", "fd-gone-"+ns, yes)
	stuckPod(t, ns, "down", "fd-down-"+ns, yes)
	policy := nodePolicy(t, ns, fmt.Sprintf(`  verify:
    http:
      url: "%s/instances/{identity.providerID}"
      tls: {caFile: %q}
      timeout: 3s
`, c.URL, c.CAFile))

	r := cli.Run(t, cp.AdminKubeconfig, "remove", "pod/down", "-n", ns, "--yes", "--policy", policy, "--pod-grace-margin", margin)
	// A provider's Present is evidence against the deletion: no flag overrides it, so
	// the refusal names none and is not a usage error.
	if r.Code != 1 || !strings.Contains(r.Stderr, "rule gone-nodes: Present") || strings.Contains(r.Stderr, "to remove it anyway") {
		t.Errorf("a running machine: code %d, want 1 with Present and no flag offered; stderr:\n%s", r.Code, r.Stderr)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r = cli.Run(t, cp.AdminKubeconfig, "remove", "pod/gone", "-n", ns, "--yes", "--policy", policy, "--pod-grace-margin", margin, "--audit-log", audit)
	if r.Code != 0 || !strings.Contains(r.Stdout, "pods/gone -n "+ns+": force-deleted; the pod is gone") {
		t.Fatalf("a deleted machine: code %d; stdout %q; stderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	recs := auditLines(t, audit)
	if len(recs) != 1 || recs[0].Node != "fd-gone-"+ns || !strings.Contains(recs[0].Evidence, "/instances/deleted-"+ns) || !strings.Contains(recs[0].Evidence, "404") {
		t.Errorf("audit %+v", recs)
	}
	if !podExists(t, ns, "down") || podExists(t, ns, "gone") {
		t.Error("want pod down kept and pod gone deleted")
	}
	if asked := strings.Join(c.Asked(), " "); !strings.Contains(asked, "/instances/live-"+ns) {
		t.Errorf("the provider was not checked against the Ready node; asked: %s", asked)
	}
	_ = gone
}

// TestAPodThatChangedIsNotDeleted: the pod changes between its plan and its write (a
// label, as a controller would write): the DELETE's preconditions fail with a conflict,
// and nothing is deleted.
func TestAPodThatChangedIsNotDeleted(t *testing.T) {
	t.Parallel() // see the package doc: no Ready node, no provider
	ns := cp.Namespace(t)
	kc := cp.Kube(t)
	p := stuckPod(t, ns, "racy", "gone-node-xyz-"+ns, nil)
	remover := &write.Remover{Kube: kc, BeforeWrite: func(int) {
		patch := []byte(`{"metadata":{"labels":{"touched":"yes"}}}`)
		if _, err := kc.CoreV1().Pods(ns).Patch(t.Context(), "racy", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Errorf("the other writer: %v", err)
		}
	}}
	target := plan.Target{Ref: kube.Ref{Resource: pods, Namespace: ns, Name: "racy", UID: p.UID}, ResourceVersion: p.ResourceVersion,
		Kind: plan.ForceDelete, Node: "gone-node-xyz-" + ns, NodeGone: true, GraceMargin: time.Second}
	out, err := remover.ForceDelete(t.Context(), target, write.DryRunNone)
	if err == nil || !strings.Contains(err.Error(), "the precondition on uid") || !strings.Contains(err.Error(), "nothing was deleted") || out.Result != "" {
		t.Errorf("out %+v, err %v", out, err)
	}
	if !apierrors.IsConflict(err) {
		t.Errorf("want a 409 from the API server, got %v", err)
	}
	if !podExists(t, ns, "racy") {
		t.Error("a pod that changed was deleted")
	}
}

// TestReconcileDeletesAVerifiedPodAndKeepsTheOther: one pass over two overdue pods: one
// bound to a node name that never existed (verified: GET nodes/NAME answers 404), one on
// a node that exists, NotReady, which a rule without a provider cannot verify (kept,
// with why). The pass runs within podgc's quarantine of the first pod.
func TestReconcileDeletesAVerifiedPodAndKeepsTheOther(t *testing.T) {
	t.Parallel() // see the package doc: no Ready node, no provider
	ns := cp.Namespace(t)
	created := time.Now()
	never := "gone-node-xyz-" + ns
	p := stuckPod(t, ns, "orphan", never, yes)
	node(t, "fd-notready-"+ns, "", false)
	stuckPod(t, ns, "waiting", "fd-notready-"+ns, yes)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--policy", nodePolicy(t, ns, ""), "--pod-grace-margin", margin, "--audit-log", audit, "-o", "json")
	took := time.Since(created)
	rep := cli.Report(t, r)
	if r.Code != 0 {
		t.Fatalf("code %d; stderr:\n%s", r.Code, r.Stderr)
	}
	if took >= podgcQuarantine {
		t.Fatalf("the pass ended %s after the pod was created, past podgc's quarantine", took)
	}
	byName := map[string]finalizev1alpha1.Removal{}
	for _, a := range rep.Actions {
		byName[a.Target.Name] = a
	}
	if a := byName["orphan"]; a.Action != finalizev1alpha1.ActionForceDelete || a.Result != finalizev1alpha1.ResultRemoved || a.Node != never {
		t.Errorf("orphan: %+v", a)
	}
	if a := byName["waiting"]; a.Action != finalizev1alpha1.ActionForceDelete || a.Result != finalizev1alpha1.ResultKept ||
		!strings.Contains(a.Message, "the rule names no provider") {
		t.Errorf("waiting: %+v", a)
	}
	if rep.Summary[finalizev1alpha1.ResultRemoved] != 1 || rep.Summary[finalizev1alpha1.ResultKept] != 1 {
		t.Errorf("summary %v", rep.Summary)
	}
	if podExists(t, ns, "orphan") || !podExists(t, ns, "waiting") {
		t.Error("want orphan deleted and waiting kept")
	}
	recs := auditLines(t, audit)
	if len(recs) != 1 || recs[0].Action != plan.ReasonPodForceDeleted || recs[0].Node != never || recs[0].Rule != "gone-nodes" {
		t.Errorf("audit %+v", recs)
	}
	if ev := event(t, ns, p.UID); !strings.HasPrefix(ev, "PodForceDeleted: ") {
		t.Errorf("event %q", ev)
	}
}

// TestABadRuleIsRefused: a waitsForNode rule that also names finalizers, another type,
// or an identity value nodes do not have, is an invalid policy, each problem named.
func TestABadRuleIsRefused(t *testing.T) {
	policy := cli.WritePolicy(t, "", `- name: bad
  waitsForNode: true
  finalizers: [example.com/x]
  resources: [deployments.apps]
  verify:
    http:
      url: "https://cloud.example/instances/{identity.arn}"
`)
	r := cli.Run(t, cp.AdminKubeconfig, "policy", "check", policy)
	for _, want := range []string{
		"rules[0].finalizers: Forbidden: does not apply to a rule with waitsForNode",
		"rules[0].resources: Invalid value",
		"a rule with waitsForNode matches pods only",
		"a rule with waitsForNode has the identity values nodeName, providerID of the node, not arn",
	} {
		if r.Code != 2 || !strings.Contains(r.Stderr, want) {
			t.Errorf("code %d, want 2 with %q; stderr:\n%s", r.Code, want, r.Stderr)
		}
	}
}

// TestPodgcForceDeletesAPodOfANodeThatNeverExisted measures what the other scenarios act
// before: kube-controller-manager's pod garbage collector, left alone, force-deletes a
// pod bound to a node name that never existed, and not before its quarantine.
func TestPodgcForceDeletesAPodOfANodeThatNeverExisted(t *testing.T) {
	t.Parallel() // see the package doc: no Ready node, no provider
	ns := cp.Namespace(t)
	created := time.Now()
	stuckPod(t, ns, "left-alone", "never-node-"+ns, nil)
	deadline := created.Add(podgcQuarantine + 60*time.Second) // quarantine, then podgc's period of 20 s, twice
	for podExists(t, ns, "left-alone") {
		if time.Now().After(deadline) {
			t.Fatalf("podgc did not delete the pod within %s", deadline.Sub(created))
		}
		time.Sleep(time.Second)
	}
	took := time.Since(created)
	if took < podgcQuarantine {
		t.Errorf("podgc deleted the pod %s after its creation, before its quarantine of %s: the other scenarios cannot tell whose deletion it was", took, podgcQuarantine)
	}
	t.Logf("podgc force-deleted the pod %s after its creation", took.Round(time.Second))
}

// TestADryRunDeletesNothing: a dry run shows the force deletion in the plan, and the
// pod stays: client (only reads), server (the DELETE sent with dryRun=All, so admission
// runs) and reconcile --dry-run.
func TestADryRunDeletesNothing(t *testing.T) {
	t.Parallel() // see the package doc: no Ready node, no provider
	ns := cp.Namespace(t)
	stuckPod(t, ns, "web-1", "gone-node-xyz-"+ns, yes)
	policy := nodePolicy(t, ns, "")
	for _, dry := range []string{"client", "server"} {
		r := cli.Run(t, cp.AdminKubeconfig, "remove", "pod/web-1", "-n", ns, "--policy", policy, "--pod-grace-margin", margin, "--dry-run="+dry)
		if r.Code != 0 || r.Stdout != "pods/web-1 -n "+ns+": would be force-deleted ("+dry+" dry run)\n" || !strings.Contains(r.Stderr, "About to force-delete 1 pod") {
			t.Errorf("--dry-run=%s: code %d, stdout %q, stderr:\n%s", dry, r.Code, r.Stdout, r.Stderr)
		}
	}
	r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--dry-run", "--policy", policy, "--pod-grace-margin", margin, "-o", "json")
	rep := cli.Report(t, r)
	if r.Code != 0 || len(rep.Actions) != 1 || rep.Actions[0].Result != finalizev1alpha1.ResultWouldRemove || rep.Actions[0].Action != finalizev1alpha1.ActionForceDelete {
		t.Errorf("reconcile --dry-run: code %d, actions %+v; stderr:\n%s", r.Code, rep.Actions, r.Stderr)
	}
	if !podExists(t, ns, "web-1") {
		t.Error("a dry run deleted the pod")
	}
}

// TestAPersonForcesADeletionWithAReason: without a policy, --force-unverified --reason
// force-deletes the pod of a node that is not Ready; the audit and a Warning Event name
// it unverified, with the reason.
func TestAPersonForcesADeletionWithAReason(t *testing.T) {
	t.Parallel() // see the package doc: no Ready node, no provider
	ns := cp.Namespace(t)
	node(t, "fd-down-"+ns, "", false)
	p := stuckPod(t, ns, "db-1", "fd-down-"+ns, nil)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	reason := "machine powered off in the console (INC-77)"
	r := cli.Run(t, cp.AdminKubeconfig, "remove", "pod/db-1", "-n", ns, "--yes", "--force-unverified", "--reason", reason, "--pod-grace-margin", margin, "--audit-log", audit)
	if r.Code != 0 || r.Stdout != "pods/db-1 -n "+ns+": force-deleted; the pod is gone\n" {
		t.Fatalf("code %d, stdout %q; stderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	recs := auditLines(t, audit)
	if len(recs) != 1 || recs[0].Action != plan.ReasonPodForceDeletedUnverified || recs[0].Verified || recs[0].Reason != reason || recs[0].Node != "fd-down-"+ns {
		t.Errorf("audit %+v", recs)
	}
	if ev := event(t, ns, p.UID); !strings.HasPrefix(ev, "PodForceDeletedUnverified: ") || !strings.Contains(ev, "forced with reason: "+reason) {
		t.Errorf("event %q", ev)
	}
}
