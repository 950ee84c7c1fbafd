package rbac

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	cmdtesting "github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/testing"
)

func writePolicy(t *testing.T, rules string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nrules:\n"+rules), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNamesAreResolvedLikeAPass: the command resolves a kubernetes provider's resource and
// glob resources through the cluster, refuses (exit 2) a resource the cluster does not
// serve, naming the rule and the field, and warns which types a glob became.
func TestNamesAreResolvedLikeAPass(t *testing.T) {
	provider := func(resource string) string {
		return "- {name: backing, finalizers: [x.example.com/y], resources: [configmaps], verify: {kubernetes: {resource: " + resource + ", namespace: \"{.metadata.namespace}\", name: \"{.metadata.name}\"}}}\n"
	}
	tests := []struct {
		name, rules string
		code        int
		stdout      string
		stderr      string
	}{
		{"a singular", provider("deployment"), 0, "- apiGroups:\n  - apps\n  resources:\n  - deployments\n  verbs:\n  - get\n", ""},
		{"a kind", provider("Deployment"), 0, "- apiGroups:\n  - apps\n  resources:\n  - deployments\n  verbs:\n  - get\n", ""},
		{"a short name", provider("deploy"), 0, "- apiGroups:\n  - apps\n  resources:\n  - deployments\n  verbs:\n  - get\n", ""},
		{"a type the cluster does not serve", provider("gizmo"), 2, "",
			`rule backing: verify.kubernetes.resource "gizmo": the server doesn't have a resource type "gizmo"`},
		{"a glob", "- {name: dbs, finalizers: [x.example.com/y], resources: [\"*.example.com\"], verify: {exec: {command: [x]}}}\n", 0,
			"- apiGroups:\n  - db.example.com\n  resources:\n  - databases\n  verbs:\n  - get\n  - list\n  - patch\n",
			`Warning: rule dbs: resources ["*.example.com"] match databases.db.example.com in the cluster now`},
		{"a rule's type by its short name, in one namespace", "- {name: team, finalizers: [x.example.com/y], resources: [cm], namespaces: [team-a], verify: {exec: {command: [x]}}}\n", 0,
			"  name: kubectl-finalize\n  namespace: team-a\nrules:\n- apiGroups:\n  - \"\"\n  resources:\n  - configmaps\n  verbs:\n  - get\n  - list\n  - patch\n",
			`Warning: rule team: resources "cm" is configmaps, as kubectl resolves it`},
		{"a rule's type by its singular", "- {name: one, finalizers: [x.example.com/y], resources: [deployment], verify: {exec: {command: [x]}}}\n", 0,
			"- apiGroups:\n  - apps\n  resources:\n  - deployments\n  verbs:\n  - get\n  - list\n  - patch\n",
			`Warning: rule one: resources "deployment" is deployments.apps, as kubectl resolves it`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cmdtesting.Run(NewCmdRBAC, cmdtesting.NewFactory(), "", "--policy", writePolicy(t, tt.rules))
			if r.Code != tt.code || !strings.Contains(r.Stdout, tt.stdout) || !strings.Contains(r.Stderr, tt.stderr) || (tt.code != 0 && r.Stdout != "") {
				t.Errorf("code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, tt.code, r.Stdout, r.Stderr)
			}
		})
	}
}
