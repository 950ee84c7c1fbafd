package verify

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// kept checks that a remove run left the finalizer and said why.
func kept(t *testing.T, r cli.Result, ns, name, says string) {
	t.Helper()
	if fins := finalizers(t, ns, name); r.Code == 0 || !slices.Equal(fins, []string{finalizer}) || !strings.Contains(r.Stderr, says) {
		t.Errorf("%s: want kept, saying %q: code %d, finalizers %v, stderr:\n%s", name, says, r.Code, fins, r.Stderr)
	}
}

// removed checks that a remove run removed the finalizer and said why.
func removed(t *testing.T, r cli.Result, ns, name, says string) {
	t.Helper()
	if fins := finalizers(t, ns, name); r.Code != 0 || fins != nil || !strings.Contains(r.Stderr, says) {
		t.Errorf("%s: want removed, saying %q: code %d, finalizers %v, stderr:\n%s", name, says, r.Code, fins, r.Stderr)
	}
}

// TestARedirectIsNoAnswer: an API that redirects a lookup to its login page, which
// answers 404 to anything, says nothing about the instance. A redirect is Unknown, with
// its Location; a rule that sets redirects: SameHost follows it on the same host, and the
// evidence names every hop.
func TestARedirectIsNoAnswer(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	configMap(t, ns, "control", map[string]string{"instance": "live-1"})
	policy := writePolicy(t, c.Rule("dbs", finalizer, ""))
	stuckConfigMap(t, ns, "moved", map[string]string{"instance": "moved-1"})
	kept(t, removeWith(t, policy, ns, "moved"), ns, "moved",
		"GET "+c.URL+"/instances/moved-1: 302 Found, a redirect to "+c.URL+"/login?next=%2Finstances%2Fmoved-1: redirects are not followed for a verdict")

	sameHost := writePolicy(t, strings.Replace(c.Rule("dbs", finalizer, ""), "      timeout: 3s\n", "      timeout: 3s\n      redirects: SameHost\n", 1))
	stuckConfigMap(t, ns, "renamed", map[string]string{"instance": "renamed-7"})
	removed(t, removeWith(t, sameHost, ns, "renamed"), ns, "renamed",
		"GET "+c.URL+"/instances/renamed-7, redirected to GET "+c.URL+"/instances/deleted-7: 404 Not Found")
	stuckConfigMap(t, ns, "away", map[string]string{"instance": "redirect"})
	kept(t, removeWith(t, sameHost, ns, "away"), ns, "away",
		"302 Found, a redirect to https://example.invalid/instances/deleted: a redirect to another host (example.invalid) is not followed")
}

// TestAPlaceholderIsNoValue: an object whose instance annotation says "None" (what a
// Python controller writes for a value it never had) names no instance. The API answers
// 404 for an instance named None; that must not read as Gone. The same for the kubernetes
// provider's templated name.
func TestAPlaceholderIsNoValue(t *testing.T) {
	ns, backing := cp.Namespace(t), cp.Namespace(t)
	c := fakecloud.New(t)
	configMap(t, ns, "control", map[string]string{"instance": "live-1", "backing": "live"})
	if _, err := cp.Kube(t).CoreV1().Secrets(backing).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "backing-live"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := writePolicy(t, c.Rule("dbs", finalizer, ""))
	for name, value := range map[string]string{"none": "None", "null": "null", "na": "N/A", "blank": "  ", "nil": "<nil>"} {
		stuckConfigMap(t, ns, name, map[string]string{"instance": value})
		kept(t, removeWith(t, policy, ns, name), ns, name, fmt.Sprintf("{.metadata.annotations.instance}: resolves to %q, a placeholder, not a value", value))
	}
	for _, p := range c.Asked() {
		if p != "/instances/live-1" {
			t.Errorf("asked %s", p)
		}
	}
	policy = writePolicy(t, `- name: backing
  finalizers: [`+finalizer+`]
  resources: [configmaps]
  verify:
    kubernetes:
      resource: secrets
      namespace: `+backing+`
      name: "backing-{.metadata.annotations.backing}"
`)
	stuckConfigMap(t, ns, "undefined", map[string]string{"backing": "undefined"})
	kept(t, removeWith(t, policy, ns, "undefined"), ns, "undefined", `name: {.metadata.annotations.backing}: resolves to "undefined", a placeholder, not a value`)
}

// TestACredentialThatCannotBeReadSendsNothing: an API that answers an anonymous caller
// 200 for public instances and 404 for every other, asked with an empty token, would
// pass its controls and call every private instance gone. An empty or unset token, or
// an empty token file, sends nothing: not one request, the rule cannot verify, the
// finalizer stays and the error names the header and the source.
func TestACredentialThatCannotBeReadSendsNothing(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	c.Token = "s3cret-token"
	configMap(t, ns, "control", map[string]string{"instance": "public-1"})
	withHeader := func(source string) string {
		rule := strings.Replace(c.Rule("private", finalizer, ""), "/instances/", "/private/instances/", 1)
		return strings.Replace(rule, "      timeout: 3s\n", "      timeout: 3s\n      headers: [{name: Authorization, valueFrom: {"+source+", prefix: \"Bearer \"}}]\n", 1)
	}
	empty := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KF_TEST_TOKEN", "")
	for _, tt := range []struct {
		name, source, says string
	}{
		{"empty", "env: KF_TEST_TOKEN", "header Authorization: environment variable KF_TEST_TOKEN is empty"},
		{"unset", "env: KF_TEST_UNSET_TOKEN", "header Authorization: environment variable KF_TEST_UNSET_TOKEN is not set"},
		{"empty-file", "file: " + empty, "header Authorization: file " + empty + " is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stuckConfigMap(t, ns, tt.name, map[string]string{"instance": "db-" + tt.name})
			kept(t, removeWith(t, writePolicy(t, withHeader(tt.source)), ns, tt.name), ns, tt.name, tt.says)
		})
	}
	if asked := c.Authorizations(); len(asked) > 0 {
		t.Errorf("requests went out with Authorization %q", asked)
	}
	// A token file emptied during the pass (a rotation gone wrong): the request after it
	// is not sent. The target is asked first, with the token, and is gone; the control
	// would be asked anonymously and answer Present, vouching for the rule.
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte(c.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.OnRequest(func(string) { _ = os.WriteFile(token, nil, 0o600) })
	stuckConfigMap(t, ns, "emptied", map[string]string{"instance": "deleted-1"})
	kept(t, removeWith(t, writePolicy(t, withHeader("file: "+token)), ns, "emptied"), ns, "emptied", "header Authorization: file "+token+" is empty")
	if asked := c.Authorizations(); !slices.Equal(asked, []string{"Bearer " + c.Token}) {
		t.Errorf("requests went out with Authorization %q; want only the first, with the token", asked)
	}
	c.OnRequest(nil)

	// With the token, the same rule works.
	t.Setenv("KF_TEST_TOKEN", c.Token)
	stuckConfigMap(t, ns, "deleted", map[string]string{"instance": "deleted-2"})
	removed(t, removeWith(t, writePolicy(t, withHeader("env: KF_TEST_TOKEN")), ns, "deleted"), ns, "deleted", "/private/instances/deleted-2: 404 Not Found")
}

// TestACredentialInTheURLIsRefused: an api_key written in the URL would be shown in
// every report, audit line and Event; policy check refuses it and says what to do.
func TestACredentialInTheURLIsRefused(t *testing.T) {
	policy := writePolicy(t, `- name: keyed
  finalizers: [`+finalizer+`]
  resources: [configmaps]
  verify:
    http:
      url: "https://dbapi.example.com/instances/{.metadata.annotations.instance}?api_key=abc123&region=eu"
`)
	r := cli.Run(t, cp.AdminKubeconfig, "policy", "check", policy)
	if r.Code == 0 || !strings.Contains(r.Stderr+r.Stdout, "rules[0].verify.http.url: Forbidden: query parameter api_key carries credentials") ||
		!strings.Contains(r.Stderr+r.Stdout, "add it under query with valueFrom") || strings.Contains(r.Stderr+r.Stdout, "abc123") {
		t.Errorf("code %d, stdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestAPasswordThatBreaksTheURLIsNotShown: a password pasted into a rule's URL is
// refused, and so is one that breaks the URL's parsing (a generated password holding a
// '/', which ends the host early; a scheme with one slash, where it reads as the path):
// the refusal names the URL without what stands before its '@', not even a piece of it
// in the parser's error.
func TestAPasswordThatBreaksTheURLIsNotShown(t *testing.T) {
	const secret = "Zm9vYmFy/c2VjcmV0"
	for _, url := range []string{
		"https://svc:" + secret + "@dbapi.example.com/instances/{.metadata.name}",
		"https:/svc:" + secret + "@dbapi.example.com/instances/{.metadata.name}",
	} {
		policy := writePolicy(t, `- name: pasted
  finalizers: [`+finalizer+`]
  resources: [configmaps]
  verify:
    http:
      url: "`+url+`"
`)
		r := cli.Run(t, cp.AdminKubeconfig, "policy", "check", policy)
		if r.Code != 2 || !strings.Contains(r.Stderr, "rules[0].verify.http.url: Invalid value") {
			t.Errorf("%s: code %d; want 2 refusing the url; stderr:\n%s", url, r.Code, r.Stderr)
		}
		for _, piece := range []string{secret, "Zm9vYmFy", "c2VjcmV0"} {
			if strings.Contains(r.Stdout+r.Stderr, piece) {
				t.Errorf("%s: %q is shown: %s", url, piece, r.Stderr)
			}
		}
	}
}

// TestAPasswordInsideABasicAuthHeaderIsShownNowhere: a script given a password through
// valueFrom calls its API with curl -v -u svc:$API_PASSWORD, which prints the request's
// Authorization header on stderr: the password inside the base64 of "svc:PASSWORD",
// three bytes of alignment away from its own base64. The script fails, and its stderr is
// the evidence. The header shows neither whole nor with the password's part readable,
// on stdout or stderr.
func TestAPasswordInsideABasicAuthHeaderIsShownNowhere(t *testing.T) {
	ns := cp.Namespace(t)
	const password = "basic-Pass-4d7e19c2ab"
	auth := base64.StdEncoding.EncodeToString([]byte("svc:" + password))
	policy := writePolicy(t, `- name: basic
  finalizers: [`+finalizer+`]
  resources: [configmaps]
  namespaces: [`+ns+`]
  verify:
    exec:
      command: [`+os.Args[0]+`, "{.metadata.annotations.mode}"]
      env:
      - {name: KF_TEST_PROVIDER, value: "1"}
      - {name: API_PASSWORD, valueFrom: {env: KF_TEST_BASIC_PASSWORD}}
      timeout: 10s
`)
	configMap(t, ns, "control", map[string]string{"mode": "curl-v"})
	stuckConfigMap(t, ns, "stuck", map[string]string{"mode": "curl-v"})
	r := cli.RunBinary(t, binary, cp.AdminKubeconfig, []string{"KF_TEST_BASIC_PASSWORD=" + password}, "reconcile", "--once", "--policy", policy, "-o", "json", "-v=6")
	if !strings.Contains(r.Stdout, "Authorization: Basic ") {
		t.Fatalf("the script's stderr is not in the report: code %d, stdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for where, out := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr} {
		for _, form := range []string{password, auth} {
			if strings.Contains(out, form) {
				t.Errorf("%s shows %q:\n%s", where, form, out)
			}
		}
	}
}

// TestASecretsValuesAreShownNowhereAtAnyVerbosity: a rule over Secrets verifies a
// stuck one, and the verifier reads it whole. At -v=8 and up client-go logs the bodies
// of the responses, the Secret's data with them; those values are secrets the process
// read, and show in no form, at -v=8 (a body cut to 1024 bytes), -v=9 or -v=10.
func TestASecretsValuesAreShownNowhereAtAnyVerbosity(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	const password = "db-Password-8c1e5f93a7"
	secret := func(name, instance string, stuck bool) {
		fixture.Create(t, cp.Kube(t).CoreV1().Secrets(ns), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"instance": instance}, Finalizers: []string{finalizer}},
			Data: map[string][]byte{"password": []byte(password)}}, stuck)
	}
	secret("control", "live-1", false)
	secret("stuck", "present-1", true)
	policy := writePolicy(t, strings.Replace(c.Rule("secrets", finalizer, "  namespaces: ["+ns+"]\n"), "resources: [configmaps]", "resources: [secrets]", 1))
	for _, v := range []string{"-v=8", "-v=9", "-v=10"} {
		r := cli.RunBinary(t, binary, cp.AdminKubeconfig, nil, "reconcile", "--once", "--policy", policy, "--dry-run", v)
		if !strings.Contains(r.Stderr, "Response Body") {
			t.Fatalf("%s logged no bodies: code %d\n%s\n%s", v, r.Code, r.Stdout, r.Stderr)
		}
		for _, form := range []string{password, base64.StdEncoding.EncodeToString([]byte(password))} {
			if strings.Contains(r.Stdout+r.Stderr, form) {
				t.Errorf("%s shows %q", v, form)
			}
		}
	}
}

// TestAQueryCredentialIsNeverShown: an api_key from valueFrom is sent, and shown nowhere:
// not on stdout (-o json), stderr, the audit log, klog at -v=6, or the Event, even where
// the server echoes it in a body or a redirect.
func TestAQueryCredentialIsNeverShown(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	c.APIKey = "kf-Api-Key-7f3a9c"
	t.Setenv("KF_TEST_API_KEY", c.APIKey)
	configMap(t, ns, "control", map[string]string{"instance": "live-1"})
	policy := writePolicy(t, strings.Replace(strings.Replace(c.Rule("keyed", finalizer, ""), "/instances/", "/keyed/instances/", 1),
		"      timeout: 3s\n", "      timeout: 3s\n      query: [{name: api_key, valueFrom: {env: KF_TEST_API_KEY}}]\n", 1))
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	var logs bytes.Buffer
	klog.LogToStderr(false)
	klog.SetOutput(&logs)
	t.Cleanup(func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("v", "0")
	})
	shown := map[string]string{}
	for _, tt := range []struct {
		name, instance string
		gone           bool
		says           string
	}{
		{"deleted", "deleted-1", true, "GET " + c.URL + "/keyed/instances/deleted-1?api_key=REDACTED: 404 Not Found"},
		{"echo", "echo-1", false, `{.state} = "api_key=REDACTED"`},
		{"moved", "moved-1", false, "302 Found, a redirect to " + c.URL + "/login?api_key=REDACTED: redirects are not followed"},
	} {
		stuckConfigMap(t, ns, tt.name, map[string]string{"instance": tt.instance})
		r := removeWith(t, policy, ns, tt.name, "--audit-log", audit, "-o", "json", "-v=6")
		if tt.gone {
			removed(t, r, ns, tt.name, tt.says)
		} else {
			kept(t, r, ns, tt.name, tt.says)
		}
		shown[tt.name+" stdout"], shown[tt.name+" stderr"] = r.Stdout, r.Stderr
	}
	b, err := os.ReadFile(audit)
	if err != nil || !strings.Contains(string(b), "api_key=REDACTED") {
		t.Errorf("the audit log (%v):\n%s", err, b)
	}
	shown["the audit log"], shown["klog"] = string(b), logs.String()
	if eventNotes(t, ns, shown) == 0 {
		t.Error("no Event of the removal")
	}
	if !strings.Contains(logs.String(), "api_key=REDACTED") {
		t.Errorf("-v=6 logged no evidence:\n%s", logs.String())
	}
	neverShown(t, shown, c.APIKey)
}

// eventNotes adds the note of every Event kubectl-finalize recorded in ns to shown, and
// counts them.
func eventNotes(t *testing.T, ns string, shown map[string]string) int {
	t.Helper()
	events, err := cp.Kube(t).EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, ev := range events.Items {
		if ev.ReportingController == "kubectl-finalize" {
			notes++
			shown["the Event "+ev.Name] = ev.Note
		}
	}
	return notes
}

// neverShown checks that no output (named by where it went) holds any of secrets: as it
// is, base64-encoded (as a Secret's data holds it), or its last eight bytes (a secret cut
// short, or the end of one whose start was replaced).
func neverShown(t *testing.T, outputs map[string]string, secrets ...string) {
	t.Helper()
	for _, where := range slices.Sorted(maps.Keys(outputs)) {
		out := outputs[where]
		for _, secret := range secrets {
			for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), secret[len(secret)-8:]} {
				if i := strings.Index(out, form); i >= 0 {
					t.Errorf("%s shows %q: ...%s...", where, form, out[max(0, i-200):min(len(out), i+len(form)+100)])
				}
			}
		}
	}
}

// TestACredentialInAnExecEnvIsRefused: an exec provider's env is policy text, shown to
// whoever reads the policy: a credential-like variable with an inline value is refused,
// as a header's is, and the message points to valueFrom.
func TestACredentialInAnExecEnvIsRefused(t *testing.T) {
	policy := writePolicy(t, `- name: exec
  finalizers: [`+finalizer+`]
  resources: [configmaps]
  verify:
    exec:
      command: [/bin/true]
      env: [{name: API_TOKEN, value: s3cr3t}]
`)
	r := cli.Run(t, cp.AdminKubeconfig, "policy", "check", policy)
	if r.Code != 2 || !strings.Contains(r.Stderr, "rules[0].verify.exec.env[0].value: Forbidden: environment variable API_TOKEN carries credentials: credentials come from valueFrom") ||
		strings.Contains(r.Stderr+r.Stdout, "s3cr3t") {
		t.Errorf("code %d, stdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestAnEchoedCredentialIsShownNowhere: the credentials providers are given come back to
// kubectl-finalize in every way they can (an exec program that prints its whole
// environment and its token on stderr and fails, one that puts its token in its
// evidence, an API that echoes the Authorization header in a 500, a stuck object that
// holds the token), and the real binary shows them nowhere: not on stdout (-o json),
// stderr (warnings, errors, klog at -v=10 with request and response bodies), the audit
// log, the Events, the backups or the metrics textfile. Each source is registered with
// the redactor where it is read: the exec env's valueFrom, a credential-like variable
// the program inherits, the http header's valueFrom.
func TestAnEchoedCredentialIsShownNowhere(t *testing.T) {
	ns := cp.Namespace(t)
	c := fakecloud.New(t)
	execCred, inherited := "exec-Cred-9f1c27ab4d", "inherited-Token-5c8a01e3"
	c.Token = "header-Token-3e6f29b7"
	env := []string{"KF_TEST_EXEC_CRED=" + execCred, "SERVICE_API_TOKEN=" + inherited, "KF_TEST_HTTP_TOKEN=" + c.Token}
	const httpFinalizer = "api.example.com/finalizer"
	httpRule := strings.Replace(strings.Replace(c.Rule("echo-http", httpFinalizer, "  namespaces: ["+ns+"]\n"), "/instances/", "/private/instances/", 1),
		"      timeout: 3s\n", "      timeout: 3s\n      headers: [{name: Authorization, valueFrom: {env: KF_TEST_HTTP_TOKEN, prefix: \"Bearer \"}}]\n", 1)
	policy := writePolicy(t, `- name: echo-exec
  finalizers: [`+finalizer+`]
  resources: [configmaps]
  namespaces: [`+ns+`]
  verify:
    exec:
      command: [`+os.Args[0]+`, "{.metadata.annotations.mode}"]
      env:
      - {name: KF_TEST_PROVIDER, value: "1"}
      - {name: API_TOKEN, valueFrom: {env: KF_TEST_EXEC_CRED}}
      timeout: 10s
`+httpRule)
	configMap(t, ns, "control", map[string]string{"mode": "echo"})
	fixture.HeldConfigMap(t, cp.Kube(t), ns, "http-control", map[string]string{"instance": "public-1"}, httpFinalizer)
	holding := fixture.ConfigMap("echo", map[string]string{"mode": "echo"}, finalizer)
	holding.Data = map[string]string{"api-token": execCred}
	fixture.Stuck(t, cp.Kube(t).CoreV1().ConfigMaps(ns), holding)
	stuckConfigMap(t, ns, "evidence", map[string]string{"mode": "evidence"})
	fixture.StuckConfigMap(t, cp.Kube(t), ns, "http-echo", map[string]string{"instance": "echo-1"}, httpFinalizer)

	dir := t.TempDir()
	passAudit, removeAudit := filepath.Join(dir, "pass.jsonl"), filepath.Join(dir, "remove.jsonl")
	backups, textfile := filepath.Join(dir, "backups"), filepath.Join(dir, "metrics.prom")
	pass := cli.RunBinary(t, binary, cp.AdminKubeconfig, env, "reconcile", "--once", "--policy", policy, "-o", "json",
		"--audit-log", passAudit, "--metrics-textfile", textfile, "-v=10")
	for _, says := range []string{"exit status 3; stderr: ", "403 Forbidden for the token REDACTED", "the API refused the token REDACTED (and REDACTED)", "500 Internal Server Error"} {
		if !strings.Contains(pass.Stdout, says) {
			t.Errorf("the pass's report does not say %q: code %d, stdout:\n%s\nstderr:\n%s", says, pass.Code, pass.Stdout, pass.Stderr)
		}
	}
	forced := cli.RunBinary(t, binary, cp.AdminKubeconfig, env, "remove", "configmap/echo", "configmap/evidence", "configmap/http-echo", "-n", ns,
		"--all-finalizers", "--policy", policy, "--force-unverified", "--reason", "INC-1: the provider cannot tell",
		"--backup-dir", backups, "--audit-log", removeAudit, "--yes", "-o", "json", "-v=10")
	for _, name := range []string{"echo", "evidence", "http-echo"} {
		if fins := finalizers(t, ns, name); fins != nil {
			t.Errorf("%s kept %v: code %d, stderr:\n%s", name, fins, forced.Code, forced.Stderr)
		}
	}
	if !strings.Contains(forced.Stderr, `"Response Body"`) {
		t.Errorf("-v=10 logged no bodies:\n%s", forced.Stderr)
	}

	shown := map[string]string{"the pass's stdout": pass.Stdout, "the pass's stderr": pass.Stderr, "remove's stdout": forced.Stdout, "remove's stderr": forced.Stderr}
	for _, f := range []string{passAudit, removeAudit, textfile} {
		b, err := os.ReadFile(f)
		if err != nil && f != passAudit { // a pass that removes nothing writes no audit line
			t.Error(err)
		}
		shown[filepath.Base(f)] = string(b)
	}
	files, err := filepath.Glob(filepath.Join(backups, "*.yaml"))
	if err != nil || len(files) != 3 {
		t.Errorf("backups %v (%v)", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		shown["the backup "+filepath.Base(f)] = string(b)
		if strings.HasSuffix(f, "_echo.yaml") && !strings.Contains(string(b), "api-token: REDACTED") {
			t.Errorf("the backup of the object that holds the token:\n%s", b)
		}
	}
	if notes := eventNotes(t, ns, shown); notes != 3 {
		t.Errorf("%d Events of the removals, want 3", notes)
	}
	neverShown(t, shown, execCred, inherited, c.Token)
}

// TestAnExecProviderSeesNoSecretValue: a Secret reaches an exec provider with the values
// of data and kubectl's last-applied-configuration REDACTED, unless its rule sets
// secretData: true. Then the program gets the values (it names the one of data by its
// digest), and they are registered with the redactor: where it repeats them (the
// last-applied annotation it prints), they show as REDACTED.
func TestAnExecProviderSeesNoSecretValue(t *testing.T) {
	ns := cp.Namespace(t)
	secrets := cp.Kube(t).CoreV1().Secrets(ns)
	for _, name := range []string{"control", "target"} {
		mode := map[string]string{"control": "Present", "target": "data"}[name]
		_, err := secrets.Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{finalizer}, Annotations: map[string]string{"mode": mode,
				"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Secret","stringData":{"password":"hunter2-plain"}}`}},
			StringData: map[string]string{"password": "hunter2-plain"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = secrets.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		})
	}
	if err := secrets.Delete(t.Context(), "target", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rule := `- name: secrets
  finalizers: [` + finalizer + `]
  resources: [secrets]
  verify:
    exec:
      command: [` + os.Args[0] + `, "{.metadata.annotations.mode}"]
      env: [{name: KF_TEST_PROVIDER, value: "1"}]
`
	run := func(policy string) cli.Result {
		return cli.Run(t, cp.AdminKubeconfig, "remove", "secret/target", "-n", ns, "--finalizer", finalizer, "--policy", policy, "--yes")
	}
	r := run(writePolicy(t, rule))
	if !strings.Contains(r.Stderr, "data map[password:REDACTED], last-applied REDACTED") || strings.Contains(r.Stderr, "hunter2") || strings.Contains(r.Stderr, "aHVudGVyMi1wbGFpbg") {
		t.Errorf("by default: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
	r = run(writePolicy(t, rule+"      secretData: true\n"))
	if !strings.Contains(r.Stderr, "data map[password:sha256:fcacc7bac5d7], last-applied {") || !strings.Contains(r.Stderr, `"password":"REDACTED"`) ||
		strings.Contains(r.Stderr, "hunter2") || strings.Contains(r.Stderr, "aHVudGVyMi1wbGFpbg") {
		t.Errorf("with secretData: code %d, stderr:\n%s", r.Code, r.Stderr)
	}
}
