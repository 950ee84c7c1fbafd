package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// onTerminal runs kubectl-finalize on a pseudo-terminal and types input.
func onTerminal(t *testing.T, input string, args ...string) string {
	t.Helper()
	return cli.Cmd{Path: filepath.Join(binDir, "kubectl-finalize"), Args: append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...),
		Stdin: input, Terminal: true}.Run(t).Stdout
}

// TestRemoveAsksOnATerminal: the question defaults to No; "y" removes.
func TestRemoveAsksOnATerminal(t *testing.T) {
	ctx := t.Context()
	ns := cp.Namespace(t)
	c := cp.Kube(t).CoreV1().ConfigMaps(ns)
	fixture.Stuck(t, c, fixture.ConfigMap("cfg", nil, "a.example.com/x"))
	args := []string{"remove", "configmap/cfg", "-n", ns, "--finalizer", "a.example.com/x", "--force-unverified", "--reason", "INC-7"}
	for _, answer := range []string{"\n", "n\n", "nope\n"} {
		out := onTerminal(t, answer, args...)
		if !strings.Contains(out, "Remove 1 finalizer from 1 object? [y/N]: ") || !strings.Contains(out, "Nothing was removed.") {
			t.Errorf("answer %q: %q", answer, out)
		}
	}
	if cm, err := c.Get(ctx, "cfg", metav1.GetOptions{}); err != nil || len(cm.Finalizers) != 1 {
		t.Fatalf("declining must keep the finalizer: %v %v", cm, err)
	}
	out := onTerminal(t, "y\n", args...)
	if !strings.Contains(out, "configmaps/cfg -n "+ns+": finalizer a.example.com/x removed; the object is gone") {
		t.Errorf("answer y: %q", out)
	}
}
