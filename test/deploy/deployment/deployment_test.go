package deployment

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/ptr"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/reconcile"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/overlay"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// leaseDuration and retryPeriod are reconcile --leader-elect's (pkg/cmd/reconcile,
// leaderElection): a standby replica takes a Lease its holder has not renewed for
// leaseDuration; the holder renews it every retryPeriod, and a standby tries to take it
// every retryPeriod to retryPeriod*(1+leaderelection.JitterFactor) (client-go jitters
// a standby's tries: 2 to 4.4 s).
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
)

// standbyTry is the longest a standby waits between two tries at the Lease.
var standbyTry = time.Duration(float64(retryPeriod) * (1 + leaderelection.JitterFactor))

// takeoverMargin is what a takeover after a leader's death may take beyond client-go's
// own bound (maxTakeover): the GET and the PUT of a standby's tries on loopback, and its
// timers running late on a 2-core machine that runs other tests at the same time.
const takeoverMargin = 2 * time.Second

// maxTakeover bounds the time from a leader's death to another replica holding the
// Lease. A standby counts the lease duration from the moment it saw the Lease change,
// by its own clock, never from the renewTime the holder wrote (replicas' clocks need not
// agree): the dead leader's last renewal is seen at the standby's next try, at most
// standbyTry later; the standby waits leaseDuration from then, and takes the Lease at its
// first try after that, at most standbyTry later again: 15 + 2*4.4 = 23.8 s, and the
// margin. (Lease duration plus one retry period, 17 s, would hold only for a standby
// that counted from renewTime and tried every 2 s exactly.)
var maxTakeover = leaseDuration + 2*standbyTry + takeoverMargin

// TestTheShippedRBACIsGenerated: docs/deploy/deployment/rbac.yaml is what `kubectl
// finalize rbac` prints today for docs/deploy/base/policy.yaml with the Lease's
// namespace; otherwise the shipped Deployment runs with a role its policy no longer fits.
func TestTheShippedRBACIsGenerated(t *testing.T) {
	r := cli.Run(t, cp.AdminKubeconfig, "rbac", "--policy", overlay.RepoPath("docs", "deploy", "base", "policy.yaml"),
		"--service-account", namespace+"/"+name, "--leader-elect-namespace", namespace)
	if r.Code != 0 {
		t.Fatalf("kubectl finalize rbac: exit %d\n%s", r.Code, r.Stderr)
	}
	shipped, err := os.ReadFile(overlay.RepoPath("docs", "deploy", "deployment", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != string(shipped) {
		t.Errorf("docs/deploy/deployment/rbac.yaml is not what kubectl finalize rbac generates; regenerate it:\n"+
			"kubectl finalize rbac --policy docs/deploy/base/policy.yaml --service-account kubectl-finalize/kubectl-finalize --leader-elect-namespace kubectl-finalize > docs/deploy/deployment/rbac.yaml\ngenerated:\n%s", r.Stdout)
	}
}

// TestTheLeaderHandsOver: the shipped Deployment's two replicas run on two nodes, one
// holds the Lease and runs the passes, both answer /metrics and /healthz on their own
// address; when the leader's pod is deleted another replica (the standby, or the
// Deployment's replacement: a race) takes the Lease within the lease duration and runs a
// pass at once.
//
// The shipped --interval=15m is kept: a replica runs a pass as soon as it takes the
// Lease, which is what the test shows. The object made before the handover waits for
// it (the old leader's next pass is 15 minutes away); the new leader's first pass
// removes it.
func TestTheLeaderHandsOver(t *testing.T) {
	s := start(t)
	ns, fin, kube, configMap, leader, leaderID := s.ns, s.fin, s.kube, s.configMap, s.leader, s.leaderID

	// An object stuck now waits for the next pass: the leader's is 15 minutes away.
	configMap("second", "deleted-2", true)
	time.Sleep(3 * time.Second)
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "second", metav1.GetOptions{}); err != nil {
		t.Fatalf("configmaps/second before the handover: %v; want it still stuck (the next pass is 15m away)", err)
	}

	deleted := time.Now()
	if err := kube.CoreV1().Pods(namespace).Delete(t.Context(), leader.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The standby, or the replacement the Deployment starts at once, takes the Lease the
	// old leader released on SIGTERM; which of them is a race, and either is a handover.
	next, nextID, lease := holder(t, leaderID, leaseDuration)
	handover := time.Since(deleted)
	if next.Name == leader.Name {
		t.Fatalf("the deleted leader %s holds the Lease under a new identity %s", leader.Name, nextID)
	}
	t.Logf("%s took the Lease %s after %s was deleted (lease duration %s, %d transitions)",
		next.Name, handover.Round(time.Millisecond), leader.Name, leaseDuration, *lease.Spec.LeaseTransitions)
	waitGone(t, ns, "second", time.Minute)
	t.Logf("the new leader's pass removed configmaps/second %s after the deletion", time.Since(deleted).Round(time.Millisecond))
	log := logNaming(t, next.Name, "Took the lease", "configmaps/second", fin)
	if strings.Contains(log, "configmaps/first") {
		t.Errorf("the new leader worked on configmaps/first, which the old leader removed:\n%s", log)
	}
	notRefused(t, next.Name, log)
	checkEndpoints(t, next, true)

	// The Deployment replaces the deleted pod; the replacement waits for the Lease.
	pods := readyReplicas(t, 2, 2*time.Minute)
	for _, p := range pods {
		if p.Name != next.Name {
			checkEndpoints(t, p, false)
		}
	}
	if again, _, _ := holder(t, "", 5*time.Second); again.Name != next.Name {
		t.Errorf("the Lease moved to %s, want it kept by %s", again.Name, next.Name)
	}
	if got, _ := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "control", metav1.GetOptions{}); got == nil || len(got.Finalizers) != 1 {
		t.Errorf("configmaps/control, live, lost its finalizer: %+v", got)
	}
}

// TestTheLeaderIsKilled: the leader's container is killed on its node through the
// container runtime (SIGKILL: no SIGTERM, so the Lease is not released, as when a
// process crashes or the OOM killer ends it). Another replica takes the Lease only once
// it has expired: no sooner than a lease duration after the dead leader's last renewal,
// and no later than maxTakeover after the kill. Its first pass removes an object made
// stuck after the kill. The kubelet restarts the killed container in its pod (a new
// process, a new identity); whichever of it and the standby takes the Lease (a race:
// the restart takes a second or two, the standby saw the last renewal up to 4.4 s after
// it was made), the other waits: exactly one leads, and no log says Forbidden.
func TestTheLeaderIsKilled(t *testing.T) {
	s := start(t)
	ns, fin, kube, leader, leaderID := s.ns, s.fin, s.kube, s.leader, s.leaderID

	node := nodeOf(t, leader.Spec.NodeName)
	pod, err := kube.CoreV1().Pods(namespace).Get(t.Context(), leader.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	killedContainer := reconcileStatus(t, pod)
	if killedContainer.RestartCount > 0 {
		// Two exits are by design: a new pod can start on the kubelet's cached copy of the
		// policy ConfigMap (the previous test's, of the same name), and a continuous run
		// stops when the file changes under it, to start again on the policy as it is; a
		// leader that could not renew in time (a loaded machine) stops too. No other.
		previous, err := kube.CoreV1().Pods(namespace).GetLogs(leader.Name, &corev1.PodLogOptions{Previous: true, Container: "reconcile"}).DoRaw(t.Context())
		if err != nil || !strings.Contains(string(previous), reconcile.ErrPolicyChanged.Error()) && !strings.Contains(string(previous), reconcile.ErrLostLease.Error()) {
			t.Errorf("the leader's container restarted %d times before the kill, last %+v, and not on a changed policy or a lost Lease (%v):\n%s",
				killedContainer.RestartCount, killedContainer.LastTerminationState.Terminated, err, previous)
		}
		t.Logf("the leader's container had restarted %d times before the kill; its last log:\n%s", killedContainer.RestartCount, tailLines(string(previous), 5))
	}
	before, err := kube.CoordinationV1().Leases(namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(before.Spec.LeaseDurationSeconds, 0); ptr.Deref(before.Spec.HolderIdentity, "") != leaderID || time.Duration(got)*time.Second != leaseDuration {
		t.Fatalf("the Lease before the kill: holder %q, duration %ds; want %s and %s", ptr.Deref(before.Spec.HolderIdentity, ""), got, leaderID, leaseDuration)
	}

	killing := time.Now()
	if err := node.KillContainer(t.Context(), killedContainer.ContainerID); err != nil {
		t.Fatalf("killing the leader's container %s on node %s: %v", killedContainer.ContainerID, node.Name, err)
	}
	killed := time.Now()
	s.configMap("third", "deleted-3", true)

	// The Lease, read every 100 ms until another identity holds it: the dead leader's
	// last renewal, and whether it was ever released. configmaps/third is read first: if
	// it is gone while the Lease still names the dead leader, it went without a leader.
	var (
		lastRenew            time.Time
		released, leaderless bool
		took, last           *coordinationv1.Lease
	)
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, maxTakeover+30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, thirdErr := kube.CoreV1().ConfigMaps(ns).Get(ctx, "third", metav1.GetOptions{})
		l, err := kube.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Logf("reading the Lease, tried again: %v", err)
			return false, nil
		}
		last = l
		switch id := ptr.Deref(l.Spec.HolderIdentity, ""); id {
		case leaderID:
			if l.Spec.RenewTime != nil && l.Spec.RenewTime.After(lastRenew) {
				lastRenew = l.Spec.RenewTime.Time
			}
			leaderless = leaderless || apierrors.IsNotFound(thirdErr)
			return false, nil
		case "":
			// ReleaseOnCancel: only a leader that stopped on SIGTERM empties the holder.
			released = true
			return false, nil
		default:
			took = l
			return true, nil
		}
	})
	seen := time.Since(killing)
	if err != nil {
		t.Fatalf("no other replica holds the Lease %s after the kill: %v; the Lease last read: %+v", seen.Round(time.Millisecond), err, last)
	}
	if released {
		t.Errorf("the Lease was released after the kill: the leader stopped gracefully, not killed")
	}
	if leaderless {
		t.Errorf("configmaps/third was removed while the Lease still named the dead leader %s", leaderID)
	}
	if lastRenew.IsZero() || lastRenew.After(killed) {
		t.Fatalf("the dead leader's last renewal %s, the kill done at %s: want one made before the kill",
			lastRenew.Format(time.RFC3339Nano), killed.Format(time.RFC3339Nano))
	}
	if took.Spec.AcquireTime == nil || took.Spec.LeaseTransitions == nil || before.Spec.LeaseTransitions == nil {
		t.Fatalf("the Lease taken has no acquireTime or leaseTransitions: %+v", took.Spec)
	}
	acquired, nextID := took.Spec.AcquireTime.Time, ptr.Deref(took.Spec.HolderIdentity, "")
	afterKill, afterRenew := acquired.Sub(killing), acquired.Sub(lastRenew)
	t.Logf("%s took the Lease %s after the kill (the test saw it %s after), %s after the dead leader's last renewal, "+
		"made %s before the kill; want at least %s after that renewal and at most %s after the kill",
		nextID, afterKill.Round(time.Millisecond), seen.Round(time.Millisecond), afterRenew.Round(time.Millisecond),
		killing.Sub(lastRenew).Round(time.Millisecond), leaseDuration, maxTakeover)
	// acquireTime and renewTime are microseconds (MicroTime): either may be up to 1µs
	// under the instant it names.
	if afterRenew < leaseDuration-time.Microsecond {
		t.Errorf("the Lease was taken %s after the dead leader's last renewal, want no sooner than the lease duration %s: "+
			"a standby took a Lease that had not expired", afterRenew, leaseDuration)
	}
	if afterKill > maxTakeover {
		t.Errorf("the Lease was taken %s after the kill, want within %s (lease duration %s, two standby tries of up to %s, margin %s)",
			afterKill, maxTakeover, leaseDuration, standbyTry, takeoverMargin)
	}
	if *took.Spec.LeaseTransitions != *before.Spec.LeaseTransitions+1 {
		t.Errorf("leaseTransitions %d after the takeover, %d before: want one transition", *took.Spec.LeaseTransitions, *before.Spec.LeaseTransitions)
	}

	// The standby, or the killed leader's container restarted by the kubelet under a new
	// identity: which of them is a race, and either is a takeover.
	next, id, _ := holder(t, leaderID, 30*time.Second)
	if id != nextID {
		t.Fatalf("the Lease moved on from %s to %s: want it kept", nextID, id)
	}
	who := "the standby"
	if next.Name == leader.Name {
		who = "the killed leader's restarted container"
	}
	t.Logf("the new leader is %s, %s on %s", who, next.Name, next.Spec.NodeName)
	waitGone(t, ns, "third", time.Minute)
	t.Logf("the new leader's pass removed configmaps/third %s after the kill", time.Since(killing).Round(time.Millisecond))
	log := logNaming(t, next.Name, `"Took the lease; running passes" identity="`+nextID+`"`, "configmaps/third", fin)
	if strings.Contains(log, "configmaps/first") {
		t.Errorf("the new leader worked on configmaps/first, which the dead leader removed:\n%s", log)
	}
	notRefused(t, next.Name, log)
	// One pass, one removal: configmaps/third went in the new leader's first pass.
	checkEndpoints(t, next, true)

	// The kubelet restarted the killed container in place: the same two pods, the killed
	// one's container once restarted since the kill, after exiting by SIGKILL (128+9).
	// It may have restarted before, on a changed policy (checked above).
	pods := readyReplicas(t, 2, 2*time.Minute)
	for _, p := range pods {
		if p.Name != leader.Name && p.Name != s.standby.Name {
			t.Errorf("pod %s replaced one of %s and %s: want the killed container restarted in its pod", p.Name, leader.Name, s.standby.Name)
		}
	}
	restarted, err := kube.CoreV1().Pods(namespace).Get(t.Context(), leader.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := reconcileStatus(t, restarted)
	if c.RestartCount != killedContainer.RestartCount+1 || c.LastTerminationState.Terminated == nil || c.LastTerminationState.Terminated.ExitCode != 137 ||
		c.ContainerID == killedContainer.ContainerID {
		t.Errorf("the killed container: restarts %d (%d before the kill), last state %+v, id %s (killed %s); want one restart since the kill, after exit code 137 (SIGKILL)",
			c.RestartCount, killedContainer.RestartCount, c.LastTerminationState.Terminated, c.ContainerID, killedContainer.ContainerID)
	}

	previous, err := kube.CoreV1().Pods(namespace).GetLogs(leader.Name, &corev1.PodLogOptions{Previous: true}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("the killed container's log: %v", err)
	}
	if want := `"Took the lease; running passes" identity="` + leaderID + `"`; !strings.Contains(string(previous), want) {
		t.Errorf("the killed container's log does not say %s:\n%s", want, previous)
	}
	notRefused(t, leader.Name+" (killed)", string(previous))

	// Exactly one leads: the other replica (the restarted container, or the standby) has
	// seen the new leader and waits; it has run no pass and never took the Lease.
	other := pods[0]
	if other.Name == next.Name {
		other = pods[1]
	}
	var otherLog string
	waiting := `"Another replica holds the lease; waiting" leader="` + nextID + `"`
	if err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		otherLog = fixture.PodLog(t, kube, namespace, other.Name)
		return strings.Contains(otherLog, waiting), nil
	}); err != nil || strings.Contains(otherLog, "Took the lease") || strings.Contains(otherLog, "configmaps/third") {
		t.Errorf("replica %s does not wait for %s, or took the Lease, or worked on configmaps/third; its log:\n%s", other.Name, nextID, otherLog)
	}
	notRefused(t, other.Name, otherLog)
	checkEndpoints(t, other, false)
	// And the leader keeps the Lease while the other waits: renewed since, no transition.
	waited := time.Now()
	if err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := kube.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Logf("reading the Lease, tried again: %v", err)
			return false, nil
		}
		last = l
		return ptr.Deref(l.Spec.HolderIdentity, "") != nextID || ptr.Deref(l.Spec.LeaseTransitions, 0) != *took.Spec.LeaseTransitions ||
			(l.Spec.RenewTime != nil && l.Spec.RenewTime.After(waited)), nil
	}); err != nil || ptr.Deref(last.Spec.HolderIdentity, "") != nextID || ptr.Deref(last.Spec.LeaseTransitions, 0) != *took.Spec.LeaseTransitions {
		t.Errorf("the Lease after the other replica waited: %+v; want it renewed by %s with %d transitions (%v)", last, nextID, *took.Spec.LeaseTransitions, err)
	}
	if got, _ := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "control", metav1.GetOptions{}); got == nil || len(got.Finalizers) != 1 {
		t.Errorf("configmaps/control, live, lost its finalizer: %+v", got)
	}
}

// logNaming returns the log of pod, a new leader, once it names every one of wants, or
// fails t naming those it lacks 15 s on: an object is gone as soon as the pass removed
// its finalizer, and the pass's report, which names it, is printed a moment later.
func logNaming(t *testing.T, pod string, wants ...string) string {
	t.Helper()
	kube := cp.Kube(t)
	var log string
	_ = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		log = fixture.PodLog(t, kube, namespace, pod)
		for _, want := range wants {
			if !strings.Contains(log, want) {
				return false, nil
			}
		}
		return true, nil
	})
	for _, want := range wants {
		if !strings.Contains(log, want) {
			t.Errorf("the log of %s, the new leader, does not name %q:\n%s", pod, want, log)
		}
	}
	return log
}

// nodeOf is the test node named name.
func nodeOf(t *testing.T, name string) *controlplane.Node {
	t.Helper()
	for _, n := range cp.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no test node is named %q", name)
	return nil
}

// reconcileStatus is the status of the pod's container reconcile, the shipped one.
func reconcileStatus(t *testing.T, p *corev1.Pod) corev1.ContainerStatus {
	t.Helper()
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == "reconcile" {
			return c
		}
	}
	t.Fatalf("pod %s has no container reconcile: %+v", p.Name, p.Status.ContainerStatuses)
	return corev1.ContainerStatus{}
}

// started is the shipped Deployment running on the two nodes: a namespace with a live
// object and a stuck one the leader's first pass removed, and the replica holding the
// Lease and the one waiting for it. Both handover tests start from it.
type started struct {
	ns, fin   string
	kube      kubernetes.Interface
	configMap func(name, instance string, stuck bool)
	leader    corev1.Pod
	leaderID  string
	standby   corev1.Pod
}

// start deploys docs/deploy/deployment for a policy whose rule asks a fake cloud, and
// checks what holds before any handover: two Ready replicas on two nodes, each on its
// node's address, one holding the Lease whose first pass removes configmaps/first, the
// other waiting, both answering /healthz and /metrics, and neither log refused.
func start(t *testing.T) started {
	t.Helper()
	ns, fin, cloud := cp.Namespace(t), controlplane.FinalizerOf(t), fakecloud.New(t)
	rule := strings.Replace(cloud.Rule("dbs", fin, ""), fmt.Sprintf("%q", cloud.CAFile), fmt.Sprintf("%q", policyDir+"/ca.pem"), 1)
	ca, err := os.ReadFile(cloud.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	kube := cp.Kube(t)
	configMap := func(name, instance string, stuck bool) {
		fixture.Create(t, kube.CoreV1().ConfigMaps(ns), fixture.ConfigMap(name, map[string]string{"instance": instance}, fin), stuck)
	}
	configMap("control", "live", false)
	configMap("first", "deleted-1", true)

	began := time.Now()
	t.Cleanup(func() { undeploy(t) })
	deploy(t, "apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nminAge: 0s\nrules:\n"+rule, string(ca))
	pods := readyReplicas(t, 2, 3*time.Minute)
	t.Logf("two replicas Ready in %s: %s on %s, %s on %s", time.Since(began).Round(time.Millisecond),
		pods[0].Name, pods[0].Spec.NodeName, pods[1].Name, pods[1].Spec.NodeName)
	if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
		t.Fatalf("both replicas run on node %s", pods[0].Spec.NodeName)
	}
	for _, p := range pods {
		if p.Status.PodIP != p.Spec.NodeName {
			t.Errorf("pod %s on node %s has address %s, want its node's", p.Name, p.Spec.NodeName, p.Status.PodIP)
		}
	}

	leader, leaderID, _ := holder(t, "", 30*time.Second)
	t.Logf("the Lease is held by %s as %s", leader.Name, leaderID)
	standby := pods[0]
	if standby.Name == leader.Name {
		standby = pods[1]
	}
	waitGone(t, ns, "first", time.Minute)
	t.Logf("the leader's first pass removed configmaps/first %s after the deployment", time.Since(began).Round(time.Millisecond))
	for _, p := range pods {
		checkEndpoints(t, p, p.Name == leader.Name)
	}
	// Exactly one leads: the other waits, and has run no pass (checkEndpoints). It says
	// so once it has read the Lease: within a retry period (2 s, jittered) of starting.
	var standbyLog string
	if err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		standbyLog = fixture.PodLog(t, kube, namespace, standby.Name)
		return strings.Contains(standbyLog, "Another replica holds the lease"), nil
	}); err != nil || strings.Contains(standbyLog, "configmaps/first") {
		t.Errorf("the standby replica %s did not wait for the Lease, or worked on configmaps/first; its log:\n%s", standby.Name, standbyLog)
	}

	notRefused(t, leader.Name, fixture.PodLog(t, kube, namespace, leader.Name))
	notRefused(t, standby.Name, standbyLog)
	return started{ns: ns, fin: fin, kube: kube, configMap: configMap, leader: leader, leaderID: leaderID, standby: standby}
}

// notRefused: nothing in a replica's log says the API server refused it: the shipped
// RBAC (the Lease's Role included) covers what the pass and the election do. A pass
// asks before it writes, so a missing verb shows as "may not", not as a 403.
func notRefused(t *testing.T, pod, log string) {
	t.Helper()
	for _, refused := range []string{"forbidden", "Forbidden", "may not", "Unauthorized"} {
		if strings.Contains(log, refused) {
			t.Errorf("pod %s's log says %q: the generated RBAC did not cover it:\n%s", pod, refused, log)
		}
	}
}

// undeploy deletes the Deployment and waits until its pods and then the Deployment
// itself are gone: a pod still being created when the nodes stop would leave its
// runtime's leftovers behind, and the next test applies the Deployment again (to one
// still terminating, the apply would be lost with it).
func undeploy(t *testing.T) {
	kube := cp.Kube(t)
	ctx := context.Background()
	if err := kube.AppsV1().Deployments(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting the Deployment: %v", err)
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("the Deployment's pods are not gone 2m after its deletion: %v", err)
		return
	}
	err = fixture.WaitGone(ctx, 250*time.Millisecond, time.Minute, func(ctx context.Context) error {
		_, err := kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		t.Errorf("the Deployment is not gone 1m after its pods: %v", err)
	}
}

// readyReplicas waits until the Deployment has n Ready replicas, each Ready pod running
// and none terminating, and returns the pods.
func readyReplicas(t *testing.T, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	kube := cp.Kube(t)
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
		if err != nil {
			return false, err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && ready(p) {
				pods = append(pods, p)
			}
		}
		return len(pods) == n, nil
	})
	if err != nil {
		list, _ := kube.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
		var states []string
		for _, p := range list.Items {
			states = append(states, fmt.Sprintf("%s on %q: %s %+v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions))
		}
		t.Fatalf("%d Ready replicas after %s, want %d: %v\npods:\n%s\nevents:\n%s", len(pods), timeout, n, err,
			strings.Join(states, "\n"), fixture.Events(kube, namespace))
	}
	return pods
}

func ready(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// holder waits until the Lease is held by an identity other than not (when not is set),
// and returns the pod that holds it, its identity and the Lease. reconcile names itself
// HOSTNAME_UUID, and hostNetwork pods see their node's hostname, so the pod is the one
// whose log says it took the Lease under that identity.
func holder(t *testing.T, not string, timeout time.Duration) (corev1.Pod, string, *coordinationv1.Lease) {
	t.Helper()
	kube := cp.Kube(t)
	var lease *coordinationv1.Lease
	var found *corev1.Pod
	var id string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if lease, err = kube.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		if id = ptr.Deref(lease.Spec.HolderIdentity, ""); id == "" || id == not {
			return false, nil
		}
		pods, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
		if err != nil {
			return false, err
		}
		for i, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			log, err := kube.CoreV1().Pods(namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err == nil && strings.Contains(string(log), `"Took the lease; running passes" identity="`+id+`"`) {
				found = &pods.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the Lease %s/%s is not held by a running replica (other than %q) within %s: %v; the Lease: %+v", namespace, name, not, timeout, err, lease)
	}
	return *found, id, lease
}

// waitGone waits until configmaps/name in ns is gone: a pass removed its finalizer.
func waitGone(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	kube := cp.Kube(t)
	err := fixture.WaitGone(t.Context(), 200*time.Millisecond, timeout, func(ctx context.Context) error {
		_, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("configmaps/%s -n %s still there after %s: %v", name, ns, timeout, err)
	}
}

// checkEndpoints: the replica answers /healthz and /metrics on its own address, port
// 8080, with the metrics of continuous mode (docs/reconcile.md); only a leader has run
// passes.
func checkEndpoints(t *testing.T, p corev1.Pod, leading bool) {
	t.Helper()
	ip := net.ParseIP(p.Status.PodIP)
	if ip == nil || !ip.IsLoopback() {
		t.Fatalf("pod %s has address %q: the network rule allows loopback only", p.Name, p.Status.PodIP)
	}
	get := func(path string) string {
		t.Helper()
		url := "http://" + net.JoinHostPort(p.Status.PodIP, "8080") + path
		c := &http.Client{Timeout: 5 * time.Second}
		var status int
		var body []byte
		// The shipped pod has no readiness probe: it is Ready as soon as its container
		// runs, a moment before reconcile has read its policy and listens.
		err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
			resp, err := c.Get(url)
			if err != nil {
				return false, nil
			}
			defer resp.Body.Close()
			status = resp.StatusCode
			body, err = io.ReadAll(resp.Body)
			return true, err
		})
		if err != nil {
			t.Fatalf("GET %s: no answer within 15s of the pod being Ready: %v", url, err)
		}
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d, want 200\n%s", url, status, body)
		}
		return string(body)
	}
	if body := get("/healthz"); body != "ok" {
		t.Errorf("pod %s /healthz: %q, want ok", p.Name, body)
	}
	always := []string{
		"kubectl_finalize_reconcile_pass_duration_seconds_count",
		"kubectl_finalize_reconcile_last_success_timestamp_seconds",
		`kubectl_finalize_rule_broken{rule="dbs"} 0`,
		`kubectl_finalize_rule_cannot_verify{rule="dbs"} 0`,
	}
	passed := []string{
		`kubectl_finalize_reconcile_passes_total{outcome="ok"} 1`,
		`kubectl_finalize_reconcile_actions_total{result="Removed",rule="dbs"} 1`,
		`kubectl_finalize_provider_verdicts_total{provider="http",rule="dbs",verdict="Gone"} 1`,
	}
	want := always
	if leading {
		want = append(want, passed...)
	}
	// A sample with its value is a whole line ("} 1" is not "} 10"); a bare name starts
	// one.
	missing := func(metrics string) []string {
		var out []string
		for _, w := range want {
			line := "\n" + w
			if strings.Contains(w, "} ") {
				line += "\n"
			}
			if !strings.Contains(metrics, line) {
				out = append(out, w)
			}
		}
		return out
	}
	// The pass is counted when it ends, a moment after its write made the object go:
	// the leader's metrics are read again until they count it, for up to 30 s.
	metrics := get("/metrics")
	for deadline := time.Now().Add(30 * time.Second); leading && len(missing(metrics)) > 0 && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		metrics = get("/metrics")
	}
	if !leading && strings.Contains(metrics, "\nkubectl_finalize_reconcile_passes_total") {
		t.Errorf("pod %s, not the leader, has run passes:\n%s", p.Name, metrics)
	}
	for _, w := range missing(metrics) {
		t.Errorf("pod %s /metrics has no %s:\n%s", p.Name, w, metrics)
	}
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
