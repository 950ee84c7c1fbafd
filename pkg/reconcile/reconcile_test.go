package reconcile

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
)

func TestOutcomePrecedence(t *testing.T) {
	failed := map[finalizev1alpha1.RemovalResult]int{finalizev1alpha1.ResultFailed: 1}
	incomplete := []finalizev1alpha1.IncompleteResource{{GroupVersion: "metrics.k8s.io/v1beta1"}}
	broken := []finalizev1alpha1.RuleStatus{{Rule: "typo", Broken: true}}
	tests := []struct {
		name string
		rep  finalizev1alpha1.ReconcileReport
		want Outcome
	}{
		{"clean", finalizev1alpha1.ReconcileReport{}, OutcomeOK},
		{"incomplete", finalizev1alpha1.ReconcileReport{Incomplete: incomplete}, OutcomeIncomplete},
		{"a failure beats incomplete", finalizev1alpha1.ReconcileReport{Incomplete: incomplete, Summary: failed}, OutcomeFailed},
		{"a broken rule", finalizev1alpha1.ReconcileReport{Rules: broken}, OutcomeFailed},
		{"the breaker beats everything", finalizev1alpha1.ReconcileReport{Incomplete: incomplete, Summary: failed, Rules: broken, Breaker: &finalizev1alpha1.Breaker{Planned: 30, MaxRemovals: 20}}, OutcomeBreaker},
	}
	for _, tt := range tests {
		if got, why := OutcomeOf(&tt.rep); got != tt.want || (got != OutcomeOK && why == "") {
			t.Errorf("%s: %s (%s), want %s", tt.name, got, why, tt.want)
		}
	}
}

func compile(t *testing.T, rules string) *policy.Policy {
	t.Helper()
	spec, errs := policy.Decode([]byte("apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nrules:\n" + rules))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p, errs, _ := policy.Compile(spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return p
}

func roleOf(t *testing.T, rules string, opts RBACOptions) (string, []string, error) {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "kf"
	}
	objs, warnings, err := RBAC(compile(t, rules), opts)
	if err != nil {
		return "", nil, err
	}
	var out []string
	for _, o := range objs {
		b, _ := yaml.Marshal(o)
		out = append(out, string(b))
	}
	return strings.Join(out, "---\n"), warnings, nil
}

func TestRBAC(t *testing.T) {
	dbs := "- {name: dbs, finalizers: [db.example.com/x], resources: [databases.db.example.com, configmaps], verify: {exec: {command: [x]}}}\n"
	role, warnings, err := roleOf(t, dbs, RBACOptions{ServiceAccountNamespace: "ops", ServiceAccountName: "kf", LeaderElectNamespace: "ops"})
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "rule dbs names no namespaces: the role may read and patch databases.db.example.com, configmaps in every namespace (a ClusterRole)") {
		t.Fatalf("%v %v", err, warnings)
	}
	// Every rule of the role says what it is for.
	if !strings.Contains(role, "kubectl-finalize.github.io/grants: |\n      rules[0]: get, list configmaps: the pass lists them to find the stuck objects rule dbs matches; patch configmaps: the pass removes the finalizers whose external resource rule dbs verified gone\n") {
		t.Errorf("the role does not say what its rules are for:\n%s", role)
	}
	for _, want := range []string{
		"- apiGroups:\n  - \"\"\n  resources:\n  - configmaps\n  verbs:\n  - get\n  - list\n  - patch\n",
		"- apiGroups:\n  - db.example.com\n  resources:\n  - databases\n  verbs:\n  - get\n  - list\n  - patch\n",
		"- apiGroups:\n  - events.k8s.io\n  resources:\n  - events\n  verbs:\n  - create\n",
		"resources:\n  - selfsubjectreviews", "resources:\n  - selfsubjectaccessreviews",
		"kind: ClusterRoleBinding", "kind: Role\n", "resources:\n  - leases\n  verbs:\n  - get\n  - create\n  - update", "kind: RoleBinding",
	} {
		if !strings.Contains(role, want) {
			t.Errorf("the role lacks %q:\n%s", want, role)
		}
	}
	for _, never := range []string{"delete", "secrets", "namespaces/finalize", "\"*\""} {
		if strings.Contains(role, never) {
			t.Errorf("the role grants %q:\n%s", never, role)
		}
	}

	role, warnings, _ = roleOf(t, "- {name: all, finalizers: [x.example.com/y], verify: {exec: {command: [x]}}}\n", RBACOptions{})
	if !strings.Contains(role, "- apiGroups:\n  - '*'\n  resources:\n  - '*'\n  verbs:\n  - get\n  - list\n  - patch\n") || len(warnings) != 2 {
		t.Errorf("a rule without resources: %v\n%s", warnings, role)
	}

	role, _, _ = roleOf(t, "- {name: ns, finalizers: [kubernetes], resources: [namespaces], allowSystem: true, verify: {kubernetes: {resource: pods, namespace: \"{.metadata.name}\", selector: \"a=b\"}}}\n", RBACOptions{Mapper: clusterMapper})
	if !strings.Contains(role, "namespaces/finalize\n  verbs:\n  - update") || !strings.Contains(role, "resources:\n  - '*'\n  verbs:\n  - get\n  - list") {
		t.Errorf("a namespace finalizer rule lists every type and may update namespaces/finalize:\n%s", role)
	}
	if strings.Contains(role, "patch") {
		t.Errorf("the namespace's own finalizer goes through namespaces/finalize; nothing is patched:\n%s", role)
	}
	role, _, _ = roleOf(t, "- {name: ns, finalizers: [kubernetes, ns.example.com/x], resources: [namespaces], allowSystem: true, verify: {exec: {command: [x]}}}\n", RBACOptions{})
	if !strings.Contains(role, "- namespaces\n  verbs:\n  - patch") {
		t.Errorf("a rule that also removes a namespace's metadata finalizer patches namespaces:\n%s", role)
	}

	// A name is read with get, and only get (a selector, with list: see TestRBACOfKubernetesProviders).
	role, _, _ = roleOf(t, "- {name: k, finalizers: [x.example.com/y], resources: [configmaps], verify: {kubernetes: {resource: machines.cluster.x-k8s.io, name: \"{.metadata.name}\"}}}\n", RBACOptions{Mapper: clusterMapper})
	if !strings.Contains(role, "- cluster.x-k8s.io\n  resources:\n  - machines\n  verbs:\n  - get\n") {
		t.Errorf("the kubernetes provider reads its type:\n%s", role)
	}

	glob := "- {name: g, finalizers: [x.example.com/y], resources: [\"*.db.example.com\"], verify: {exec: {command: [x]}}}\n"
	if _, _, err := roleOf(t, glob, RBACOptions{}); err == nil || !strings.Contains(err.Error(), "no cluster to resolve globs against") {
		t.Errorf("a glob without a cluster: %v", err)
	}
	role, _, err = roleOf(t, glob, RBACOptions{Discover: served(nil)})
	if err != nil || !strings.Contains(role, "- db.example.com\n  resources:\n  - backups\n  - databases\n") {
		t.Errorf("a resolved glob: %v\n%s", err, role)
	}
}
