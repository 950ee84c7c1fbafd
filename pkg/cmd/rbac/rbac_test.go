package rbac

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

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

// TestHelmValues: -o helm-values prints the grants as the chart's values (the
// ClusterRole's rules and what each is for, a Role in each namespace a rule names, by
// its suffix after --name), and refuses what the chart decides itself.
func TestHelmValues(t *testing.T) {
	policy := writePolicy(t, "- {name: team, finalizers: [x.example.com/y], resources: [configmaps], namespaces: [team-a], verify: {exec: {command: [x]}}}\n"+
		"- {name: dbs, finalizers: [x.example.com/y], resources: [databases.db.example.com], verify: {exec: {command: [x]}}}\n")
	r := cmdtesting.Run(NewCmdRBAC, cmdtesting.NewFactory(), "", "--policy", policy, "-o", "helm-values")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var v chartValues
	if err := yaml.UnmarshalStrict([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("%v:\n%s", err, r.Stdout)
	}
	if !strings.HasPrefix(r.Stdout, "# Values of the kubectl-finalize chart") || len(v.RBAC.ClusterRules) == 0 ||
		!strings.Contains(v.RBAC.ClusterGrants, "rule dbs") || len(v.RBAC.Roles) != 1 {
		t.Fatalf("values:\n%s", r.Stdout)
	}
	if role := v.RBAC.Roles[0]; role.NameSuffix != "" || role.Namespace != "team-a" || role.Rules[0].Resources[0] != "configmaps" || !strings.Contains(role.Grants, "rule team") {
		t.Errorf("the Role of team-a: %+v", role)
	}
	for _, flags := range [][]string{{"--service-account", "ops/kf"}, {"--leader-elect-namespace", "ops"}, {"--name", "other"}} {
		r := cmdtesting.Run(NewCmdRBAC, cmdtesting.NewFactory(), "", append([]string{"--policy", policy, "-o", "helm-values"}, flags...)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, flags[0]+" does not apply to -o helm-values") {
			t.Errorf("%v: exit %d, stderr %s", flags, r.Code, r.Stderr)
		}
	}
	if r := cmdtesting.Run(NewCmdRBAC, cmdtesting.NewFactory(), "", "--policy", policy, "-o", "json"); r.Code != 2 || !strings.Contains(r.Stderr, `the output format "json", allowed formats are: yaml,helm-values`) {
		t.Errorf("-o json: exit %d, stderr %s", r.Code, r.Stderr)
	}
}
