package e2e

import (
	"strings"
	"testing"
)

func TestPluginDispatchAndVersion(t *testing.T) {
	r := kubectl(t, "finalize", "version")
	if r.Code != 0 || r.Stdout != "kubectl-finalize "+testVersion+"\n" {
		t.Fatalf("kubectl finalize version: code %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	r = kubectl(t, "finalize", "--version")
	if r.Code != 0 || r.Stdout != "kubectl-finalize "+testVersion+"\n" {
		t.Fatalf("kubectl finalize --version: code %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	r = kubectl(t, "plugin", "list")
	if !strings.Contains(r.Stdout, "kubectl-finalize") {
		t.Fatalf("kubectl plugin list does not show kubectl-finalize: %q %q", r.Stdout, r.Stderr)
	}
	if strings.Contains(strings.ToLower(r.Stdout+r.Stderr), "warning") {
		t.Fatalf("kubectl plugin list warns: %q %q", r.Stdout, r.Stderr)
	}
	// Help names the command as the user types it, through kubectl.
	r = kubectl(t, "finalize", "-h")
	for _, want := range []string{"kubectl finalize [command]", "kubectl finalize [command] --help"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("kubectl finalize -h lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "kubectl-finalize [") {
		t.Errorf("kubectl finalize -h says kubectl-finalize:\n%s", r.Stdout)
	}
}

func TestInvalidInvocationExitsTwo(t *testing.T) {
	for _, args := range [][]string{
		{"no-such-command"},
		{"version", "--no-such-flag"},
		{"version", "-o", "table"},
		{"completion"},
	} {
		r := plugin(t, args...)
		if r.Code != 2 {
			t.Errorf("%v: exit code %d, want 2 (stderr %q)", args, r.Code, r.Stderr)
		}
		if r.Stdout != "" {
			t.Errorf("%v: an error must not print to stdout, got %q", args, r.Stdout)
		}
		if !strings.HasPrefix(r.Stderr, "error: ") || !strings.Contains(r.Stderr, "See 'kubectl finalize") {
			t.Errorf("%v: stderr %q, want a kubectl-style error with a pointer to -h", args, r.Stderr)
		}
	}
}

// TestKubectlPluginCompletion runs kubectl's completion of a plugin, which calls the
// kubectl_complete-finalize shim on PATH, which calls the binary.
func TestKubectlPluginCompletion(t *testing.T) {
	r := kubectl(t, "__complete", "finalize", "")
	if r.Code != 0 {
		t.Fatalf("kubectl __complete finalize: code %d, stderr %q", r.Code, r.Stderr)
	}
	for _, want := range []string{"version", "completion"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("completion of 'kubectl finalize ' lacks %q: %q", want, r.Stdout)
		}
	}
	r = kubectl(t, "__complete", "finalize", "completion", "")
	if !strings.Contains(r.Stdout, "kubectl") || !strings.Contains(r.Stdout, "bash") {
		t.Errorf("completion of shells: %q", r.Stdout)
	}
}
