package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// The test binary is also the provider these tests run: with PROVIDER_MODE set, it reads
// a VerifyRequest and behaves as the mode says.
func TestMain(m *testing.M) {
	if mode := os.Getenv("PROVIDER_MODE"); mode != "" {
		os.Exit(fakeProvider(mode))
	}
	os.Exit(m.Run())
}

func fakeProvider(mode string) int {
	if mode == "marker" {
		time.Sleep(2 * time.Second)
		_ = os.WriteFile(os.Getenv("MARKER"), []byte("survived"), 0o600)
		return 0
	}
	var req finalizev1alpha1.VerifyRequest
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "bad request:", err)
		return 9
	}
	respond := func(verdict finalizev1alpha1.Verdict, evidence string) {
		_ = json.NewEncoder(os.Stdout).Encode(finalizev1alpha1.VerifyResponse{
			TypeMeta: metav1.TypeMeta{APIVersion: "kubectl-finalize.github.io/v1alpha1", Kind: "VerifyResponse"},
			UID:      req.UID, ResourceVersion: req.ResourceVersion, Finalizer: req.Finalizer, Verdict: verdict, Evidence: evidence,
		})
	}
	switch mode {
	case "gone", "present", "unknown":
		respond(map[string]finalizev1alpha1.Verdict{"gone": "Gone", "present": "Present", "unknown": "Unknown"}[mode], "checked "+strings.Join(os.Args[1:], "|")+" env="+os.Getenv("RULE_ENV"))
	case "secrets":
		// A program that prints its environment's secrets on stderr, one of them in two
		// writes, and in its evidence, then fails.
		token := os.Getenv("API_TOKEN")
		fmt.Fprintln(os.Stderr, "SERVICE_PASSWORD="+os.Getenv("SERVICE_PASSWORD"), "PLAIN="+os.Getenv("PLAIN"))
		fmt.Fprint(os.Stderr, "403 for "+token[:4])
		time.Sleep(20 * time.Millisecond)
		fmt.Fprintln(os.Stderr, token[4:])
		respond("Unknown", "asked with "+token)
		if os.Getenv("SUCCEED") != "" {
			return 0
		}
		return 3
	case "fail":
		fmt.Fprintln(os.Stderr, "aws: error: AccessDenied")
		respond("Gone", "a failing process is not believed")
		return 3
	case "garbage":
		fmt.Println("Gone")
	case "two":
		respond("Gone", "one")
		respond("Gone", "two")
	case "object":
		// What the program was given of the object's values, and of the environment.
		var obj struct {
			Data       map[string]string `json:"data"`
			StringData map[string]string `json:"stringData"`
			Metadata   struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(req.Object.Raw, &obj)
		respond("Unknown", fmt.Sprintf("data=%v stringData=%v last-applied=%q inherited=%q", obj.Data, obj.StringData,
			obj.Metadata.Annotations["kubectl.kubernetes.io/last-applied-configuration"], os.Getenv("KF_INHERITED")))
	case "nothing":
	case "echo":
		resp := fmt.Sprintf(`{"apiVersion":"kubectl-finalize.github.io/v1alpha1","kind":"VerifyResponse","uid":"another","resourceVersion":%q,"finalizer":%q,"verdict":"Gone"}`, req.ResourceVersion, req.Finalizer)
		fmt.Println(resp)
	case "version":
		fmt.Printf(`{"apiVersion":"kubectl-finalize.github.io/v2","kind":"VerifyResponse","uid":%q,"verdict":"Gone"}`+"\n", req.UID)
	case "verdict":
		fmt.Printf(`{"apiVersion":"kubectl-finalize.github.io/v1alpha1","kind":"VerifyResponse","uid":%q,"resourceVersion":%q,"finalizer":%q,"verdict":"Probably"}`+"\n", req.UID, req.ResourceVersion, req.Finalizer)
	case "huge":
		_, _ = io.Copy(os.Stdout, io.LimitReader(zeros{}, 5<<20))
	case "flood":
		_, _ = io.Copy(os.Stdout, zeros{})
	case "sleep":
		time.Sleep(time.Minute)
	case "orphan":
		// A child that outlives its parent and keeps stdout open; it writes a marker
		// unless it is killed first.
		child := exec.Command(os.Args[0], os.Args[1:]...)
		child.Env = append(os.Environ(), "PROVIDER_MODE=marker")
		child.Stdout = os.Stdout
		_ = child.Start()
		respond("Gone", "the parent is done")
	}
	return 0
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func execAsk(t *testing.T, mode string, timeout time.Duration, env ...finalizev1alpha1.EnvVar) Answer {
	t.Helper()
	t.Setenv("PROVIDER_MODE", mode)
	// The hostile value holds a line break: allowed here, to show it stays one argument
	// (TestExecRefusesOptionsAndControlCharacters shows the default).
	spec := &finalizev1alpha1.ExecProvider{Command: []string{os.Args[0], "--id", "{.status.instanceID}", "{.metadata.annotations.hostile}"},
		Env: env, Timeout: &metav1.Duration{Duration: timeout}, AllowControlCharacters: true}
	p, err := New(&finalizev1alpha1.Verify{Exec: spec}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: object}
	obj.SetUID("uid-db-1")
	obj.SetResourceVersion("42")
	call, err := p.Prepare(&Request{Rule: "dbs", Finalizer: "db.example.com/finalizer", Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	return call.Do(context.Background())
}

func TestExecVerdicts(t *testing.T) {
	tests := []struct {
		mode string
		want finalizev1alpha1.Verdict
		says string
	}{
		{"gone", finalizev1alpha1.VerdictGone, "checked --id|i-123|a/../b?c=d#e%2Fx\nSet-Cookie: y env=from-the-rule"},
		{"present", finalizev1alpha1.VerdictPresent, "checked"},
		{"unknown", finalizev1alpha1.VerdictUnknown, "checked"},
		{"fail", finalizev1alpha1.VerdictUnknown, "exit status 3; stderr: aws: error: AccessDenied"},
		{"garbage", finalizev1alpha1.VerdictUnknown, "stdout is not a VerifyResponse"},
		{"two", finalizev1alpha1.VerdictUnknown, "stdout holds more than one VerifyResponse"},
		{"nothing", finalizev1alpha1.VerdictUnknown, "nothing on stdout"},
		{"echo", finalizev1alpha1.VerdictUnknown, `the response is about uid "another"`},
		{"version", finalizev1alpha1.VerdictUnknown, `the response's apiVersion is "kubectl-finalize.github.io/v2"`},
		{"verdict", finalizev1alpha1.VerdictUnknown, `the verdict "Probably" is none of`},
		{"huge", finalizev1alpha1.VerdictUnknown, "more than 1048576 bytes on stdout"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			a := execAsk(t, tt.mode, 10*time.Second, finalizev1alpha1.EnvVar{Name: "RULE_ENV", Value: "from-the-rule"})
			if a.Verdict != tt.want || !strings.Contains(a.Evidence, tt.says) {
				t.Errorf("got %s: %q; want %s saying %q", a.Verdict, a.Evidence, tt.want, tt.says)
			}
		})
	}
}

func TestExecTimeoutsKillTheProcessGroup(t *testing.T) {
	start := time.Now()
	a := execAsk(t, "sleep", 300*time.Millisecond)
	if a.Verdict != finalizev1alpha1.VerdictUnknown || !strings.Contains(a.Evidence, "no answer within 300ms; the process group was killed") {
		t.Errorf("sleep: %s %s", a.Verdict, a.Evidence)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the timeout is 300ms, the run took %s", d)
	}
	// A provider that floods stdout is killed once it passes the bound, not read until
	// its timeout.
	start = time.Now()
	a = execAsk(t, "flood", time.Minute)
	if a.Verdict != finalizev1alpha1.VerdictUnknown || !strings.Contains(a.Evidence, "more than 1048576 bytes on stdout; the process group was killed") {
		t.Errorf("flood: %s %s", a.Verdict, a.Evidence)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a flood of stdout was read for %s; it should stop at the bound", d)
	}
	marker := filepath.Join(t.TempDir(), "marker")
	t.Setenv("MARKER", marker)
	a = execAsk(t, "orphan", 10*time.Second)
	if a.Verdict != finalizev1alpha1.VerdictUnknown || !strings.Contains(a.Evidence, "processes it started kept its output open") {
		t.Errorf("orphan: %s %s", a.Verdict, a.Evidence)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the child outlived its provider: %v", err)
	}
}

// secret is a Secret as the API server returns it, last applied with kubectl.
func secret() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db-creds", "namespace": "team-a", "uid": "uid-s", "resourceVersion": "7",
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"hunter2"}}`, "instance": "i-9"}},
		"data":       map[string]any{"password": "aHVudGVyMg=="},
		"stringData": map[string]any{"user": "admin-hunter"},
	}}
}

// TestExecSecretValuesAreRedacted: a Secret reaches an exec provider with its values
// REDACTED (data, stringData, kubectl's last-applied-configuration), unless the rule
// sets secretData; the object asked about is left as it was. The program inherits the
// environment of kubectl-finalize, as docs/security.md says. With secretData, the
// program gets the values, and each one long enough to be a credential is registered
// with the redactor: the program's evidence that repeats it shows REDACTED
// ("admin-hunter"), a shorter one is no credential and shows ("hunter2").
func TestExecSecretValuesAreRedacted(t *testing.T) {
	t.Setenv("PROVIDER_MODE", "object")
	t.Setenv("KF_INHERITED", "from-the-parent")
	run := func(secretData bool) string {
		t.Helper()
		p, err := New(&finalizev1alpha1.Verify{Exec: &finalizev1alpha1.ExecProvider{Command: []string{os.Args[0]}, SecretData: secretData}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		obj := secret()
		call, err := p.Prepare(&Request{Rule: "secrets", Finalizer: "db.example.com/finalizer", Object: obj})
		if err != nil {
			t.Fatal(err)
		}
		if v, _, _ := unstructured.NestedString(obj.Object, "data", "password"); v != "aHVudGVyMg==" {
			t.Errorf("the object asked about was changed: data.password %q", v)
		}
		return call.Do(context.Background()).Evidence
	}
	got := run(false)
	want := `data=map[password:REDACTED] stringData=map[user:REDACTED] last-applied="REDACTED" inherited="from-the-parent"`
	if got != want {
		t.Errorf("by default\n got %s\nwant %s", got, want)
	}
	got = run(true)
	want = `data=map[password:aHVudGVyMg==] stringData=map[user:REDACTED] last-applied="{\"stringData\":{\"password\":\"hunter2\"}}"`
	if !strings.HasPrefix(got, want) {
		t.Errorf("with secretData\n got %s\nwant %s", got, want)
	}
}

// TestExecAPlaceholderIdentityIsNoValue: the whole identity goes to the program, so a
// placeholder in any of its values means no request.
func TestExecAPlaceholderIdentityIsNoValue(t *testing.T) {
	p, err := New(&finalizev1alpha1.Verify{Exec: &finalizev1alpha1.ExecProvider{Command: []string{os.Args[0]}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: object}
	_, err = p.Prepare(&Request{Rule: "dbs", Finalizer: "db.example.com/finalizer", Object: obj, Identity: map[string]string{"arn": "arn:aws:rds:db", "external-name": "None"}})
	if err == nil || err.Error() != `identity value external-name is "None", a placeholder, not a value` {
		t.Errorf("got %v", err)
	}
}

// TestExecAProgramThatCannotStartCannotRun: a missing program is not an Unknown about one
// object but a rule that cannot verify anything: the provider is not built, as for a
// credential that cannot be read, so that an idle pass fails too. One that goes after the
// provider was built cannot run when it is called.
func TestExecAProgramThatCannotStartCannotRun(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "check-rds")
	if _, err := New(&finalizev1alpha1.Verify{Exec: &finalizev1alpha1.ExecProvider{Command: []string{missing}}}, Options{}); err == nil ||
		!strings.Contains(err.Error(), "command[0]: the program "+missing+" cannot run: ") || strings.Contains(err.Error(), "a script for") {
		t.Errorf("a missing program: %v", err)
	}
	// A script whose interpreter is missing (a shell script in the release image, which
	// has no shell) is there, yet cannot start: the error says why.
	script := filepath.Join(t.TempDir(), "check-s3")
	if err := os.WriteFile(script, []byte("#!/nonexistent/sh -eu\necho never\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := New(&finalizev1alpha1.Verify{Exec: &finalizev1alpha1.ExecProvider{Command: []string{script}}}, Options{}); err == nil ||
		!strings.Contains(err.Error(), "command[0]: the program "+script+" cannot run (it is a script for /nonexistent/sh, which does not exist here; the release image has no shell: docs/providers.md, \"Where the program runs\")") {
		t.Errorf("a script without its interpreter: %v", err)
	}
	// A program removed after the provider was built cannot run when called.
	gone := filepath.Join(t.TempDir(), "check-gone")
	if err := os.WriteFile(gone, []byte("#!/bin/sh\necho never\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	call := prepare(t, newProvider(t, &finalizev1alpha1.Verify{Exec: &finalizev1alpha1.ExecProvider{Command: []string{gone}}}, Options{}))
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if a := call.Do(context.Background()); a.Verdict != finalizev1alpha1.VerdictUnknown || !a.CannotRun || !strings.Contains(a.Evidence, "exec "+gone+": the program cannot run") {
		t.Errorf("a program gone since: %+v", a)
	}
	// A program that starts and fails is an answer about the object, not a broken rule.
	if a := execAsk(t, "fail", 10*time.Second); a.CannotRun {
		t.Errorf("a failing program: %+v", a)
	}
}

// TestExecSecretEnvironmentIsShownNowhere: a credential the rule gives the program
// (valueFrom: an environment variable, or a file read at every run) and one it inherits
// under a credential-like name are registered with the redactor: the program that prints
// them on stderr or in its evidence has them REDACTED. A variable whose name says nothing
// of a credential is left as it is.
func TestExecSecretEnvironmentIsShownNowhere(t *testing.T) {
	t.Setenv("PROVIDER_MODE", "secrets")
	t.Setenv("SERVICE_PASSWORD", "inherited-pa55word")
	t.Setenv("PLAIN", "plain-value-shown")
	file := filepath.Join(t.TempDir(), "token")
	for _, src := range []*finalizev1alpha1.ValueSource{{Env: "KF_UNIT_EXEC_TOKEN"}, {File: file}} {
		token := "unit-exec-token-" + filepath.Base(src.Env+src.File)
		t.Setenv("KF_UNIT_EXEC_TOKEN", token)
		if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env := []finalizev1alpha1.EnvVar{{Name: "API_TOKEN", ValueFrom: src}}
		for _, succeed := range []string{"", "1"} {
			t.Setenv("SUCCEED", succeed)
			a := askVia(t, &finalizev1alpha1.Verify{Exec: &finalizev1alpha1.ExecProvider{Command: []string{os.Args[0]}, Env: env}}, Options{})
			want := "exit status 3; stderr: SERVICE_PASSWORD=REDACTED PLAIN=plain-value-shown\n403 for REDACTED"
			if succeed != "" {
				want = "asked with REDACTED"
			}
			if !strings.Contains(a.Evidence, want) || strings.Contains(a.Evidence, "unit-exec") || strings.Contains(a.Evidence, "pa55") {
				t.Errorf("%+v: got %q, want it saying %q", src, a.Evidence, want)
			}
		}
	}
	// A source that is unset, too short to be a credential or, at run time, unreadable:
	// the provider cannot be built, or the program does not run.
	t.Setenv("KF_UNIT_SHORT", "s3cr3t")
	for src, says := range map[string]string{"KF_UNIT_UNSET": "environment variable API_TOKEN: environment variable KF_UNIT_UNSET is not set",
		"KF_UNIT_SHORT": "environment variable API_TOKEN: environment variable KF_UNIT_SHORT is shorter than 8 bytes"} {
		spec := &finalizev1alpha1.ExecProvider{Command: []string{os.Args[0]}, Env: []finalizev1alpha1.EnvVar{{Name: "API_TOKEN", ValueFrom: &finalizev1alpha1.ValueSource{Env: src}}}}
		if _, err := New(&finalizev1alpha1.Verify{Exec: spec}, Options{}); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: got %v", src, err)
		}
	}
	spec := &finalizev1alpha1.ExecProvider{Command: []string{os.Args[0]}, Env: []finalizev1alpha1.EnvVar{{Name: "API_TOKEN", ValueFrom: &finalizev1alpha1.ValueSource{File: file}}}}
	p, err := New(&finalizev1alpha1.Verify{Exec: spec}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	call, err := p.Prepare(&Request{Rule: "dbs", Finalizer: "db.example.com/finalizer", Object: &unstructured.Unstructured{Object: object}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if a := call.Do(context.Background()); !a.CannotRun || !strings.Contains(a.Evidence, ": not run: environment variable API_TOKEN: file "+file+" is empty") {
		t.Errorf("an emptied file: %+v", a)
	}
}

// TestExecRefusesOptionsAndControlCharacters: a value that starts an argument and begins
// with '-' would be an option of the program ("--rm"), and a control character is
// nothing an identity holds: both are refused before the program runs, unless the rule
// allows them. After literal text ("--id=") a leading '-' is only part of the value.
func TestExecRefusesOptionsAndControlCharacters(t *testing.T) {
	t.Setenv("PROVIDER_MODE", "gone")
	marker := filepath.Join(t.TempDir(), "ran")
	t.Setenv("MARKER", marker)
	for _, tt := range []struct {
		name     string
		arg      string
		dash, cc bool
		wantErr  string
	}{
		{"an option", "{.metadata.annotations.dash}", false, false, `command[1]: {.metadata.annotations.dash}: "--rm" starts an argument with "-"`},
		{"an option, allowed", "{.metadata.annotations.dash}", true, false, ""},
		{"after literal text", "--id={.metadata.annotations.dash}", false, false, ""},
		{"a tab", "x{.metadata.annotations.tab}", false, false, `"a\tb" holds a control character (U+0009)`},
		{"a tab, allowed", "{.metadata.annotations.tab}", false, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, &finalizev1alpha1.Verify{Exec: &finalizev1alpha1.ExecProvider{Command: []string{os.Args[0], tt.arg},
				AllowLeadingDash: tt.dash, AllowControlCharacters: tt.cc}}, Options{})
			_, err := p.Prepare(request())
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func init() {
	examples["exec"] = &finalizev1alpha1.Verify{Exec: &finalizev1alpha1.ExecProvider{
		Command: []string{"/usr/local/bin/instance-gone", "--id={.status.id}", "{.metadata.name}"},
		Env:     []finalizev1alpha1.EnvVar{{Name: "REGION", Value: "eu-west-1"}, {Name: "API_TOKEN", ValueFrom: &finalizev1alpha1.ValueSource{File: "/var/run/token"}}},
	}}
}
