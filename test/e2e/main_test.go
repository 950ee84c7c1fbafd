// Package e2e drives the kubectl-finalize binary, directly and through kubectl's plugin
// mechanism, against a real control plane.
package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

const testVersion = "v9.9.9-e2e"

var (
	cp *controlplane.ControlPlane
	// binDir holds kubectl-finalize, kubectl_complete-finalize and kubectl.
	binDir string
)

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.APIServer(), &cp, buildPlugin) }

// buildPlugin builds kubectl-finalize, with testVersion, and puts the completion shim
// beside it, into binDir.
func buildPlugin(dir string, _ *controlplane.Options) error {
	binDir = dir
	if err := cli.GoBuild(filepath.Join(dir, "kubectl-finalize"), "github.com/kubectl-finalize/kubectl-finalize/cmd/kubectl-finalize",
		"-ldflags", "-X github.com/kubectl-finalize/kubectl-finalize/pkg/version.version="+testVersion); err != nil {
		return err
	}
	script, err := os.ReadFile("../../completion/kubectl_complete-finalize")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "kubectl_complete-finalize"), script, 0o755)
}

// kubectl runs the kubectl built with the control plane, with the plugin on PATH and the
// admin kubeconfig.
func kubectl(t *testing.T, args ...string) cli.Result {
	t.Helper()
	return runCmd(t, filepath.Join(cp.BinDir, "kubectl"), nil, args...)
}

// plugin runs kubectl-finalize directly.
func plugin(t *testing.T, args ...string) cli.Result {
	t.Helper()
	return runCmd(t, filepath.Join(binDir, "kubectl-finalize"), nil, args...)
}

// runCmd runs bin with the plugin and kubectl on PATH, the admin kubeconfig, and env.
func runCmd(t *testing.T, bin string, env []string, args ...string) cli.Result {
	t.Helper()
	return cli.Cmd{Path: bin, Args: args, Env: append([]string{
		"PATH=" + binDir + string(os.PathListSeparator) + cp.BinDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"KUBECONFIG=" + cp.AdminKubeconfig,
	}, env...)}.Run(t)
}
