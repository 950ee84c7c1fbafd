package helm

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
)

// SameGrants checks that the chart grants exactly what `kubectl finalize rbac` grants for
// policy, in both shapes: given the values `rbac --policy P -o helm-values` prints, and
// installed in namespace as release name with ServiceAccount sa, the chart's roles and
// bindings are those of `rbac --policy P --name NAME --service-account NAMESPACE/SA`,
// and with the Deployment's leader election, of `rbac ... --leader-elect-namespace
// NAMESPACE` (labels aside: the chart's are Helm's).
func SameGrants(t *testing.T, kubeconfig, policy, namespace, name, sa string) {
	t.Helper()
	r := cli.Run(t, kubeconfig, "rbac", "--policy", policy, "-o", "helm-values")
	if r.Code != 0 {
		t.Fatalf("rbac -o helm-values: exit %d: %s", r.Code, r.Stderr)
	}
	valuesFile := File(t, "rbac-values.yaml", r.Stdout)
	for _, shape := range []struct {
		mode   string
		leader []string
	}{{"cronjob", nil}, {"deployment", []string{"--leader-elect-namespace", namespace}}} {
		want := cli.Run(t, kubeconfig, append([]string{"rbac", "--policy", policy, "--name", name, "--service-account", namespace + "/" + sa}, shape.leader...)...)
		if want.Code != 0 {
			t.Fatalf("rbac: exit %d: %s", want.Code, want.Stderr)
		}
		got := Run(t, nil, "template", name, Chart(), "--namespace", namespace, "--set", "mode="+shape.mode,
			"--set", "fullnameOverride="+name, "--set", "serviceAccount.create=false", "--set", "serviceAccount.name="+sa,
			"-f", PolicyValues(t, policy), "-f", valuesFile)
		if got.Err != nil {
			t.Fatalf("helm template of the %s shape with the values of rbac -o helm-values: %v\n%s\nvalues:\n%s", shape.mode, got.Err, got.Stderr, r.Stdout)
		}
		if diff := GrantsOf(t, want.Stdout).Diff(GrantsOf(t, got.Stdout)); diff != "" {
			t.Errorf("the chart's %s shape does not grant what kubectl finalize rbac grants:\n%s\nvalues:\n%s", shape.mode, diff, r.Stdout)
		}
	}
}

// PolicyValues writes the values that give the chart the policy file's text (what
// --set-file policy.content=FILE does, for a path --set-file would split at a comma).
func PolicyValues(t testing.TB, policy string) string {
	t.Helper()
	text, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(map[string]any{"policy": map[string]string{"content": string(text)}})
	if err != nil {
		t.Fatal(err)
	}
	return File(t, "policy-values.yaml", string(b))
}

// File writes text to a file of the test's and returns its path. helm splits the paths
// of -f and --set-file at commas, which a subtest's name (so t.TempDir) may hold: the
// folder is named apart from the test.
func File(t testing.TB, name, text string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kubectl-finalize-helm-") //nolint:usetesting // t.TempDir is named after the test, and may hold a comma
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
