// Package e2e drives the kubectl-finalize binary, directly and through kubectl's plugin
// mechanism, against a real control plane.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

const testVersion = "v9.9.9-e2e"

var (
	cp *controlplane.ControlPlane
	// binDir holds kubectl-finalize, kubectl_complete-finalize and kubectl.
	binDir string
)

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.Options{}, &cp, buildPlugin) }

// buildPlugin builds kubectl-finalize, with testVersion, and puts the completion shim
// beside it, into binDir.
func buildPlugin(dir string, _ *controlplane.Options) error {
	binDir = dir
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-finalize"),
		"-ldflags", "-X github.com/kubectl-finalize/kubectl-finalize/pkg/version.version="+testVersion,
		"github.com/kubectl-finalize/kubectl-finalize/cmd/kubectl-finalize")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building kubectl-finalize: %w\n%s", err, out)
	}
	script, err := os.ReadFile("../../completion/kubectl_complete-finalize")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "kubectl_complete-finalize"), script, 0o755)
}

// result is what one run of a command printed and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

// kubectl runs the kubectl built with the control plane, with the plugin on PATH and the
// admin kubeconfig.
func kubectl(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, filepath.Join(cp.BinDir, "kubectl"), nil, args...)
}

// plugin runs kubectl-finalize directly.
func plugin(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, filepath.Join(binDir, "kubectl-finalize"), nil, args...)
}

func runCmd(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(),
		"PATH="+binDir+string(os.PathListSeparator)+cp.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+cp.AdminKubeconfig,
	)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running %s %s: %v", bin, strings.Join(args, " "), err)
	}
	return r
}
