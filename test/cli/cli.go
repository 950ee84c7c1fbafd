// Package cli runs kubectl-finalize for the tests: its root command in the test process
// (Run), or a binary built from it (Build) as a process of its own (RunBinary). Cmd runs
// every process a test starts, kubectl-finalize, kubectl or a provider, and returns what
// it printed and its exit code.
package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
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
	test, in, out, errOut := genericiooptions.NewTestIOStreams()
	in.WriteString(stdin)
	// The streams pass the redactor, as main's do; klog's output is main's alone.
	streams, flush := util.RedactStreams(test)
	root := cmd.NewCmdFinalize(streams)
	root.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	err := root.ExecuteContext(testContext(t))
	util.PrintError(streams.ErrOut, err)
	flush()
	return Result{Stdout: out.String(), Stderr: errOut.String(), Code: util.ExitCode(err)}
}

// RunBinary runs the kubectl-finalize binary as a process of its own against the cluster
// of kubeconfig, with env added to the test's environment: what only main does (the
// streams and klog's output it sets up) runs too.
func RunBinary(t testing.TB, binary, kubeconfig string, env []string, args ...string) Result {
	t.Helper()
	return Cmd{Path: binary, Args: append([]string{"--kubeconfig", kubeconfig}, args...), Env: env}.Run(t)
}

// Build builds kubectl-finalize into dir, for the tests that run it as a process of its
// own, and returns the binary's path.
func Build(dir string) (string, error) {
	binary := filepath.Join(dir, "kubectl-finalize")
	return binary, GoBuild(binary, "github.com/kubectl-finalize/kubectl-finalize/cmd/kubectl-finalize")
}

// GoBuild builds the Go package pkg into the file out, with flags (-ldflags ...) before
// the package.
func GoBuild(out, pkg string, flags ...string) error {
	args := append(append([]string{"build", "-o", out}, flags...), pkg)
	if b, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// BuildInto is a controlplane.Setup that builds kubectl-finalize into the setup's
// folder and sets *binary to its path.
func BuildInto(binary *string) controlplane.Setup {
	return func(dir string, _ *controlplane.Options) (err error) {
		*binary, err = Build(dir)
		return err
	}
}

// BuildTemp builds kubectl-finalize into a new temporary directory named after pattern
// (see os.MkdirTemp). The caller removes dir.
func BuildTemp(pattern string) (binary, dir string, err error) {
	if dir, err = os.MkdirTemp("", pattern); err != nil {
		return "", "", err
	}
	if binary, err = Build(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", "", err
	}
	return binary, dir, nil
}

// WritePolicy writes a policy with minAge 0s, the fields of head and rules into a file
// of t's, and returns its path.
func WritePolicy(t testing.TB, head, rules string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	doc := "apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nminAge: 0s\n" + head + "rules:\n" + rules
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Report decodes the JSON report of a reconcile pass.
func Report(t testing.TB, r Result) *finalizev1alpha1.ReconcileReport {
	t.Helper()
	rep := &finalizev1alpha1.ReconcileReport{}
	if err := json.Unmarshal([]byte(r.Stdout), rep); err != nil {
		t.Fatalf("the report is not JSON (code %d): %v\nstdout: %s\nstderr: %s", r.Code, err, r.Stdout, r.Stderr)
	}
	return rep
}
