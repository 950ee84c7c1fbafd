package reconcile

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// TestAPassRemovesOnlyWhatWasVerified: one pass over objects whose instances are deleted,
// present or still young, in a namespace the policy excludes, and with a finalizer no
// rule matches.
func TestAPassRemovesOnlyWhatWasVerified(t *testing.T) {
	ns, fin, c := world(t)
	excluded := cp.Namespace(t)
	object(t, ns, "gone", fin, "deleted-1", true)
	object(t, ns, "present", fin, "present-1", true)
	object(t, ns, "young", fin+"-young", "deleted-2", true)
	object(t, excluded, "excluded", fin, "deleted-3", true)
	object(t, ns, "unmatched", "other.example.com/x", "deleted-4", true)
	policy := cli.WritePolicy(t, "exclude: {namespaces: ["+excluded+"]}\n",
		c.Rule("dbs", fin, "")+c.Rule("young", fin+"-young", "  minAge: 1h\n"))
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	rep, r := pass(t, cp.AdminKubeconfig, policy, "--audit-log", audit)
	if r.Code != 0 {
		t.Fatalf("code %d: %s", r.Code, r.Stderr)
	}
	if a := action(t, rep, "gone"); a.Result != finalizev1alpha1.ResultRemoved || a.Rule != "dbs" || a.Verdict != finalizev1alpha1.VerdictGone || !strings.Contains(a.Evidence, "404 Not Found") {
		t.Errorf("gone: %+v", a)
	}
	if a := action(t, rep, "present"); a.Result != finalizev1alpha1.ResultKept || a.Verdict != finalizev1alpha1.VerdictPresent || !strings.Contains(a.Message, "the provider answered Present") {
		t.Errorf("present: %+v", a)
	}
	if a := action(t, rep, "young"); a.Result != finalizev1alpha1.ResultTooYoung || a.Verdict != "" || c.Hits("deleted-2") != 0 {
		t.Errorf("young: %+v (asked %d times)", a, c.Hits("deleted-2"))
	}
	for _, a := range rep.Actions {
		if a.Target.Name == "excluded" || a.Target.Name == "unmatched" || a.Target.Name == "control" {
			t.Errorf("an action about %s: %+v", a.Target.Name, a)
		}
	}
	if rep.Summary[finalizev1alpha1.ResultRemoved] != 1 || rep.Summary[finalizev1alpha1.ResultKept] != 1 || rep.Summary[finalizev1alpha1.ResultTooYoung] != 1 || rep.DryRun {
		t.Errorf("summary %+v", rep.Summary)
	}
	// Two audit lines per write, its intent and its record, and an Event.
	b, _ := os.ReadFile(audit)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var intent write.Intent
	var rec write.Record
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &intent) != nil || intent.Stage != write.StageIntent || intent.Target.Name != "gone" ||
		json.Unmarshal([]byte(lines[1]), &rec) != nil || rec.Stage != write.StageComplete || rec.ID != intent.ID || rec.Target.Name != "gone" || !rec.Verified || rec.Event == "" {
		t.Errorf("audit lines %q", lines)
	}
	// The default output is a table.
	r = cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--policy", policy, "--dry-run")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "OBJECT") || !strings.Contains(strings.SplitN(r.Stdout, "\n", 2)[0], "RESULT") ||
		!strings.Contains(r.Stderr, "Dry run, in ") {
		t.Errorf("table: code %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestDryRunWritesNothing: the plan is verified and printed; no resourceVersion moves.
func TestDryRunWritesNothing(t *testing.T) {
	ns, fin, c := world(t)
	before := object(t, ns, "gone", fin, "deleted-1", true).ResourceVersion
	rep, r := pass(t, cp.AdminKubeconfig, cli.WritePolicy(t, "", c.Rule("dbs", fin, "")), "--dry-run")
	if r.Code != 0 || !rep.DryRun || action(t, rep, "gone").Result != finalizev1alpha1.ResultWouldRemove {
		t.Errorf("code %d, report %+v", r.Code, rep)
	}
	if after := resourceVersion(t, ns, "gone"); after != before {
		t.Errorf("a dry run changed the object: %s → %s", before, after)
	}
}

// TestTheBreakerTripsBeforeAnyWrite: a plan larger than --max-removals writes nothing,
// exits 4, and reports the plan.
func TestTheBreakerTripsBeforeAnyWrite(t *testing.T) {
	ns, fin, c := world(t)
	versions := map[string]string{}
	for _, name := range []string{"a", "b", "c"} {
		versions[name] = object(t, ns, name, fin, "deleted-"+name, true).ResourceVersion
	}
	policy := cli.WritePolicy(t, "maxRemovals: 5\n", c.Rule("dbs", fin, ""))
	rep, r := pass(t, cp.AdminKubeconfig, policy, "--max-removals", "2")
	if r.Code != 4 || rep.Breaker == nil || rep.Breaker.Planned != 3 || rep.Breaker.MaxRemovals != 2 || len(rep.Actions) != 3 ||
		!strings.Contains(r.Stderr, "the breaker tripped: the pass planned 3 removals, more than the 2 allowed; nothing was removed") {
		t.Fatalf("code %d, breaker %+v, stderr:\n%s", r.Code, rep.Breaker, r.Stderr)
	}
	for name, rv := range versions {
		if a := action(t, rep, name); a.Result != finalizev1alpha1.ResultKept || !strings.Contains(a.Message, "nothing was written") {
			t.Errorf("%s: %+v", name, a)
		}
		if got := resourceVersion(t, ns, name); got != rv {
			t.Errorf("%s changed: %s → %s", name, rv, got)
		}
	}
	// The policy's own limit allows them.
	if rep, r = pass(t, cp.AdminKubeconfig, policy); r.Code != 0 || rep.Summary[finalizev1alpha1.ResultRemoved] != 3 {
		t.Errorf("maxRemovals 5: code %d, summary %+v", r.Code, rep.Summary)
	}
}

// TestAFailedPassConvergesOnRerun: a provider that fails keeps its objects; once it
// answers, the next pass removes them, and a third finds nothing to do.
func TestAFailedPassConvergesOnRerun(t *testing.T) {
	ns, fin, c := world(t)
	object(t, ns, "now", fin, "deleted-1", true)
	object(t, ns, "later", fin, "error", true)
	policy := cli.WritePolicy(t, "", c.Rule("dbs", fin, ""))
	rep, r := pass(t, cp.AdminKubeconfig, policy)
	if r.Code != 0 || action(t, rep, "later").Result != finalizev1alpha1.ResultKept || action(t, rep, "now").Result != finalizev1alpha1.ResultRemoved {
		t.Fatalf("first pass: code %d, %+v", r.Code, rep.Actions)
	}
	c.Delete("error")
	if rep, r = pass(t, cp.AdminKubeconfig, policy); r.Code != 0 || len(rep.Actions) != 1 || action(t, rep, "later").Result != finalizev1alpha1.ResultRemoved {
		t.Fatalf("second pass: code %d, %+v", r.Code, rep.Actions)
	}
	if rep, r = pass(t, cp.AdminKubeconfig, policy); r.Code != 0 || len(rep.Actions) != 0 {
		t.Fatalf("third pass: code %d, %+v", r.Code, rep.Actions)
	}
}

// TestABrokenRuleFailsThePass: exit 1, the rule named, nothing removed under it.
func TestABrokenRuleFailsThePass(t *testing.T) {
	ns := cp.Namespace(t)
	fin := controlplane.FinalizerOf(t)
	c := fakecloud.New(t)
	object(t, ns, "control", fin, "deleted-live", false)
	object(t, ns, "target", fin, "deleted-1", true)
	rep, r := pass(t, cp.AdminKubeconfig, cli.WritePolicy(t, "", c.Rule("typo", fin, "")))
	if r.Code != 1 || len(rep.Rules) != 1 || !rep.Rules[0].Broken || action(t, rep, "target").Result != finalizev1alpha1.ResultKept ||
		!strings.Contains(r.Stderr, "rule typo is broken") {
		t.Errorf("code %d, rules %+v, stderr:\n%s", r.Code, rep.Rules, r.Stderr)
	}
}

// TestControlsAreDistinctObjects: a rule checks its provider against two live objects.
// The first live object carries two finalizers the rule matches: it is one control, not
// two, so the second control is the other live object, whose instance the broken
// provider calls gone. The rule is broken, the stuck object's Gone is not acted on, and
// the pass exits 1.
func TestControlsAreDistinctObjects(t *testing.T) {
	ns := cp.Namespace(t)
	fin := controlplane.FinalizerOf(t)
	again := fin + "-again"
	c := fakecloud.New(t)
	fixture.Create(t, cp.Kube(t).CoreV1().ConfigMaps(ns), fixture.ConfigMap("a-two-finalizers", map[string]string{"instance": "live-a"}, fin, again), false)
	object(t, ns, "b-live", fin, "deleted-b", false) // live, yet the provider calls it gone
	object(t, ns, "target", fin, "deleted-1", true)
	rep, r := pass(t, cp.AdminKubeconfig, cli.WritePolicy(t, "", c.Rule("pair", fin+", "+again, "  controls: {count: 2}\n")))
	if a := action(t, rep, "target"); a.Result != finalizev1alpha1.ResultKept || !strings.Contains(a.Message, "b-live") {
		t.Errorf("target: %s: %s", a.Result, a.Message)
	}
	if r.Code != 1 || len(rep.Rules) != 1 || !rep.Rules[0].Broken || !strings.Contains(r.Stderr, "rule pair is broken") {
		t.Errorf("code %d, rules %+v, stderr:\n%s", r.Code, rep.Rules, r.Stderr)
	}
	var asked []string
	for _, ctl := range rep.Rules[0].Controls {
		asked = append(asked, ctl.Target.Name)
	}
	if strings.Join(asked, " ") != "a-two-finalizers b-live" || c.Hits("live-a") != 1 || c.Hits("deleted-b") != 1 {
		t.Errorf("controls asked %v (live-a %d times, deleted-b %d times), want each live object once", asked, c.Hits("live-a"), c.Hits("deleted-b"))
	}
	if resourceVersion(t, ns, "target") == "gone" {
		t.Error("the target's finalizer was removed under a broken rule")
	}
}

// TestControlsAreDistinctRequests: a rule checks its provider against two live objects.
// The first two live objects name the same instance: asking about the second is the
// first request again, which shows nothing more of the provider, so the second control
// is the third live object, whose instance the broken provider calls gone. The rule is
// broken, the stuck object's Gone is not acted on, and the pass exits 1.
func TestControlsAreDistinctRequests(t *testing.T) {
	ns, fin, c := cp.Namespace(t), controlplane.FinalizerOf(t), fakecloud.New(t)
	object(t, ns, "a-live", fin, "live-shared", false)
	object(t, ns, "b-live", fin, "live-shared", false) // the same instance as a-live
	object(t, ns, "c-live", fin, "deleted-c", false)   // live, yet the provider calls it gone
	object(t, ns, "target", fin, "deleted-1", true)
	rep, r := pass(t, cp.AdminKubeconfig, cli.WritePolicy(t, "", c.Rule("pair", fin, "  controls: {count: 2}\n")))
	if a := action(t, rep, "target"); a.Result != finalizev1alpha1.ResultKept || !strings.Contains(a.Message, "c-live") {
		t.Errorf("target: %s: %s", a.Result, a.Message)
	}
	if r.Code != 1 || len(rep.Rules) != 1 || !rep.Rules[0].Broken || !strings.Contains(r.Stderr, "rule pair is broken") {
		t.Errorf("code %d, rules %+v, stderr:\n%s", r.Code, rep.Rules, r.Stderr)
	}
	if resourceVersion(t, ns, "target") == "gone" {
		t.Error("the target's finalizer was removed under a broken rule, checked by one request counted twice")
	}
}

// serviceAccount creates a ServiceAccount, applies the RBAC `kubectl finalize rbac`
// prints for it, and returns a kubeconfig with a TokenRequest token.
func serviceAccount(t *testing.T, policy string, edit func(string) string) string {
	t.Helper()
	kubeconfig, _, _ := serviceAccountWith(t, policy, edit, false)
	return kubeconfig
}

// serviceAccountWith is serviceAccount that may add the leader election Role in the
// account's namespace, and returns that namespace and the manifests applied too.
func serviceAccountWith(t *testing.T, policy string, edit func(string) string, leaderElect bool) (kubeconfig, namespace, manifests string) {
	t.Helper()
	ns, name := cp.Namespace(t), "reconciler"
	kube := cp.Kube(t)
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	args := []string{"rbac", "--policy", policy, "--service-account", ns + "/" + name, "--name", ns}
	if leaderElect {
		args = append(args, "--leader-elect-namespace", ns)
	}
	r := cli.Run(t, cp.AdminKubeconfig, args...)
	if r.Code != 0 {
		t.Fatalf("rbac: %s", r.Stderr)
	}
	manifests = r.Stdout
	if edit != nil {
		manifests = edit(manifests)
	}
	apply := cli.Kubectl(cp, "apply", "-f", "-")
	apply.Stdin = manifests
	apply.Succeed(t)
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoles().Delete(t.Context(), ns, metav1.DeleteOptions{})
		_ = kube.RbacV1().ClusterRoleBindings().Delete(t.Context(), ns, metav1.DeleteOptions{})
	})
	cfg, err := cp.ServiceAccountConfig(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfig(cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, ns, manifests
}

// canI asks the real kubectl whether the kubeconfig's user may do something.
func canI(t *testing.T, kubeconfig string, args ...string) bool {
	t.Helper()
	r := cli.Cmd{Path: filepath.Join(cp.BinDir, "kubectl"), Args: append([]string{"--kubeconfig", kubeconfig, "auth", "can-i"}, args...)}.Run(t)
	return strings.TrimSpace(r.Stdout) == "yes"
}

// TestTheGeneratedRBACIsEnoughAndNoMore runs a pass as a ServiceAccount bound to what
// `kubectl finalize rbac` prints, then shows the account can do nothing else.
func TestTheGeneratedRBACIsEnoughAndNoMore(t *testing.T) {
	ns, fin, c := world(t)
	object(t, ns, "gone", fin, "deleted-1", true)
	policy := cli.WritePolicy(t, "", c.Rule("dbs", fin, ""))
	kubeconfig := serviceAccount(t, policy, nil)
	var rep *finalizev1alpha1.ReconcileReport
	var r cli.Result
	// RBAC takes a moment to see new bindings.
	_ = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		rep, r = pass(t, kubeconfig, policy)
		return r.Code == 0 && rep.Summary[finalizev1alpha1.ResultRemoved] == 1, nil
	})
	if r.Code != 0 || action(t, rep, "gone").Result != finalizev1alpha1.ResultRemoved {
		t.Fatalf("a pass as the ServiceAccount: code %d, %+v\n%s", r.Code, rep.Actions, r.Stderr)
	}
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"list", "configmaps", "-A"}, true},
		{[]string{"patch", "configmaps", "-n", ns}, true},
		{[]string{"create", "events.events.k8s.io", "-n", ns}, true},
		{[]string{"delete", "configmaps", "-n", ns}, false},
		{[]string{"update", "configmaps", "-n", ns}, false},
		{[]string{"get", "secrets", "-n", ns}, false},
		{[]string{"list", "secrets", "-A"}, false},
		{[]string{"patch", "pods", "-n", ns}, false},
		{[]string{"list", "pods", "-A"}, false},
		{[]string{"update", "namespaces/finalize"}, false},
		{[]string{"create", "configmaps", "-n", ns}, false},
		{[]string{"*", "*"}, false},
	} {
		if got := canI(t, kubeconfig, tt.args...); got != tt.want {
			t.Errorf("can-i %v: %v, want %v", tt.args, got, tt.want)
		}
	}
}

// TestAMissingPermissionFailsByNameBeforeAnyWrite: without the right to create Events,
// no removal is attempted, and each says what is missing.
func TestAMissingPermissionFailsByNameBeforeAnyWrite(t *testing.T) {
	ns, fin, c := world(t)
	before := object(t, ns, "gone", fin, "deleted-1", true).ResourceVersion
	policy := cli.WritePolicy(t, "", c.Rule("dbs", fin, ""))
	withoutEvents := func(s string) string {
		return regexp.MustCompile(`(?s)- apiGroups:\n  - events.k8s.io\n  resources:\n  - events\n  verbs:\n  - create\n`).ReplaceAllString(s, "")
	}
	kubeconfig := serviceAccount(t, policy, withoutEvents)
	var rep *finalizev1alpha1.ReconcileReport
	var r cli.Result
	_ = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		rep, r = pass(t, kubeconfig, policy)
		return len(rep.Actions) == 1, nil
	})
	a := action(t, rep, "gone")
	if r.Code != 1 || a.Result != finalizev1alpha1.ResultFailed || !strings.Contains(a.Error, "not attempted: it may not create events.events.k8s.io in namespace "+ns) {
		t.Errorf("code %d, %+v", r.Code, a)
	}
	if after := resourceVersion(t, ns, "gone"); after != before {
		t.Errorf("the object was written: %s → %s", before, after)
	}
}

// TestSIGTERMStopsCleanly: continuous mode, stopped mid-pass, exits 0; a rerun finishes.
func TestSIGTERMStopsCleanly(t *testing.T) {
	ns, fin, c := world(t)
	c.Delay = 3 * time.Second
	object(t, ns, "slow", fin, "slow-1", true)
	policy := cli.WritePolicy(t, "", c.Rule("dbs", fin, "  controls: {requireLive: false}\n"))
	p := start(t, cp.AdminKubeconfig, "reconcile", "--policy", policy, "--interval", "1h", "--metrics-bind-address", "0")
	// The pass is asking the slow provider.
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		return c.Hits("slow-1") > 0, nil
	}); err != nil {
		t.Fatalf("the provider was never asked; stderr:\n%s", p.Stderr.String())
	}
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.Wait(t, 15*time.Second); code != 0 || !strings.Contains(p.Stderr.String(), "Stopped.") {
		t.Errorf("exit %d, stderr:\n%s", code, p.Stderr.String())
	}
	c.Delay = 0
	if rep, r := pass(t, cp.AdminKubeconfig, policy); r.Code != 0 || action(t, rep, "slow").Result != finalizev1alpha1.ResultRemoved {
		t.Errorf("the rerun: code %d, %+v", r.Code, rep.Actions)
	}
}

// TestTwoReplicasNeverBothAct: two processes with --leader-elect; one takes the Lease and
// acts, the other waits.
func TestTwoReplicasNeverBothAct(t *testing.T) {
	ns, fin, c := world(t)
	for _, name := range []string{"a", "b", "c", "d"} {
		object(t, ns, name, fin, "deleted-"+name, true)
	}
	policy := cli.WritePolicy(t, "", c.Rule("dbs", fin, ""))
	dir := t.TempDir()
	var ps []*process
	for i := range 2 {
		audit := filepath.Join(dir, "audit-"+string(rune('0'+i)))
		ps = append(ps, start(t, cp.AdminKubeconfig, "reconcile", "--policy", policy, "--interval", "1s", "--leader-elect", "--leader-elect-namespace", ns,
			"--metrics-bind-address", "0", "--audit-log", audit, "-o", "json", "-v", "0"))
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 40*time.Second, true, func(ctx context.Context) (bool, error) {
		left, err := cp.Kube(t).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(left.Items) == 1, nil
	}); err != nil {
		t.Fatalf("the objects were not removed; stderr 0:\n%s\nstderr 1:\n%s", ps[0].Stderr.String(), ps[1].Stderr.String())
	}
	time.Sleep(3 * time.Second) // a few more passes of whoever leads
	for _, p := range ps {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		p.Wait(t, 20*time.Second)
	}
	// One record (the complete line after an intent line) per removal.
	lines := func(i int) int {
		b, _ := os.ReadFile(filepath.Join(dir, "audit-"+string(rune('0'+i))))
		return strings.Count(string(b), `"stage":"Complete"`)
	}
	acted := 0
	for i := range ps {
		if lines(i) > 0 {
			acted++
		}
	}
	if acted != 1 || lines(0)+lines(1) != 4 {
		t.Errorf("audit lines %d and %d: one replica must have made all 4 removals", lines(0), lines(1))
	}
	lease, err := cp.Kube(t).CoordinationV1().Leases(ns).Get(t.Context(), "kubectl-finalize", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		t.Errorf("the lease: %+v %v", lease, err)
	}
}

// TestMetricsCountWhatTheReportSays: /metrics after a pass, and /healthz.
func TestMetricsCountWhatTheReportSays(t *testing.T) {
	ns, fin, c := world(t)
	object(t, ns, "gone", fin, "deleted-1", true)
	object(t, ns, "kept", fin, "present-1", true)
	policy := cli.WritePolicy(t, "", c.Rule("dbs", fin, ""))
	p := start(t, cp.AdminKubeconfig, "reconcile", "--policy", policy, "--interval", "1h", "--metrics-bind-address", "127.0.0.1:0", "-o", "json")
	var addr string
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		m := regexp.MustCompile(`Serving /metrics and /healthz on (\S+)`).FindStringSubmatch(p.Stderr.String())
		if m != nil {
			addr = m[1]
		}
		return addr != "" && strings.Contains(p.Stdout.String(), `"kind": "ReconcileReport"`) && strings.Contains(p.Stdout.String(), `"completionTime"`), nil
	}); err != nil {
		t.Fatalf("no pass; stderr:\n%s", p.Stderr.String())
	}
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// Wait for the report to be observed.
	var metrics string
	_ = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		metrics = get("/metrics")
		return strings.Contains(metrics, "kubectl_finalize_reconcile_passes_total"), nil
	})
	for _, want := range []string{
		`kubectl_finalize_reconcile_actions_total{result="Removed",rule="dbs"} 1`,
		`kubectl_finalize_reconcile_actions_total{result="Kept",rule="dbs"} 1`,
		`kubectl_finalize_provider_verdicts_total{provider="http",rule="dbs",verdict="Gone"} 1`,
		`kubectl_finalize_provider_verdicts_total{provider="http",rule="dbs",verdict="Present"} 1`,
		`kubectl_finalize_reconcile_passes_total{outcome="ok"} 1`,
		`kubectl_finalize_rule_broken{rule="dbs"} 0`,
		`kubectl_finalize_rule_cannot_verify{rule="dbs"} 0`,
		"kubectl_finalize_reconcile_last_success_timestamp_seconds 1",
		"kubectl_finalize_reconcile_pass_duration_seconds_count 1",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepMetrics(metrics))
		}
	}
	if h := get("/healthz"); h != "ok" {
		t.Errorf("/healthz: %q", h)
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	p.Wait(t, 10*time.Second)
}

func grepMetrics(s string) string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "kubectl_finalize") {
			out = append(out, sc.Text())
		}
	}
	return strings.Join(out, "\n")
}

// TestTheRBACOfTheExamplePolicyIsCheckedIn: docs/deploy holds what `rbac` prints.
func TestTheRBACOfTheExamplePolicyIsCheckedIn(t *testing.T) {
	for _, base := range []struct{ dir, extra string }{{"cronjob", ""}, {"deployment", "kubectl-finalize"}} {
		args := []string{"rbac", "--policy", "../../docs/deploy/base/policy.yaml", "--service-account", "kubectl-finalize/kubectl-finalize"}
		if base.extra != "" {
			args = append(args, "--leader-elect-namespace", base.extra)
		}
		r := cli.Run(t, cp.AdminKubeconfig, args...)
		want, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy", base.dir, "rbac.yaml"))
		if err != nil || r.Code != 0 || r.Stdout != string(want) {
			t.Errorf("docs/deploy/%s/rbac.yaml is stale (regenerate it with: kubectl finalize %s > docs/deploy/%s/rbac.yaml): %v\n%s", base.dir, strings.Join(args, " "), base.dir, err, r.Stderr)
		}
	}
}

// TestTheDeployBasesRenderAndTheAPIServerAcceptsThem: kubectl kustomize renders each base,
// and the API server accepts the result (--dry-run=server).
func TestTheDeployBasesRenderAndTheAPIServerAcceptsThem(t *testing.T) {
	for _, base := range []string{"cronjob", "deployment"} {
		rendered := cli.Kubectl(cp, "kustomize", filepath.Join("..", "..", "docs", "deploy", base)).Succeed(t).Stdout
		docs := strings.Split(rendered, "\n---\n")
		kinds := map[string]bool{}
		for _, d := range docs {
			var obj struct{ Kind string }
			if err := yaml.Unmarshal([]byte(d), &obj); err == nil {
				kinds[obj.Kind] = true
			}
		}
		for _, want := range []string{"Namespace", "ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding"} {
			if !kinds[want] {
				t.Errorf("%s renders no %s: %v", base, want, kinds)
			}
		}
		// A server dry run of what lives in a namespace needs the namespace.
		_, _ = cp.Kube(t).CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubectl-finalize"}}, metav1.CreateOptions{})
		apply := cli.Kubectl(cp, "apply", "--dry-run=server", "-f", "-")
		apply.Stdin = rendered
		if r := apply.Run(t); r.Code != 0 {
			t.Errorf("the API server refuses docs/deploy/%s: exit %d\n%s%s", base, r.Code, r.Stdout, r.Stderr)
		}
	}
}

// TestANamespaceFinalizerOnlyWhenTheNamespaceIsEmpty: a rule that allows the kubernetes
// finalizer of namespaces removes it from an empty namespace, never from one that still
// holds objects; without allowSystem, from neither.
func TestANamespaceFinalizerOnlyWhenTheNamespaceIsEmpty(t *testing.T) {
	cp.RequireNoControllerManager(t)
	kube := cp.Kube(t)
	full, empty := cp.Namespace(t), cp.Namespace(t)
	if _, err := kube.CoreV1().ConfigMaps(full).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "left-behind"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{full, empty} {
		if _, err := kube.CoreV1().Namespaces().Patch(t.Context(), ns, "application/merge-patch+json", []byte(`{"metadata":{"labels":{"kubectl-finalize.test/namespace-rule":"yes"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := kube.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rule := func(allowSystem string) string {
		return `- name: namespaces
  finalizers: [kubernetes]
  resources: [namespaces]
  selector: "kubectl-finalize.test/namespace-rule=yes"
  allowSystem: ` + allowSystem + `
  verify:
    kubernetes: {resource: secrets, namespace: "{.metadata.name}", name: never-created}
  controls: {count: 0}
`
	}
	rep, r := pass(t, cp.AdminKubeconfig, cli.WritePolicy(t, "", rule("false")))
	for _, ns := range []string{full, empty} {
		if a := action(t, rep, ns); a.Result != finalizev1alpha1.ResultKept || !strings.Contains(a.Message, "system finalizer") {
			t.Errorf("without allowSystem, %s: %+v (code %d)", ns, a, r.Code)
		}
	}
	rep, r = pass(t, cp.AdminKubeconfig, cli.WritePolicy(t, "", rule("true")))
	if a := action(t, rep, full); a.Result != finalizev1alpha1.ResultKept || !strings.Contains(a.Message, "the namespace still holds 1 objects") {
		t.Errorf("a namespace with content: %+v (code %d, %s)", a, r.Code, r.Stderr)
	}
	if a := action(t, rep, empty); a.Result != finalizev1alpha1.ResultRemoved || a.Verdict != finalizev1alpha1.VerdictGone {
		t.Errorf("an empty namespace: %+v (code %d, %s)", a, r.Code, r.Stderr)
	}
	if _, err := kube.CoreV1().Namespaces().Get(t.Context(), empty, metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %s is still there", empty)
	}
}
