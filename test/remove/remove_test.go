package remove

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

var force = []string{"--force-unverified", "--reason", "operator uninstalled; database deleted by hand (INC-1234)"}

// stuckConfigMap creates a configmap with finalizers and deletes it.
func stuckConfigMap(t *testing.T, ns, name string, fins ...string) *corev1.ConfigMap {
	t.Helper()
	return fixture.StuckConfigMap(t, cp.Kube(t), ns, name, nil, fins...)
}

func args(a ...[]string) []string {
	var out []string
	for _, x := range a {
		out = append(out, x...)
	}
	return out
}

func TestRemovingOneFinalizerLeavesTheOthers(t *testing.T) {
	ns := cp.Namespace(t)
	stuckConfigMap(t, ns, "cfg", "a.example.com/x", "b.example.com/y", "c.example.com/z")
	r := cli.Run(t, cp.AdminKubeconfig, args([]string{"remove", "configmap/cfg", "-n", ns, "--finalizer", "b.example.com/y", "--yes"}, force)...)
	if r.Code != 0 {
		t.Fatalf("code %d: %s", r.Code, r.Stderr)
	}
	if want := "configmaps/cfg -n " + ns + ": finalizer b.example.com/y removed; still held by: a.example.com/x, c.example.com/z\n"; r.Stdout != want {
		t.Errorf("stdout %q, want %q", r.Stdout, want)
	}
	cm, err := cp.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "cfg", metav1.GetOptions{})
	if err != nil || !slices.Equal(cm.Finalizers, []string{"a.example.com/x", "c.example.com/z"}) {
		t.Errorf("finalizers %v, %v", cm.Finalizers, err)
	}
}

func TestRemovingTheLastFinalizerDeletesTheObject(t *testing.T) {
	ns := cp.Namespace(t)
	stuckConfigMap(t, ns, "a", "a.example.com/x")
	stuckConfigMap(t, ns, "b", "a.example.com/x", "b.example.com/y")
	// Two objects, TYPE NAME... form, every finalizer one at a time.
	r := cli.Run(t, cp.AdminKubeconfig, args([]string{"remove", "configmap", "a", "b", "-n", ns, "--all-finalizers", "--yes"}, force)...)
	if r.Code != 0 {
		t.Fatalf("code %d: %s", r.Code, r.Stderr)
	}
	for _, want := range []string{
		"configmaps/a -n " + ns + ": finalizer a.example.com/x removed; the object is gone",
		"configmaps/b -n " + ns + ": finalizer a.example.com/x removed; still held by: b.example.com/y",
		"configmaps/b -n " + ns + ": finalizer b.example.com/y removed; the object is gone",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.Stdout)
		}
	}
	for _, name := range []string{"a", "b"} {
		if _, err := cp.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("configmap %s still exists: %v", name, err)
		}
	}
}

func TestDryRunsChangeNothing(t *testing.T) {
	ns := cp.Namespace(t)
	before := stuckConfigMap(t, ns, "cfg", "a.example.com/x")
	current, _ := cp.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "cfg", metav1.GetOptions{})
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, mode := range []string{"server", "client"} {
		r := cli.Run(t, cp.AdminKubeconfig, args([]string{"remove", "configmap/cfg", "-n", ns, "--finalizer", "a.example.com/x", "--dry-run=" + mode, "--audit-log", audit}, force)...)
		if r.Code != 0 || r.Stdout != "configmaps/cfg -n "+ns+": finalizer a.example.com/x would be removed ("+mode+" dry run)\n" {
			t.Errorf("--dry-run=%s: code %d, stdout %q, stderr %q", mode, r.Code, r.Stdout, r.Stderr)
		}
	}
	after, err := cp.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "cfg", metav1.GetOptions{})
	if err != nil || after.ResourceVersion != current.ResourceVersion || !slices.Equal(after.Finalizers, before.Finalizers) {
		t.Errorf("a dry run changed the object: %v, resourceVersion %s → %s, finalizers %v", err, current.ResourceVersion, after.ResourceVersion, after.Finalizers)
	}
	if _, err := os.Stat(audit); !os.IsNotExist(err) {
		t.Errorf("a dry run writes no audit line: %v", err)
	}
}

func TestWithoutATerminalAndWithoutYesNothingIsRemoved(t *testing.T) {
	ns := cp.Namespace(t)
	stuckConfigMap(t, ns, "cfg", "a.example.com/x")
	r := cli.RunWithInput(t, cp.AdminKubeconfig, "y\n", args([]string{"remove", "configmap/cfg", "-n", ns, "--finalizer", "a.example.com/x"}, force)...)
	if r.Code != 2 || !strings.Contains(r.Stderr, "refusing to remove finalizers without confirmation: stdin is not a terminal; pass --yes to confirm") || r.Stdout != "" {
		t.Errorf("code %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	cm, err := cp.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "cfg", metav1.GetOptions{})
	if err != nil || len(cm.Finalizers) != 1 {
		t.Errorf("the finalizer must stay: %v %v", cm, err)
	}
}

func TestRefusals(t *testing.T) {
	ns := cp.Namespace(t)
	stuckConfigMap(t, ns, "cfg", "a.example.com/x", "orphan")
	c := cp.Kube(t)
	if _, err := c.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live", Finalizers: []string{"a.example.com/x"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unverified", []string{"configmap/cfg", "--finalizer", "a.example.com/x", "--yes"}, 2,
			"finalizer a.example.com/x: nothing verified that what the finalizer guards is done"},
		{"a system finalizer", args([]string{"configmap/cfg", "--finalizer", "orphan", "--yes"}, force), 2,
			"finalizer orphan: it is a system finalizer of garbage collector (kube-controller-manager), which removes it once dependents are orphaned (their ownerReferences removed) first; removing it by hand breaks that guarantee"},
		{"no such finalizer", args([]string{"configmap/cfg", "--finalizer", "nope.example.com/x", "--yes"}, force), 1,
			"finalizer nope.example.com/x: it has no such finalizer (it has: a.example.com/x, orphan)"},
		{"an object that is not being deleted", args([]string{"configmap/live", "--finalizer", "a.example.com/x", "--yes"}, force), 1,
			"is not being deleted: removing a finalizer now would let its deletion skip the cleanup later; delete it first"},
		{"an object that does not exist", args([]string{"configmap/nope", "--finalizer", "a.example.com/x", "--yes"}, force), 1,
			`Error from server (NotFound): configmaps "nope" not found`},
		{"--reason is required", []string{"configmap/cfg", "--finalizer", "a.example.com/x", "--force-unverified", "--yes"}, 2,
			"--force-unverified requires --reason"},
		{"nothing to remove named", args([]string{"configmap/cfg", "--yes"}, force), 2,
			"name the finalizers to remove with --finalizer, or give --all-finalizers"},
		{"a bad dry run", args([]string{"configmap/cfg", "--finalizer", "a.example.com/x", "--dry-run=maybe"}, force), 2,
			`Invalid dry-run value (maybe). Must be "none", "server", or "client".`},
		// One refusal stops the whole plan: the allowed removal does not happen either.
		{"plan then act", args([]string{"configmap/cfg", "--all-finalizers", "--yes"}, force), 2,
			"refusing 1 of 2 requested removals"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli.Run(t, cp.AdminKubeconfig, append([]string{"remove", "-n", ns}, tt.args...)...)
			if r.Code != tt.code || !strings.Contains(r.Stderr, tt.want) || r.Stdout != "" {
				t.Errorf("code %d (want %d), stdout %q, stderr:\n%s\nwant it to contain %q", r.Code, tt.code, r.Stdout, r.Stderr, tt.want)
			}
		})
	}
	cm, err := c.CoreV1().ConfigMaps(ns).Get(t.Context(), "cfg", metav1.GetOptions{})
	if err != nil || !slices.Equal(cm.Finalizers, []string{"a.example.com/x", "orphan"}) {
		t.Errorf("refusals must change nothing: %v %v", cm.Finalizers, err)
	}
}

func TestAFailingWebhookFailsTheRemoval(t *testing.T) {
	s, err := seed.New(cp.Config, "hook")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := s.WebhookBlocking(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Kube(t).AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), s.GuardWebhook(), metav1.DeleteOptions{})
	})
	o := sc.Stuck[0]
	for _, dry := range []string{"none", "server"} {
		r := cli.Run(t, cp.AdminKubeconfig, args([]string{"remove", "configmap/" + o.Name, "-n", o.Namespace, "--finalizer", o.Finalizers[0], "--yes", "--dry-run=" + dry}, force)...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "an admission webhook refused the write (run kubectl finalize doctor to see which, and why)") ||
			!strings.Contains(r.Stderr, `failed calling webhook "guard.locker.example.com"`) {
			t.Errorf("--dry-run=%s: code %d, stderr:\n%s", dry, r.Code, r.Stderr)
		}
		// The preview already said why.
		if !strings.Contains(r.Stderr, "WebhookBlocking") {
			t.Errorf("the preview does not show the cause: %s", r.Stderr)
		}
	}
	cm, err := cp.Kube(t).CoreV1().ConfigMaps(o.Namespace).Get(t.Context(), o.Name, metav1.GetOptions{})
	if err != nil || len(cm.Finalizers) != 1 {
		t.Errorf("the finalizer must stay: %v %v", cm, err)
	}
}

func TestEventsAuditLinesAndBackups(t *testing.T) {
	ctx := t.Context()
	ns := cp.Namespace(t)
	kept := stuckConfigMap(t, ns, "kept", "a.example.com/x", "b.example.com/y")
	// A namespace being deleted refuses new Events: its Event goes to default.
	gone := cp.Namespace(t)
	inGone := stuckConfigMap(t, gone, "cfg", "a.example.com/x")
	if err := cp.Kube(t).CoreV1().Namespaces().Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	backups := filepath.Join(dir, "backups")
	for _, a := range [][]string{
		{"remove", "configmap/kept", "-n", ns, "--finalizer", "b.example.com/y"},
		{"remove", "configmap/cfg", "-n", gone, "--finalizer", "a.example.com/x"},
	} {
		r := cli.Run(t, cp.AdminKubeconfig, args(a, force, []string{"--yes", "--audit-log", audit, "--backup-dir", backups})...)
		if r.Code != 0 {
			t.Fatalf("%v: code %d: %s", a, r.Code, r.Stderr)
		}
	}
	// Audit lines.
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	// Each removal writes an intent line, then its record (stage Complete): the records.
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(l, `"stage":"Complete"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || strings.Count(string(b), `"stage":"Intent"`) != 2 {
		t.Fatalf("audit lines: %q", lines)
	}
	var recs []write.Record
	for _, l := range lines {
		var rec write.Record
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		recs = append(recs, rec)
	}
	first := recs[0]
	if first.User != "kubectl-finalize-admin" || first.Action != "FinalizerForceRemoved" || first.Finalizer != "b.example.com/y" ||
		first.Target.UID != kept.UID || first.Verified || first.Reason != force[2] || first.Result != write.Removed ||
		first.Deleted || !slices.Equal(first.Remaining, []string{"a.example.com/x"}) || first.Event == "" || first.Backup == "" {
		t.Errorf("audit record %+v", first)
	}
	if !recs[1].Deleted || !strings.HasPrefix(recs[1].Event, "default/") {
		t.Errorf("second record: deleted %v, event %q (want it in default)", recs[1].Deleted, recs[1].Event)
	}
	// Events regard the objects.
	for i, want := range []struct {
		ns  string
		uid string
	}{{ns, string(kept.UID)}, {metav1.NamespaceDefault, string(inGone.UID)}} {
		evNS, evName, _ := strings.Cut(recs[i].Event, "/")
		ev, err := cp.Kube(t).EventsV1().Events(evNS).Get(ctx, evName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("event %s: %v", recs[i].Event, err)
		}
		if evNS != want.ns || string(ev.Regarding.UID) != want.uid || ev.Reason != "FinalizerForceRemoved" || ev.ReportingController != "kubectl-finalize" ||
			ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "unverified, forced with reason: "+force[2]) || !strings.Contains(ev.Note, "by kubectl-finalize-admin") {
			t.Errorf("event %+v", ev)
		}
	}
	// Backups hold the whole object as it was before the removal.
	var backup map[string]any
	raw, err := os.ReadFile(first.Backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &backup); err != nil {
		t.Fatal(err)
	}
	meta := backup["metadata"].(map[string]any)
	if meta["uid"] != string(kept.UID) || len(meta["finalizers"].([]any)) != 2 || backup["kind"] != "ConfigMap" {
		t.Errorf("backup %s: %v", first.Backup, backup)
	}
}

// TestTheNamespaceFinalizer removes spec.finalizers through /finalize: refused while the
// namespace holds objects, allowed when it is empty. Without kube-controller-manager
// nothing else would ever remove it.
func TestTheNamespaceFinalizer(t *testing.T) {
	ctx := t.Context()
	c := cp.Kube(t)
	full := cp.Namespace(t)
	if _, err := c.CoreV1().ConfigMaps(full).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "left-behind"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	empty := cp.Namespace(t)
	for _, ns := range []string{full, empty} {
		if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	flags := args([]string{"--finalizer", "kubernetes", "--allow-system", "--yes"}, force)
	r := cli.Run(t, cp.AdminKubeconfig, append([]string{"remove", "namespace/" + full}, flags...)...)
	if r.Code != 2 || !strings.Contains(r.Stderr, "the namespace still holds 1 objects (configmaps: 1: configmaps/left-behind)") || !strings.Contains(r.Stderr, "--allow-stranding") {
		t.Errorf("a namespace with content: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
	r = cli.Run(t, cp.AdminKubeconfig, append([]string{"remove", "namespace/" + empty}, flags...)...)
	if r.Code != 0 || r.Stdout != "namespaces/"+empty+": finalizer kubernetes removed; the object is gone\n" {
		t.Errorf("an empty namespace: code %d, stdout %q, stderr %s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, empty, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s still exists: %v", empty, err)
	}
	// --allow-stranding: the namespace goes, its configmap stays in etcd.
	r = cli.Run(t, cp.AdminKubeconfig, append([]string{"remove", "namespace/" + full, "--allow-stranding"}, flags...)...)
	if r.Code != 0 {
		t.Fatalf("--allow-stranding: code %d: %s", r.Code, r.Stderr)
	}
	if _, err := c.CoreV1().ConfigMaps(full).Get(ctx, "left-behind", metav1.GetOptions{}); err != nil {
		t.Errorf("expected the configmap stranded in etcd: %v", err)
	}
	_ = c.CoreV1().ConfigMaps(full).Delete(ctx, "left-behind", metav1.DeleteOptions{})
}

// TestAConflictOnFinalizeIsDecidedAgain: /finalize carries the resourceVersion read; a
// write in between makes it fail with 409, and the removal reads and decides again.
func TestAConflictOnFinalizeIsDecidedAgain(t *testing.T) {
	ctx := t.Context()
	c := cp.Kube(t)
	ns := cp.Namespace(t)
	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cur, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := remover(t)
	r.BeforeWrite = func(attempt int) {
		if attempt == 1 {
			if _, err := c.CoreV1().Namespaces().Patch(ctx, ns, "application/merge-patch+json", []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, err := r.Remove(ctx, plan.Target{Ref: kube.Ref{Resource: namespaces, Name: ns, UID: cur.UID}, Finalizer: "kubernetes", Field: finalizev1alpha1.FieldSpecFinalizers}, write.DryRunNone)
	if err != nil || out.Result != write.Removed || out.Attempts != 2 {
		t.Fatalf("outcome %+v, %v; want Removed after 2 attempts", out, err)
	}
	if err := fixture.WaitGone(ctx, 100*time.Millisecond, 10*time.Second, func(ctx context.Context) error {
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err
	}); err != nil {
		t.Errorf("namespace %s was not removed", ns)
	}
}

// TestRBACFailuresNameWhatIsMissing: a user who may read but not write gets told which
// permission is missing.
func TestRBACFailuresNameWhatIsMissing(t *testing.T) {
	ctx := t.Context()
	admin := cp.Kube(t)
	ns := cp.Namespace(t)
	stuckConfigMap(t, ns, "cfg", "a.example.com/x")
	doomed := cp.Namespace(t)
	if err := admin.CoreV1().Namespaces().Delete(ctx, doomed, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	read := rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}
	patch := rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"patch"}}
	for user, rules := range map[string][]rbacv1.PolicyRule{"reader": {read}, "patcher": {read, patch}} {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "finalize-" + user}, Rules: rules}
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "finalize-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}},
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := func(user string) string {
		cfg, err := cp.UserConfig(user)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), user)
		if err := controlplane.WriteKubeconfig(cfg, path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	reader, patcher := kubeconfig("reader"), kubeconfig("patcher")
	var r cli.Result
	for range 50 { // RBAC takes a moment to see new bindings
		r = cli.Run(t, reader, args([]string{"remove", "configmap/cfg", "-n", ns, "--finalizer", "a.example.com/x", "--yes"}, force)...)
		if !strings.Contains(r.Stderr, "cannot list") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.Code != 1 || !strings.Contains(r.Stderr, `you may not patch "configmaps" in namespace "`+ns+`"; ask for RBAC permission to patch configmaps`) {
		t.Errorf("reader: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
	r = cli.Run(t, patcher, args([]string{"remove", "namespace/" + doomed, "--finalizer", "kubernetes", "--allow-system", "--yes"}, force)...)
	if r.Code != 1 || !strings.Contains(r.Stderr, `you may not update "namespaces/finalize"; ask for RBAC permission to update namespaces/finalize`) {
		t.Errorf("patcher: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
}
