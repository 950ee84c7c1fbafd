// Package cli runs the kubectl-finalize root command in the test process, with a
// kubeconfig, and returns what it printed and the exit code main would use.
package cli

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
)

// Result is what one run printed and its exit code.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs `kubectl finalize ARGS...` against the cluster of kubeconfig.
func Run(t testing.TB, kubeconfig string, args ...string) Result {
	t.Helper()
	return RunWithInput(t, kubeconfig, "", args...)
}

// RunWithInput is Run with text on stdin.
func RunWithInput(t testing.TB, kubeconfig, stdin string, args ...string) Result {
	t.Helper()
	streams, in, out, errOut := genericiooptions.NewTestIOStreams()
	in.WriteString(stdin)
	root := cmd.NewCmdFinalize(streams)
	root.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	ctx := context.Background()
	if tt, ok := t.(interface{ Context() context.Context }); ok {
		ctx = tt.Context()
	}
	err := root.ExecuteContext(ctx)
	util.PrintError(errOut, err)
	return Result{Stdout: out.String(), Stderr: errOut.String(), Code: util.ExitCode(err)}
}

// Build builds kubectl-finalize into dir, for the tests that run it as a process of its
// own, and returns the binary's path.
func Build(dir string) (string, error) {
	binary := filepath.Join(dir, "kubectl-finalize")
	if out, err := exec.Command("go", "build", "-o", binary, "github.com/kubectl-finalize/kubectl-finalize/cmd/kubectl-finalize").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kubectl-finalize: %w\n%s", err, out)
	}
	return binary, nil
}
