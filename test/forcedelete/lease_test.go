package forcedelete

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
	"github.com/kubectl-finalize/kubectl-finalize/test/apiproxy"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
)

// renew writes the Lease of node name as its kubelet renews it, with renewTime renewed
// (its own clock's time).
func renew(ctx context.Context, kc kubernetes.Interface, name string, renewed time.Time) error {
	leases := kc.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(renewed))
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// renewing renews the Lease of node name every 2 s until the test ends, as a running
// kubelet does whose machine's clock is behind the API server's by behind: every
// renewTime it writes is behind in the past.
func renewing(t *testing.T, name string, behind time.Duration) {
	t.Helper()
	kubeletLease(t, name, time.Now().Add(-behind))
	kc := cp.Kube(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_ = renew(ctx, kc, name, time.Now().Add(-behind)) // a conflict is renewed at the next tick, as a kubelet does
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// ageLease makes the last change of the Lease of node name look ago old by the API
// server's clock too: its one managedFields entry (the test's) becomes the kubelet's,
// written ago ago. The API server takes the managedFields a client sends as they are,
// and stamps its own time only on the entry of a manager whose fields the write
// changed: this write changes none. (A write that changes nothing but the times of
// managedFields is no write at all: the API server keeps the times it had. Hence the
// kubelet's name, under which a kubelet writes its Lease.) It is how a Lease looks that
// nothing renewed for ago.
func ageLease(t *testing.T, name string, ago time.Duration) {
	t.Helper()
	leases := cp.Kube(t).CoordinationV1().Leases(corev1.NamespaceNodeLease)
	l, err := leases.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.ManagedFields) != 1 || l.ManagedFields[0].Manager == "kubelet" {
		t.Fatalf("Lease %s: want one managedFields entry, not the kubelet's, to age: %+v", name, l.ManagedFields)
	}
	l.ManagedFields[0].Manager = "kubelet"
	l.ManagedFields[0].Time = ptr.To(metav1.NewTime(l.ManagedFields[0].Time.Add(-ago)))
	if l, err = leases.Update(t.Context(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range l.ManagedFields {
		if f.Time == nil || time.Since(f.Time.Time) < ago-time.Minute {
			t.Fatalf("Lease %s was not aged by %s: %+v", name, ago, l.ManagedFields)
		}
	}
}

// leaseWatch says whether r is a watch of the Lease of node name.
func leaseWatch(r *http.Request, name string) bool {
	q := r.URL.Query()
	return r.Method == http.MethodGet && q.Get("watch") == "true" && strings.HasSuffix(r.URL.Path, "/namespaces/"+corev1.NamespaceNodeLease+"/leases") &&
		q.Get("fieldSelector") == "metadata.name="+name
}

// TestAKubeletWhoseClockIsBehindStopsAForceDeletion: a kubelet that runs, renewing its
// Lease every 2 s, on a machine whose clock is 10 minutes behind the API server's: every
// renewTime it writes looks 10 minutes old. The API server stamps the time of each change
// of the Lease with its own clock (managedFields), so the kubelet shows alive: neither
// `remove --force-unverified --reason` nor a pass whose rule's provider calls the
// machine gone deletes a pod of its node (KubeletAlive).
func TestAKubeletWhoseClockIsBehindStopsAForceDeletion(t *testing.T) {
	c := fakecloud.New(t)
	ns := cp.Namespace(t)
	name := "fd-behind-" + ns
	node(t, "fd-live-"+ns, "live-"+ns, true) // the provider's control: a Ready node, whose machine runs
	silentNode(t, name, "deleted-"+ns, corev1.ConditionUnknown, time.Now().Add(-time.Hour))
	renewing(t, name, 10*time.Minute)
	stuckPod(t, ns, "web-0", name, nil)
	stuckPod(t, ns, "web-1", name, yes)

	r := cli.Run(t, cp.AdminKubeconfig, "remove", "pod/web-0", "-n", ns, "--yes", "--force-unverified", "--reason", "the machine is off (INC-12)",
		"--pod-grace-margin", margin, "-o", "json")
	var out finalizev1alpha1.RemovalPlan
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v: %s\nstderr:\n%s", err, r.Stdout, r.Stderr)
	}
	if r.Code != 1 || len(out.Refusals) != 1 || out.Refusals[0].Kind != finalizev1alpha1.RefusalKubeletAlive ||
		!strings.Contains(out.Refusals[0].Message, "kube-node-lease/"+name) || !strings.Contains(out.Refusals[0].Message, "by the API server's clock") {
		t.Errorf("remove --force-unverified: code %d, want 1 refused KubeletAlive by the Lease's last change; plan %+v\nstderr:\n%s", r.Code, out, r.Stderr)
	}

	policy := nodePolicy(t, ns, fmt.Sprintf(`  verify:
    http:
      url: "%s/instances/{identity.providerID}"
      tls: {caFile: %q}
      timeout: 3s
`, c.URL, c.CAFile))
	r = cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--policy", policy, "--pod-grace-margin", margin, "--audit-log", filepath.Join(t.TempDir(), "audit.jsonl"), "-o", "json")
	rep := cli.Report(t, r)
	var got *finalizev1alpha1.Removal
	for i := range rep.Actions {
		if rep.Actions[i].Target.Name == "web-1" {
			got = &rep.Actions[i]
		}
	}
	if got == nil || got.Result != finalizev1alpha1.ResultKept || !strings.Contains(got.Message, "kube-node-lease/"+name) {
		t.Errorf("reconcile: code %d, action %+v, want web-1 kept by its kubelet's Lease\nstderr:\n%s", r.Code, got, r.Stderr)
	}
	for _, pod := range []string{"web-0", "web-1"} {
		if !podExists(t, ns, pod) {
			t.Errorf("pod %s of a running kubelet was deleted", pod)
		}
	}
}

// plannedForced plans the forced deletion of pod p (its node's Lease silent by every
// sign the plan reads) through kc, and returns its target.
func plannedForced(t *testing.T, kc kubernetes.Interface, p *corev1.Pod) plan.Target {
	t.Helper()
	planner := &plan.Planner{Kube: kc}
	planned := planner.Plan(t.Context(), []plan.Request{{Object: &kube.Object{Resource: pods, Meta: p.ObjectMeta}, ForceDelete: true}},
		plan.Options{ForceUnverified: true, Reason: "the machine is off (INC-13)", PodGraceMargin: time.Second})
	if len(planned.Actions) != 1 {
		t.Fatalf("plan %+v", planned)
	}
	return planned.Actions[0].Target
}

// silentKubelet makes a NotReady node whose Lease no kubelet renewed for an hour, by its
// renewTime and by the API server's clock, and a pod web-0 of it stuck Terminating.
func silentKubelet(t *testing.T, ns, name, providerID string) *corev1.Pod {
	t.Helper()
	silentNode(t, name, providerID, corev1.ConditionUnknown, time.Now().Add(-time.Hour))
	kubeletLease(t, name, time.Now().Add(-time.Hour))
	ageLease(t, name, time.Hour)
	return stuckPod(t, ns, "web-0", name, yes)
}

// TestALeaseThatChangesDuringTheWatchStopsTheDeletion: a Lease whose renewTime and last
// change are an hour old, so that nothing the plan reads shows its kubelet alive; right
// before the DELETE the write watches the Lease, and the kubelet renews it while the
// watch runs (once the API server answered the watch, seen through a proxy): the API
// server shows the change, and the pod is not deleted.
func TestALeaseThatChangesDuringTheWatchStopsTheDeletion(t *testing.T) {
	ns := cp.Namespace(t)
	name := "fd-watched-" + ns
	p := silentKubelet(t, ns, name, "")
	proxy, _ := apiproxy.ForTest(t, cp.Config)
	kc := kubernetes.NewForConfigOrDie(&rest.Config{Host: proxy.URL})
	target := plannedForced(t, kc, p)

	admin := cp.Kube(t)
	var renewed atomic.Bool
	proxy.Cut(func(r *http.Request, answered bool) bool {
		if answered && leaseWatch(r, name) && !renewed.Swap(true) {
			if err := renew(context.Background(), admin, name, time.Now().Add(-time.Hour)); err != nil {
				t.Errorf("renewing the Lease: %v", err)
			}
		}
		return false
	})
	_, err := (&write.Remover{Kube: kc}).ForceDelete(t.Context(), target, write.DryRunNone)
	if !renewed.Load() {
		t.Error("the Lease was not watched before the DELETE")
	}
	if err == nil || !strings.Contains(err.Error(), "not deleted") || !strings.Contains(err.Error(), "the API server showed its Lease "+corev1.NamespaceNodeLease+"/"+name+" change") {
		t.Errorf("a Lease renewed during the watch: %v", err)
	}
	if !podExists(t, ns, "web-0") {
		t.Error("the pod of a kubelet that renewed its Lease was deleted")
	}
}

// TestALeaseThatCannotBeWatchedStopsTheDeletion: the same silent Lease, but the watch
// before the DELETE cannot be made: its connection is closed without an answer (through
// a proxy), or the account may read the Lease and not watch it (an RBAC made for an
// older version). Either refuses the deletion, never allows it.
func TestALeaseThatCannotBeWatchedStopsTheDeletion(t *testing.T) {
	t.Parallel() // see the package doc: no Ready node, no provider
	ns := cp.Namespace(t)
	name := "fd-unwatched-" + ns
	p := silentKubelet(t, ns, name, "")
	target := plannedForced(t, cp.Kube(t), p)

	proxy, _ := apiproxy.ForTest(t, cp.Config)
	proxy.Cut(func(r *http.Request, answered bool) bool { return leaseWatch(r, name) })
	_, err := (&write.Remover{Kube: kubernetes.NewForConfigOrDie(&rest.Config{Host: proxy.URL})}).ForceDelete(t.Context(), target, write.DryRunNone)
	if err == nil || !strings.Contains(err.Error(), "not deleted") || !strings.Contains(err.Error(), "watching the Lease "+corev1.NamespaceNodeLease+"/"+name) {
		t.Errorf("a watch cut: %v", err)
	}

	user := "fd-no-watch-" + ns
	grantWithoutWatch(t, user)
	cfg, err := cp.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&write.Remover{Kube: kubernetes.NewForConfigOrDie(cfg)}).ForceDelete(t.Context(), target, write.DryRunNone)
	if err == nil || !strings.Contains(err.Error(), "not deleted") || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a watch forbidden: %v", err)
	}
	if !podExists(t, ns, "web-0") {
		t.Error("the pod was deleted without a watch of its node's Lease")
	}
}

// grantWithoutWatch lets user do what a force deletion did before it watched the Lease,
// and list the Lease: get and delete pods, get nodes, get and list leases.
func grantWithoutWatch(t *testing.T, user string) {
	t.Helper()
	kc := cp.Kube(t)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list"}},
	}}
	if _, err := kc.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if _, err := kc.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Kube(t).RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
		_ = cp.Kube(t).RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{})
	})
	cfg, err := cp.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	ukc := kubernetes.NewForConfigOrDie(cfg)
	// RBAC takes a moment to see a new binding.
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := ukc.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		t.Fatal("the binding never took effect")
	}
}

// TestAForceDeletionRunsOnItsGeneratedRBAC: a pass as a ServiceAccount bound to what
// `kubectl finalize rbac` prints for a waitsForNode rule force-deletes a pod whose
// machine the provider calls gone: the Role in kube-node-lease lets it read, list and
// watch the node's Lease, and the pass asks for each before it writes.
func TestAForceDeletionRunsOnItsGeneratedRBAC(t *testing.T) {
	c := fakecloud.New(t)
	ns := cp.Namespace(t)
	name := "fd-rbac-" + ns
	node(t, "fd-live-"+ns, "live-"+ns, true)
	silentKubelet(t, ns, name, "deleted-"+ns)
	policy := nodePolicy(t, ns, fmt.Sprintf(`  verify:
    http:
      url: "%s/instances/{identity.providerID}"
      tls: {caFile: %q}
      timeout: 3s
`, c.URL, c.CAFile))
	kubeconfig := serviceAccountWith(t, policy)
	r := cli.Run(t, kubeconfig, "reconcile", "--once", "--policy", policy, "--pod-grace-margin", margin, "--audit-log", filepath.Join(t.TempDir(), "audit.jsonl"), "-o", "json")
	rep := cli.Report(t, r)
	if r.Code != 0 || len(rep.Actions) != 1 || rep.Actions[0].Result != finalizev1alpha1.ResultRemoved {
		t.Errorf("code %d, actions %+v; stderr:\n%s", r.Code, rep.Actions, r.Stderr)
	}
	if podExists(t, ns, "web-0") {
		t.Error("the pod was not deleted")
	}
}

// serviceAccountWith binds a new ServiceAccount to what `kubectl finalize rbac` prints
// for policy, and returns a kubeconfig of it.
func serviceAccountWith(t *testing.T, policy string) string {
	t.Helper()
	ns, name := cp.Namespace(t), "reconciler"
	kc := cp.Kube(t)
	if _, err := kc.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := cli.Run(t, cp.AdminKubeconfig, "rbac", "--policy", policy, "--service-account", ns+"/"+name, "--name", ns)
	if r.Code != 0 {
		t.Fatalf("rbac: %s", r.Stderr)
	}
	apply := cli.Kubectl(cp, "apply", "-f", "-")
	apply.Stdin = r.Stdout
	apply.Succeed(t)
	t.Cleanup(func() {
		_ = kc.RbacV1().ClusterRoles().Delete(context.Background(), ns, metav1.DeleteOptions{})
		_ = kc.RbacV1().ClusterRoleBindings().Delete(context.Background(), ns, metav1.DeleteOptions{})
		_ = kc.RbacV1().Roles(corev1.NamespaceNodeLease).Delete(context.Background(), ns+"-node-leases", metav1.DeleteOptions{})
		_ = kc.RbacV1().RoleBindings(corev1.NamespaceNodeLease).Delete(context.Background(), ns+"-node-leases", metav1.DeleteOptions{})
	})
	cfg, err := cp.ServiceAccountConfig(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	sa := kubernetes.NewForConfigOrDie(cfg)
	// RBAC takes a moment to see new bindings.
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := sa.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "none", metav1.GetOptions{})
		return err == nil || !strings.Contains(err.Error(), "forbidden"), nil
	}); err != nil {
		t.Fatal("the bindings never took effect")
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfig(cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// TestANotFoundThatIsNotTheAPIServersIsNoNodesAbsence: a NotReady node whose kubelet has
// been silent for an hour (cut off from the API server, its machine may still run the
// pod), and a rule that verifies by the Node object's absence alone. The Node exists,
// so the rule has nothing to verify with. Through a proxy in front of the API server
// that answers "404 page not found" for the Node's path (a gateway that does not pass it
// on), the Node reads as absent; that 404 is not the API server's NotFound of the Node,
// so it verifies nothing, and the pod stays.
func TestANotFoundThatIsNotTheAPIServersIsNoNodesAbsence(t *testing.T) {
	ns := cp.Namespace(t)
	name := "fd-proxied-" + ns
	silentKubelet(t, ns, name, "")
	proxy, kubeconfig := apiproxy.ForTest(t, cp.Config)
	proxy.Answer(func(r *http.Request) (apiproxy.Answer, bool) {
		if r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes/"+name {
			return apiproxy.Answer{Code: http.StatusNotFound, ContentType: "text/plain; charset=utf-8", Body: "404 page not found\n"}, true
		}
		return apiproxy.Answer{}, false
	})
	r := cli.Run(t, kubeconfig, "remove", "pod/web-0", "-n", ns, "--yes", "--policy", nodePolicy(t, ns, ""), "--pod-grace-margin", margin)
	if !podExists(t, ns, "web-0") {
		t.Fatalf("the pod was force-deleted on a 404 the API server did not give (code %d): %s", r.Code, r.Stderr)
	}
	if r.Code == 0 || !strings.Contains(r.Stderr, "node "+name) || !strings.Contains(r.Stderr, "not the API server's NotFound") {
		t.Errorf("code %d, stderr:\n%s", r.Code, r.Stderr)
	}
}
