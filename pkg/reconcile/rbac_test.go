package reconcile

import (
	"errors"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// cluster is the discovery of a cluster with a few types of its own.
var cluster = &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
	{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true, ShortNames: []string{"po"}, Verbs: []string{"get", "list"}},
		{Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", Namespaced: true, ShortNames: []string{"cm"}, Verbs: []string{"get", "list"}},
		{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", ShortNames: []string{"ns"}, Verbs: []string{"get", "list"}},
	}},
	{GroupVersion: "cluster.x-k8s.io/v1beta1", APIResources: []metav1.APIResource{
		{Name: "machines", SingularName: "machine", Kind: "Machine", Namespaced: true, ShortNames: []string{"ma"}, Verbs: []string{"get", "list"}},
	}},
	{GroupVersion: "db.example.com/v1", APIResources: []metav1.APIResource{
		{Name: "databases", SingularName: "database", Kind: "Database", Namespaced: true, Verbs: []string{"get", "list"}},
		{Name: "backups", SingularName: "backup", Kind: "Backup", Namespaced: true, Verbs: []string{"get", "list"}},
	}},
	{GroupVersion: "backing.example.com/v1", APIResources: []metav1.APIResource{
		{Name: "backends", SingularName: "backend", Kind: "Backend", Namespaced: true, ShortNames: []string{"kfbe"}, Verbs: []string{"get", "list"}},
	}},
}}}

// clusterMapper is the RESTMapper the command gives the generator, over cluster: plurals,
// singulars, kinds and short names.
func clusterMapper() (meta.RESTMapper, error) {
	groups, err := restmapper.GetAPIGroupResources(cluster)
	if err != nil {
		return nil, err
	}
	return restmapper.NewShortcutExpander(restmapper.NewDiscoveryRESTMapper(groups), cluster, nil), nil
}

// served discovers cluster, and says the discovery of failed group versions failed.
func served(failed []string) Discover {
	return func() ([]scan.Type, []finalizev1alpha1.IncompleteResource, error) {
		types, incomplete, err := scan.DiscoverTypes(cluster)
		for _, gv := range failed {
			incomplete = append(incomplete, finalizev1alpha1.IncompleteResource{GroupVersion: gv, Reason: finalizev1alpha1.ReasonDiscoveryFailed, Message: "the server is currently unable to handle the request"})
		}
		return types, incomplete, err
	}
}

// TestRBACOfKubernetesProviders: the type a kubernetes provider reads is named in the role
// as the provider resolves it, whatever way the rule writes it; one the cluster does not
// serve is refused, naming the rule and the field.
func TestRBACOfKubernetesProviders(t *testing.T) {
	rule := func(resource, lookup string) string {
		return "- {name: backing, finalizers: [x.example.com/y], resources: [configmaps], verify: {kubernetes: {resource: " + resource + ", namespace: \"{.metadata.namespace}\", " + lookup + "}}}\n"
	}
	getBackends := "- apiGroups:\n  - backing.example.com\n  resources:\n  - backends\n  verbs:\n  - get\n-"
	for _, resource := range []string{"backends", "backend", "Backend", "kfbe", "backends.backing.example.com", "backend.backing.example.com", "Backend.v1.backing.example.com"} {
		role, _, err := roleOf(t, rule(resource, `name: "{.metadata.name}"`), RBACOptions{Mapper: clusterMapper})
		if err != nil || !strings.Contains(role, getBackends) {
			t.Errorf("resource %s: %v\n%s", resource, err, role)
		}
	}
	role, _, err := roleOf(t, rule("kfbe", `selector: "app={.metadata.name}"`), RBACOptions{Mapper: clusterMapper})
	if err != nil || !strings.Contains(role, "- apiGroups:\n  - backing.example.com\n  resources:\n  - backends\n  verbs:\n  - list\n-") {
		t.Errorf("a selector lists, and only lists: %v\n%s", err, role)
	}
	for _, resource := range []string{"gizmos", "backend.other.example.com"} {
		_, _, err := roleOf(t, rule(resource, `name: "{.metadata.name}"`), RBACOptions{Mapper: clusterMapper})
		var unresolved *UnresolvedError
		if !errors.As(err, &unresolved) || !strings.Contains(err.Error(), `rule backing: verify.kubernetes.resource "`+resource+`": the server doesn't have a resource type`) {
			t.Errorf("resource %s, which the cluster does not serve: %v", resource, err)
		}
	}
	if _, _, err := roleOf(t, rule("backend", `name: "{.metadata.name}"`), RBACOptions{}); err == nil || !strings.Contains(err.Error(), "no cluster to resolve it against") {
		t.Errorf("without a cluster: %v", err)
	}
	// Another cluster's reads are that cluster's RBAC.
	role, _, err = roleOf(t, rule("gizmos", `name: "{.metadata.name}", context: workload`), RBACOptions{})
	if err != nil || strings.Contains(role, "gizmos") {
		t.Errorf("a provider of another cluster: %v\n%s", err, role)
	}
}

// TestRBACOfPresets: a preset that reads the annotations of the object's namespace gets
// get on namespaces, and only get; the others get nothing on namespaces.
func TestRBACOfPresets(t *testing.T) {
	role, _, err := roleOf(t, "- {name: rds, preset: ack, resources: [dbinstances.rds.services.k8s.aws], verify: {exec: {command: [x]}}}\n", RBACOptions{})
	if err != nil || !strings.Contains(role, "- apiGroups:\n  - \"\"\n  resources:\n  - namespaces\n  verbs:\n  - get\n-") {
		t.Errorf("ack reads the namespace: %v\n%s", err, role)
	}
	role, _, err = roleOf(t, "- {name: buckets, preset: crossplane-managed, resources: [buckets.s3.aws.upbound.io], verify: {exec: {command: [x]}}}\n", RBACOptions{})
	if err != nil || strings.Contains(role, "namespaces") {
		t.Errorf("crossplane-managed does not read the namespace: %v\n%s", err, role)
	}
	if strings.Contains(role, "providerconfigusages") {
		t.Errorf("an upjet provider's buckets keep no ProviderConfigUsage that is read:\n%s", role)
	}
	// provider-kubernetes's Objects: the ProviderConfigUsage the provider records where it
	// applied each to, cluster-wide for v1's cluster-scoped Objects, in the rule's
	// namespaces for v2's.
	role, _, err = roleOf(t, "- {name: objects, preset: crossplane-managed, resources: [objects.kubernetes.crossplane.io], verify: {exec: {command: [x]}}}\n", RBACOptions{})
	if err != nil || !strings.Contains(role, "- apiGroups:\n  - kubernetes.crossplane.io\n  resources:\n  - providerconfigusages\n  verbs:\n  - get\n") {
		t.Errorf("provider-kubernetes's usages: %v\n%s", err, role)
	}
	objs, _, err := RBAC(compile(t, "- {name: objects, preset: crossplane-managed, namespaces: [team-a], resources: [objects.kubernetes.m.crossplane.io], verify: {exec: {command: [x]}}}\n"), RBACOptions{Name: "kf", ServiceAccountName: "kf", ServiceAccountNamespace: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	var inTeamA bool
	for _, o := range objs {
		if r, ok := o.(*rbacv1.Role); ok && r.Namespace == "team-a" {
			for _, rule := range r.Rules {
				inTeamA = inTeamA || (slices.Equal(rule.APIGroups, []string{"kubernetes.m.crossplane.io"}) && slices.Equal(rule.Resources, []string{"providerconfigusages"}) && slices.Equal(rule.Verbs, []string{"get"}))
			}
		}
	}
	if !inTeamA {
		t.Errorf("v2's usages are read in the rule's namespace: %v", objs)
	}
}

// TestListedTypes: what a pass lists and the RBAC grants, from one resolution.
func TestListedTypes(t *testing.T) {
	asked := 0
	discover := func(failed ...string) Discover {
		return func() ([]scan.Type, []finalizev1alpha1.IncompleteResource, error) {
			asked++
			return served(failed)()
		}
	}
	rule := func(resources string) string {
		return "- {name: r, finalizers: [x.example.com/y], resources: " + resources + ", verify: {exec: {command: [x]}}}\n"
	}
	gr := schema.ParseGroupResource
	tests := []struct {
		name       string
		rules      string
		failed     []string
		all        bool
		types      []schema.GroupResource
		unresolved []string
		scan       []schema.GroupResource
		discovers  bool
	}{
		{name: "names", rules: rule("[configmaps, databases.db.example.com, widgets.not-installed.example.com]"), discovers: true,
			types: []schema.GroupResource{gr("configmaps"), gr("databases.db.example.com"), gr("widgets.not-installed.example.com")},
			scan:  []schema.GroupResource{gr("configmaps"), gr("databases.db.example.com"), gr("widgets.not-installed.example.com")}},
		{name: "a glob", rules: rule(`[configmaps, "*.db.example.com"]`), discovers: true,
			types: []schema.GroupResource{gr("configmaps"), gr("backups.db.example.com"), gr("databases.db.example.com")},
			scan:  []schema.GroupResource{gr("configmaps"), gr("backups.db.example.com"), gr("databases.db.example.com")}},
		{name: "a glob that matches nothing yet", rules: rule(`["*.nothing.example.com"]`), discovers: true, scan: []schema.GroupResource{noType}},
		{name: "a glob that may match a group whose discovery failed", rules: rule(`["*.example.com"]`), failed: []string{"metrics.example.com/v1", "metrics.k8s.io/v1beta1"}, discovers: true,
			types:      []schema.GroupResource{gr("backends.backing.example.com"), gr("backups.db.example.com"), gr("databases.db.example.com")},
			unresolved: []string{"metrics.example.com/v1"},
			scan:       []schema.GroupResource{gr("backends.backing.example.com"), gr("backups.db.example.com"), gr("databases.db.example.com"), {Group: "metrics.example.com", Resource: noType.Resource}}},
		{name: "no resources", rules: "- {name: r, finalizers: [x.example.com/y], verify: {exec: {command: [x]}}}\n", all: true},
		{name: "a namespace's own finalizer", rules: "- {name: r, finalizers: [kubernetes], resources: [namespaces], allowSystem: true, verify: {exec: {command: [x]}}}\n", all: true, discovers: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked = 0
			l, err := ListedTypes(compile(t, tt.rules), discover(tt.failed...))
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(l.Types, func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
			slices.SortFunc(tt.types, func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
			var unresolved []string
			for _, in := range l.Unresolved {
				unresolved = append(unresolved, in.GroupVersion)
			}
			if l.All != tt.all || !slices.Equal(l.Types, tt.types) || !slices.Equal(unresolved, tt.unresolved) || (asked > 0) != tt.discovers {
				t.Errorf("got all %v, types %v, unresolved %v, discovered %d times; want all %v, types %v, unresolved %v, discovery %v",
					l.All, l.Types, unresolved, asked, tt.all, tt.types, tt.unresolved, tt.discovers)
			}
			if got := l.scanResources(); !tt.all && !slices.Equal(sortedGR(got), sortedGR(tt.scan)) {
				t.Errorf("the scan lists %v, want %v", got, tt.scan)
			}
		})
	}
	// The generator refuses what it cannot name.
	if _, _, err := roleOf(t, rule(`["*.example.com"]`), RBACOptions{Discover: served([]string{"metrics.example.com/v1"})}); err == nil ||
		!strings.Contains(err.Error(), "the discovery of metrics.example.com/v1 (the server is currently unable to handle the request) failed") {
		t.Errorf("a glob that may match a group whose discovery failed: %v", err)
	}
	_, warnings, err := roleOf(t, rule(`["*.db.example.com"]`), RBACOptions{Discover: served(nil)})
	if err != nil || len(warnings) != 2 || !strings.Contains(warnings[0], `rule r: resources ["*.db.example.com"] match backups.db.example.com, databases.db.example.com in the cluster now`) ||
		!strings.Contains(warnings[0], "run kubectl finalize rbac again") || !strings.Contains(warnings[1], "rule r names no namespaces") {
		t.Errorf("a glob is resolved against the cluster as it is now, and the warning says so: %v %v", err, warnings)
	}
}

func sortedGR(in []schema.GroupResource) []schema.GroupResource {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
	return out
}

func TestMayMatchGroup(t *testing.T) {
	for _, tt := range []struct {
		pattern, group string
		want           bool
	}{
		{"*.example.com", "example.com", true},
		{"*.example.com", "db.example.com", true},
		{"*.example.com", "example.org", false},
		{"*s.db.example.com", "db.example.com", true},
		{"widgets.*", "anything.io", true},
		{"*", "", true},
		{"*.example.com", "", false},
		{"po?s", "", true},
		{"*.db.example.com", "other.example.com", false},
	} {
		if got := mayMatchGroup(tt.pattern, tt.group); got != tt.want {
			t.Errorf("mayMatchGroup(%q, %q) = %v, want %v", tt.pattern, tt.group, got, tt.want)
		}
	}
}

// TestRBACOfWaitsForNode: a rule that force-deletes pods gets get, list and delete on
// pods, get on nodes, and list on nodes only when its provider is checked against Ready
// nodes; it patches nothing.
func TestRBACOfWaitsForNode(t *testing.T) {
	role, _, err := roleOf(t, "- {name: gone-nodes, waitsForNode: true}\n", RBACOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  resources:\n  - pods\n  verbs:\n  - get\n  - list\n  - delete\n", "  resources:\n  - nodes\n  verbs:\n  - get\n"} {
		if !strings.Contains(role, want) {
			t.Errorf("role lacks %q:\n%s", want, role)
		}
	}
	if strings.Contains(role, "patch") || strings.Contains(role, "\"*\"") {
		t.Errorf("the role patches, or names every type:\n%s", role)
	}
	role, _, err = roleOf(t, "- {name: gone-nodes, waitsForNode: true, verify: {exec: {command: [x, \"{identity.providerID}\"]}}}\n", RBACOptions{})
	if err != nil || !strings.Contains(role, "  resources:\n  - nodes\n  verbs:\n  - get\n  - list\n") {
		t.Errorf("a provider is checked against Ready nodes, listed: %v\n%s", err, role)
	}
}

// TestRBACGrantsATypeWhereItsRulesAct: a type whose every rule names its namespaces is
// granted in a Role in each, and not in the ClusterRole; a rule without namespaces makes
// its type cluster-wide, with a warning naming it; a cluster-scoped type is cluster-wide.
// Every rule of every role says what it is for.
func TestRBACGrantsATypeWhereItsRulesAct(t *testing.T) {
	role, warnings, err := roleOf(t, `- {name: a-cm, finalizers: [x.example.com/y], resources: [cm], namespaces: [team-a, team-b], verify: {exec: {command: [x]}}}
- {name: dbs, finalizers: [x.example.com/y], resources: [Database.db.example.com], verify: {exec: {command: [x]}}}
- {name: ns, finalizers: [x.example.com/y], resources: [namespace], namespaces: [team-a], verify: {exec: {command: [x]}}}
`, RBACOptions{Discover: served(nil), ServiceAccountNamespace: "kf", ServiceAccountName: "kf"})
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(role, "---\n")
	cluster := docs[0]
	if strings.Contains(cluster, "configmaps") || !strings.Contains(cluster, "- db.example.com\n  resources:\n  - databases\n  verbs:\n  - get\n  - list\n  - patch\n") ||
		!strings.Contains(cluster, "  resources:\n  - namespaces\n  verbs:\n  - get\n  - list\n  - patch\n") {
		t.Errorf("the ClusterRole:\n%s", cluster)
	}
	for _, ns := range []string{"team-a", "team-b"} {
		want := "  name: kf\n  namespace: " + ns + "\nrules:\n- apiGroups:\n  - \"\"\n  resources:\n  - configmaps\n  verbs:\n  - get\n  - list\n  - patch\n"
		if !strings.Contains(role, want) || !strings.Contains(role, "kind: RoleBinding\nmetadata:\n  labels:\n    app.kubernetes.io/name: kubectl-finalize\n  name: kf\n  namespace: "+ns+"\n") {
			t.Errorf("no Role and RoleBinding of configmaps in %s:\n%s", ns, role)
		}
		if !strings.Contains(role, "rules[0]: get, list configmaps: the pass lists them in namespaces team-a, team-b to find the stuck objects rule a-cm matches; patch configmaps: the pass removes in namespaces team-a, team-b the finalizers whose external resource rule a-cm verified gone") {
			t.Errorf("the Role does not say what it is for:\n%s", role)
		}
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{`rule a-cm: resources "cm" is configmaps`, `rule dbs: resources "Database.db.example.com" is databases.db.example.com`,
		`rule ns: resources "namespace" is namespaces`, "rule dbs names no namespaces: the role may read and patch databases.db.example.com in every namespace"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no warning %q in:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "rule a-cm names") || strings.Contains(joined, "rule ns names") {
		t.Errorf("a namespaced rule (or a cluster-scoped type) is warned about:\n%s", joined)
	}
	for _, doc := range docs {
		if (strings.Contains(doc, "kind: Role\n") || strings.Contains(doc, "kind: ClusterRole\n")) &&
			strings.Count(doc, "\n- apiGroups:") != strings.Count(doc, "rules[") {
			t.Errorf("a rule of this role does not say what it is for:\n%s", doc)
		}
	}

	// A name two types answer to is refused, naming both; exclude.resources is resolved.
	two := Discover(func() ([]scan.Type, []finalizev1alpha1.IncompleteResource, error) {
		types, failed, err := served(nil)()
		types = append(types, scan.Type{Resource: kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "other.example.com", Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true},
			Names: scan.Names{Singular: "configmap", ShortNames: []string{"cm"}}})
		return types, failed, err
	})
	_, _, err = roleOf(t, "- {name: a-cm, finalizers: [x.example.com/y], resources: [cm], verify: {exec: {command: [x]}}}\n", RBACOptions{Discover: two})
	var unresolved *UnresolvedError
	if !errors.As(err, &unresolved) || !strings.Contains(err.Error(), `rule a-cm: resources "cm": it could name any of configmaps, configmaps.other.example.com`) {
		t.Errorf("an ambiguous short name: %v", err)
	}
	if _, _, err := roleOf(t, "- {name: a-cm, finalizers: [x.example.com/y], resources: [configmaps], verify: {exec: {command: [x]}}}\n", RBACOptions{Discover: two}); err != nil {
		t.Errorf("a served resource.group is itself, however many groups serve its plural: %v", err)
	}
	spec, errs := policy.Decode([]byte("apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nexclude: {resources: [secret]}\nrules:\n- {name: r, finalizers: [x.example.com/y], verify: {exec: {command: [x]}}}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p, cerrs, _ := policy.Compile(spec)
	if len(cerrs) > 0 {
		t.Fatal(cerrs)
	}
	l, err := ListedTypes(p, func() ([]scan.Type, []finalizev1alpha1.IncompleteResource, error) {
		return []scan.Type{{Resource: kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true}, Names: scan.Names{Singular: "secret"}}}, nil, nil
	})
	if err != nil || !l.Policy.Excluded(policy.Subject{Resource: "secrets", Namespace: "a"}) || p.Excluded(policy.Subject{Resource: "secrets", Namespace: "a"}) {
		t.Errorf("exclude.resources [secret] excludes secrets once resolved, and the policy as written is unchanged: %v", err)
	}
}

// TestRBACGrantsWhatEveryKindOfRemovalNeeds: a policy whose rules make every kind of
// removal gets, in the roles `rbac` prints, every permission a pass checks before it
// writes (plan.Kind.Permissions), where the pass checks it: the role and the check are
// written once, from the kinds.
func TestRBACGrantsWhatEveryKindOfRemovalNeeds(t *testing.T) {
	objs, _, err := RBAC(compile(t, `- {name: cm, finalizers: [x.example.com/y], resources: [configmaps], namespaces: [team-a], verify: {exec: {command: [x]}}}
- {name: ns, finalizers: [kubernetes], resources: [namespaces], allowSystem: true, verify: {exec: {command: [x]}}}
- {name: gone-nodes, waitsForNode: true, namespaces: [team-a]}
`), RBACOptions{Name: "kf", Discover: served(nil)})
	if err != nil {
		t.Fatal(err)
	}
	allows := func(p plan.Permission) bool {
		for _, o := range objs {
			var rules []rbacv1.PolicyRule
			switch r := o.(type) {
			case *rbacv1.ClusterRole:
				rules = r.Rules
			case *rbacv1.Role:
				if r.Namespace != p.Namespace {
					continue
				}
				rules = r.Rules
			}
			for _, rule := range rules {
				resource := p.Resource
				if p.Subresource != "" {
					resource += "/" + p.Subresource
				}
				if (slices.Contains(rule.APIGroups, p.Group) || slices.Contains(rule.APIGroups, "*")) &&
					(slices.Contains(rule.Resources, resource) || slices.Contains(rule.Resources, "*")) && slices.Contains(rule.Verbs, p.Verb) {
					return true
				}
			}
		}
		return false
	}
	configmaps := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}
	namespaces := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}}
	pods := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}
	targets := map[plan.Kind]*plan.Target{
		plan.Patch:        {Kind: plan.Patch, Ref: kube.Ref{Resource: configmaps, Namespace: "team-a", Name: "cfg"}, Finalizer: "x.example.com/y"},
		plan.Finalize:     {Kind: plan.Finalize, Ref: kube.Ref{Resource: namespaces, Name: "team-b"}, Finalizer: "kubernetes", Field: finalizev1alpha1.FieldSpecFinalizers},
		plan.ForceDelete:  {Kind: plan.ForceDelete, Ref: kube.Ref{Resource: pods, Namespace: "team-a", Name: "web-0"}, Node: "worker-3"},
		plan.UnsafeDelete: {Kind: plan.UnsafeDelete, Ref: kube.Ref{Resource: configmaps, Namespace: "team-a", Name: "cfg"}},
	}
	for _, k := range plan.Kinds {
		tg := targets[k]
		if tg == nil {
			t.Fatalf("%T: no target of that kind in this test", k)
		}
		if plan.PersonOnly[k] {
			// Never made by a pass: its write is never granted.
			if w := k.Permissions(tg)[0]; allows(w) {
				t.Errorf("%s: the roles allow %s, which only a person's remove may do", tg, w)
			}
			continue
		}
		for _, p := range append(k.Permissions(tg), plan.EventPermissions(tg.Namespace)[0]) {
			if !allows(p) {
				t.Errorf("%s: the roles do not allow %s, which a pass checks before it writes", tg, p)
			}
		}
	}
}
