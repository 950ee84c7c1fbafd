package e2e

import (
	"strings"
	"testing"
)

func TestPluginDispatchAndVersion(t *testing.T) {
	r := kubectl(t, "finalize", "version")
	if r.code != 0 || r.stdout != "kubectl-finalize "+testVersion+"\n" {
		t.Fatalf("kubectl finalize version: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = kubectl(t, "finalize", "--version")
	if r.code != 0 || r.stdout != "kubectl-finalize "+testVersion+"\n" {
		t.Fatalf("kubectl finalize --version: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = kubectl(t, "plugin", "list")
	if !strings.Contains(r.stdout, "kubectl-finalize") {
		t.Fatalf("kubectl plugin list does not show kubectl-finalize: %q %q", r.stdout, r.stderr)
	}
	if strings.Contains(strings.ToLower(r.stdout+r.stderr), "warning") {
		t.Fatalf("kubectl plugin list warns: %q %q", r.stdout, r.stderr)
	}
	// Help names the command as the user types it, through kubectl.
	r = kubectl(t, "finalize", "-h")
	for _, want := range []string{"kubectl finalize [command]", "kubectl finalize [command] --help"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("kubectl finalize -h lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "kubectl-finalize [") {
		t.Errorf("kubectl finalize -h says kubectl-finalize:\n%s", r.stdout)
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
		if r.code != 2 {
			t.Errorf("%v: exit code %d, want 2 (stderr %q)", args, r.code, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("%v: an error must not print to stdout, got %q", args, r.stdout)
		}
		if !strings.HasPrefix(r.stderr, "error: ") || !strings.Contains(r.stderr, "See 'kubectl finalize") {
			t.Errorf("%v: stderr %q, want a kubectl-style error with a pointer to -h", args, r.stderr)
		}
	}
}

// TestKubectlPluginCompletion runs kubectl's completion of a plugin, which calls the
// kubectl_complete-finalize shim on PATH, which calls the binary.
func TestKubectlPluginCompletion(t *testing.T) {
	r := kubectl(t, "__complete", "finalize", "")
	if r.code != 0 {
		t.Fatalf("kubectl __complete finalize: code %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"version", "completion"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("completion of 'kubectl finalize ' lacks %q: %q", want, r.stdout)
		}
	}
	r = kubectl(t, "__complete", "finalize", "completion", "")
	if !strings.Contains(r.stdout, "kubectl") || !strings.Contains(r.stdout, "bash") {
		t.Errorf("completion of shells: %q", r.stdout)
	}
}
