package verify

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
)

// removeWith runs `remove configmap/NAME --policy` and returns what it printed.
func removeWith(t *testing.T, policy, ns, name string, extra ...string) cli.Result {
	t.Helper()
	args := append([]string{"remove", "configmap/" + name, "-n", ns, "--finalizer", finalizer, "--policy", policy, "--yes"}, extra...)
	return cli.Run(t, cp.AdminKubeconfig, args...)
}

// TestOnlyGoneRemoves asks an HTTPS API about objects whose instances are deleted,
// archived, throttled then deleted, present, failing, hanging, redirected,
// answering garbage or 50 MB: only the first three lose their finalizer.
func TestOnlyGoneRemoves(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	configMap(t, ns, "control", map[string]string{"instance": "live-1"})
	policy := writePolicy(t, c.Rule("dbs", finalizer, ""))
	for _, tt := range []struct {
		instance string
		removed  bool
		says     string
	}{
		{"deleted", true, "/instances/deleted: 404 Not Found"},
		{"archived", true, "/instances/archived: 410 Gone"},
		{"throttled", true, "/instances/throttled: 404 Not Found"},
		{"present", false, `the provider answered Present: GET ` + c.URL + `/instances/present: 200 OK, {.state} = "available"`},
		{"error", false, "500 Internal Server Error, still after 4 attempts"},
		{"hang", false, "no answer within 3s"},
		{"redirect", false, "302 Found, a redirect to https://example.invalid/instances/deleted: redirects are not followed for a verdict"},
		{"garbage", false, "the body is not JSON"},
		{"huge", false, "the body is larger than 1048576 bytes"},
	} {
		t.Run(tt.instance, func(t *testing.T) {
			stuckConfigMap(t, ns, tt.instance, map[string]string{"instance": tt.instance})
			r := removeWith(t, policy, ns, tt.instance)
			fins := finalizers(t, ns, tt.instance)
			if tt.removed {
				if r.Code != 0 || fins != nil || !strings.Contains(r.Stderr, tt.says) {
					t.Errorf("want removed: code %d, finalizers %v, stderr:\n%s", r.Code, fins, r.Stderr)
				}
				return
			}
			if r.Code != 2 || !slices.Equal(fins, []string{finalizer}) || !strings.Contains(r.Stderr, tt.says) ||
				!strings.Contains(r.Stderr, "to remove it anyway: --force-unverified --reason TEXT") {
				t.Errorf("want kept: code %d, finalizers %v, stderr:\n%s", r.Code, fins, r.Stderr)
			}
		})
	}
}

// TestExecProviders runs a real provider process per verdict and per way of failing.
func TestExecProviders(t *testing.T) {
	ns := cp.Namespace(t)
	hostile := "$(touch /tmp/pwned); `id` | rm -rf / ; ../../etc/passwd?x=%2F#frag\nnext line"
	// The control's second argument is a harmless value; "none" would be a placeholder.
	// The hostile value holds a line break, which the rule allows: a value that reaches
	// the program stays one argument, and no shell reads it
	// (TestAnOptionInAnExecValueIsNotRun shows what is refused by default).
	configMap(t, ns, "control", map[string]string{"mode": "Present", "hostile": "harmless"})
	policy := writePolicy(t, `- name: exec
  finalizers: [`+finalizer+`]
  resources: [configmaps]
  verify:
    exec:
      command: [`+os.Args[0]+`, "{.metadata.annotations.mode}", "{.metadata.annotations.hostile}"]
      env: [{name: KF_TEST_PROVIDER, value: "1"}]
      allowControlCharacters: true
      timeout: 2s
`)
	for _, tt := range []struct {
		mode    string
		removed bool
		says    string
	}{
		{"Gone", true, `argv ["Gone" "` + strings.ReplaceAll(hostile, "\n", `\n`) + `"], interactive false`},
		{"Present", false, "the provider answered Present"},
		{"Unknown", false, "the provider answered Unknown"},
		{"exit", false, "exit status 2; stderr: the cloud CLI failed: AccessDenied"},
		{"garbage", false, "stdout is not a VerifyResponse"},
		{"twice", false, "stdout holds more than one VerifyResponse"},
		{"sleep", false, "no answer within 2s; the process group was killed"},
		{"orphan", false, "processes it started kept its output open; they were killed"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			name := strings.ToLower(tt.mode)
			stuckConfigMap(t, ns, name, map[string]string{"mode": tt.mode, "hostile": hostile})
			r := removeWith(t, policy, ns, name, "--audit-log", filepath.Join(t.TempDir(), "audit.jsonl"))
			fins := finalizers(t, ns, name)
			if tt.removed != (fins == nil) || !strings.Contains(r.Stderr, tt.says) {
				t.Errorf("removed %v (want %v), code %d, stderr:\n%s", fins == nil, tt.removed, r.Code, r.Stderr)
			}
		})
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Error("a shell ran the annotation")
	}
}

// TestTheExampleProvider runs docs/examples/exec-provider against an inventory file.
func TestTheExampleProvider(t *testing.T) {
	ns := cp.Namespace(t)
	inventory := filepath.Join(t.TempDir(), "inventory.json")
	if err := os.WriteFile(inventory, []byte(`["db-live", "db-still-here"]`), 0o600); err != nil {
		t.Fatal(err)
	}
	configMap(t, ns, "control", map[string]string{"id": "db-live"})
	stuckConfigMap(t, ns, "deleted", map[string]string{"id": "db-deleted"})
	stuckConfigMap(t, ns, "kept", map[string]string{"id": "db-still-here"})
	policy := writePolicy(t, `- name: inventory
  finalizers: [`+finalizer+`]
  resources: [configmaps]
  verify:
    exec:
      command: [`+exampleProvider+`, --inventory, `+inventory+`, --max-age, 1h, "{.metadata.annotations.id}"]
`)
	if r := removeWith(t, policy, ns, "deleted"); r.Code != 0 || finalizers(t, ns, "deleted") != nil || !strings.Contains(r.Stderr, "db-deleted is not in inventory") {
		t.Errorf("deleted: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
	if r := removeWith(t, policy, ns, "kept"); r.Code != 2 || !strings.Contains(r.Stderr, "db-still-here is in inventory") {
		t.Errorf("kept: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
	// An old inventory proves nothing.
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(inventory, old, old); err != nil {
		t.Fatal(err)
	}
	stuckConfigMap(t, ns, "stale", map[string]string{"id": "db-gone-long-ago"})
	if r := removeWith(t, policy, ns, "stale"); r.Code != 2 || !strings.Contains(r.Stderr, "older than 1h0m0s") {
		t.Errorf("stale: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
}

// TestKubernetesProvider looks for backing objects in another namespace, and in a second
// kubeconfig context whose user may only read that namespace.
func TestKubernetesProvider(t *testing.T) {
	ns, backing := cp.Namespace(t), cp.Namespace(t)
	kube := cp.Kube(t)
	for _, name := range []string{"backing-live", "backing-kept"} {
		if _, err := kube.CoreV1().Secrets(backing).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	configMap(t, ns, "live", nil)
	stuckConfigMap(t, ns, "gone", nil)
	stuckConfigMap(t, ns, "kept", nil)
	rule := func(context string) string {
		return `- name: backing
  finalizers: [` + finalizer + `]
  resources: [configmaps]
  verify:
    kubernetes:
      resource: secrets
      namespace: ` + backing + `
      name: "backing-{.metadata.name}"
` + context
	}
	policy := writePolicy(t, rule(""))
	if r := removeWith(t, policy, ns, "gone"); r.Code != 0 || finalizers(t, ns, "gone") != nil || !strings.Contains(r.Stderr, "secrets/backing-gone -n "+backing+" not found in this cluster") {
		t.Errorf("gone: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
	if r := removeWith(t, policy, ns, "kept"); r.Code != 2 || !strings.Contains(r.Stderr, "secrets/backing-kept -n "+backing+" exists in this cluster") {
		t.Errorf("kept: code %d, stderr:\n%s", r.Code, r.Stderr)
	}

	// The second context's user may read secrets in the backing namespace only.
	readerCfg, err := cp.UserConfig("backing-reader")
	if err != nil {
		t.Fatal(err)
	}
	grant(t, backing, "backing-reader", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfigContexts(kubeconfig, "admin", map[string]*rest.Config{"admin": cp.Config, "workload": readerCfg}); err != nil {
		t.Fatal(err)
	}
	policy = writePolicy(t, rule("      kubeconfig: "+kubeconfig+"\n      context: workload\n"))
	stuckConfigMap(t, ns, "elsewhere", nil)
	if r := removeWith(t, policy, ns, "elsewhere"); r.Code != 0 || !strings.Contains(r.Stderr, "not found in the cluster of context workload of "+kubeconfig) {
		t.Errorf("elsewhere: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
	// Where that user may not look, the answer is Unknown, never Gone.
	policy = writePolicy(t, strings.Replace(rule("      kubeconfig: "+kubeconfig+"\n      context: workload\n"), "namespace: "+backing, "namespace: "+ns, 1))
	stuckConfigMap(t, ns, "forbidden", nil)
	if r := removeWith(t, policy, ns, "forbidden"); r.Code != 2 || !strings.Contains(r.Stderr, "is forbidden") {
		t.Errorf("forbidden: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
}

func grant(t *testing.T, ns, user string, rule rbacv1.PolicyRule) {
	t.Helper()
	kube := cp.Kube(t)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{rule}}
	if _, err := kube.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestAHostileValueInAPathIsNotAsked: an annotation full of URL syntax would need
// escaping to stand in a path segment, and escaped it names no instance (the API answers
// 404, which read as Gone): it is refused as it is, nothing is asked about it, and the
// finalizer stays.
func TestAHostileValueInAPathIsNotAsked(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	configMap(t, ns, "control", map[string]string{"instance": "live"})
	stuckConfigMap(t, ns, "hostile", map[string]string{"instance": "deleted/../../admin?drop=1#x%2F\n"})
	kept(t, removeWith(t, writePolicy(t, c.Rule("dbs", finalizer, "")), ns, "hostile"), ns, "hostile",
		`{.metadata.annotations.instance}: "deleted/../../admin?drop=1#x%2F\n" cannot be a URL path segment as it is: it holds '/'`)
	for _, p := range c.Asked() {
		if p != "/instances/live" {
			t.Errorf("asked %s", p)
		}
	}
}

// TestPinnedToWhatWasVerified changes the object while its provider answers: the field the
// request was built from, or the object itself (a namesake). Neither is removed.
func TestPinnedToWhatWasVerified(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	configMap(t, ns, "control", map[string]string{"instance": "live"})
	kube := cp.Kube(t).CoreV1().ConfigMaps(ns)
	var namesake types.UID
	var once sync.Once
	c.OnRequest(func(id string) {
		switch id {
		case "changing":
			// The instance behind the object changes: now it points at a live one.
			_, _ = kube.Patch(context.Background(), "changing", types.MergePatchType, []byte(`{"metadata":{"annotations":{"instance":"live-2"}}}`), metav1.PatchOptions{})
		case "replaced":
			// The object goes and a namesake comes, deleted and holding the finalizer.
			once.Do(func() {
				_, _ = kube.Patch(context.Background(), "replaced", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				cm, err := kube.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "replaced", Finalizers: []string{finalizer},
					Annotations: map[string]string{"instance": "replaced"}}}, metav1.CreateOptions{})
				if err == nil {
					namesake = cm.UID
					_ = kube.Delete(context.Background(), "replaced", metav1.DeleteOptions{})
				}
			})
		}
	})
	policy := writePolicy(t, c.Rule("dbs", finalizer, ""))
	stuckConfigMap(t, ns, "changing", map[string]string{"instance": "changing"})
	r := removeWith(t, policy, ns, "changing")
	if r.Code != 1 || !slices.Equal(finalizers(t, ns, "changing"), []string{finalizer}) ||
		!strings.Contains(r.Stderr, "the object changed after it was verified and is not verified any more: Present") {
		t.Errorf("a changed field: code %d, finalizers %v, stderr:\n%s", r.Code, finalizers(t, ns, "changing"), r.Stderr)
	}
	stuckConfigMap(t, ns, "replaced", map[string]string{"instance": "replaced"})
	r = removeWith(t, policy, ns, "replaced")
	cm, err := kube.Get(t.Context(), "replaced", metav1.GetOptions{})
	if r.Code != 1 || err != nil || cm.UID != namesake || !slices.Equal(cm.Finalizers, []string{finalizer}) ||
		!strings.Contains(r.Stderr, "the object was replaced by a namesake with another uid") {
		t.Errorf("a namesake: code %d, object %v %v, stderr:\n%s", r.Code, cm, err, r.Stderr)
	}
}

// TestABrokenProviderRemovesNothing: an API that answers 404 for everything, live objects
// included, is broken: its rule removes nothing and says so.
func TestABrokenProviderRemovesNothing(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	configMap(t, ns, "control", map[string]string{"instance": "deleted-too"})
	stuckConfigMap(t, ns, "target", map[string]string{"instance": "deleted"})
	r := removeWith(t, writePolicy(t, c.Rule("typo", finalizer, "")), ns, "target")
	if r.Code != 2 || !slices.Equal(finalizers(t, ns, "target"), []string{finalizer}) ||
		!strings.Contains(r.Stderr, "Warning: rule typo is BROKEN: the provider is broken: it called configmaps/control -n "+ns+" gone") {
		t.Errorf("code %d, stderr:\n%s", r.Code, r.Stderr)
	}
}

// TestWithoutALiveControlTheRuleWaits: with no live object to check the provider with, a
// rule does not act, unless its controls say requireLive: false.
func TestWithoutALiveControlTheRuleWaits(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	stuckConfigMap(t, ns, "target", map[string]string{"instance": "deleted"})
	r := removeWith(t, writePolicy(t, c.Rule("unchecked", finalizer, "")), ns, "target")
	if r.Code != 2 || !strings.Contains(r.Stderr, "no live object carries a finalizer this rule matches") {
		t.Errorf("no control: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
	r = removeWith(t, writePolicy(t, c.Rule("unchecked", finalizer, "  controls: {requireLive: false}\n")), ns, "target")
	if r.Code != 0 || finalizers(t, ns, "target") != nil {
		t.Errorf("requireLive false: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
}

// TestVerifiedRemovalsAreAudited: the Event and the audit line carry rule and evidence; a
// removal forced over a Present keeps the verdict next to the reason.
func TestVerifiedRemovalsAreAudited(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	configMap(t, ns, "control", map[string]string{"instance": "live"})
	stuckConfigMap(t, ns, "verified", map[string]string{"instance": "deleted"})
	stuckConfigMap(t, ns, "forced", map[string]string{"instance": "present"})
	policy := writePolicy(t, c.Rule("dbs", finalizer, ""))
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	if r := removeWith(t, policy, ns, "verified", "--audit-log", audit); r.Code != 0 {
		t.Fatalf("verified: %s", r.Stderr)
	}
	if r := removeWith(t, policy, ns, "forced", "--audit-log", audit, "--force-unverified", "--reason", "INC-77"); r.Code != 0 {
		t.Fatalf("forced: %s", r.Stderr)
	}
	b, _ := os.ReadFile(audit)
	var recs []write.Record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.Contains(line, `"stage":"Complete"`) {
			continue // the intent line written before each removal
		}
		var rec write.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 2 {
		t.Fatalf("records %+v", recs)
	}
	v, f := recs[0], recs[1]
	if !v.Verified || v.Action != "FinalizerRemoved" || v.Rule != "dbs" || v.Verdict != "Gone" || !strings.Contains(v.Evidence, "404 Not Found") || v.Reason != "" {
		t.Errorf("verified record %+v", v)
	}
	if f.Verified || f.Action != "FinalizerForceRemoved" || f.Rule != "dbs" || f.Verdict != "Present" || f.Reason != "INC-77" {
		t.Errorf("forced record %+v", f)
	}
	evNS, evName, _ := strings.Cut(v.Event, "/")
	ev, err := cp.Kube(t).EventsV1().Events(evNS).Get(t.Context(), evName, metav1.GetOptions{})
	// The note names when the verification was answered, as the record does.
	if v.VerifiedAt == nil || v.Verifications != 1 {
		t.Fatalf("verified record %+v: no time of its verification", v)
	}
	at := v.VerifiedAt.UTC().Format(metav1.RFC3339Micro)
	if err != nil || ev.Reason != "FinalizerRemoved" || ev.Type != corev1.EventTypeNormal || !strings.Contains(ev.Note, "verified by rule dbs at "+at+": GET "+c.URL+"/instances/deleted: 404 Not Found") {
		t.Errorf("event %+v %v", ev, err)
	}
}
