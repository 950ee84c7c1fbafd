package reconcile

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// RBACOptions say what the RBAC of a pass is for.
type RBACOptions struct {
	// Name names the ClusterRole, its binding and the leader election Role.
	Name string
	// ServiceAccount, if set, is bound to the roles ("namespace/name").
	ServiceAccountNamespace, ServiceAccountName string
	// LeaderElectNamespace, if set, adds a Role for the Lease in that namespace.
	LeaderElectNamespace string
	// Discover lists the types the cluster serves, to resolve the globs of the rules'
	// resources the way a pass does (ListedTypes); nil means globs cannot be resolved.
	Discover Discover
	// Mapper resolves the resource of a kubernetes provider the way the provider does;
	// nil means it cannot be resolved.
	Mapper func() (meta.RESTMapper, error)
}

// UnresolvedError is a name in a policy that the cluster cannot resolve to a type: the
// pass could not use it either.
type UnresolvedError struct {
	Rule, Field, Value string
	Err                error
}

func (e *UnresolvedError) Error() string {
	if e.Rule == "" {
		return fmt.Sprintf("%s %q: %v", e.Field, e.Value, e.Err)
	}
	return fmt.Sprintf("rule %s: %s %q: %v", e.Rule, e.Field, e.Value, e.Err)
}

func (e *UnresolvedError) Unwrap() error { return e.Err }

var namespacesType = schema.GroupResource{Resource: "namespaces"}

// everyType is "*" in every API group.
var everyType = schema.GroupResource{Group: "*", Resource: "*"}

// The types the writes of the kinds of removal need besides the objects' own.
var (
	namespacesFinalize = schema.GroupResource{Resource: "namespaces/finalize"}
	podsType           = schema.GroupResource{Resource: "pods"}
	leasesType         = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
)

// writeVerbs are the verbs the write of kind needs on gr (a subresource as
// "namespaces/finalize"): what the permission check of a pass asks before it writes
// (plan.Kind.Permissions), so that the role grants what is checked, written once.
func writeVerbs(kind plan.Kind, gr schema.GroupResource) []string {
	t := &plan.Target{Ref: kube.Ref{Resource: kube.Resource{GroupVersionResource: gr.WithVersion("")}, Namespace: "any"}, Kind: kind, Node: "any"}
	var verbs []string
	for _, p := range kind.Permissions(t) {
		if p.What() == gr.String() {
			verbs = append(verbs, p.Verb)
		}
	}
	return verbs
}

// GrantsAnnotation is the annotation on each Role and ClusterRole `kubectl finalize rbac`
// prints that says what each of its rules is for, one line per rule: "rules[0]: ...".
// An annotation, not a YAML comment: it survives kubectl apply into the cluster, where
// an auditor reads it with kubectl get -o yaml, and it is valid JSON.
const GrantsAnnotation = "kubectl-finalize.github.io/grants"

// RBAC is the least-privilege RBAC a pass of p needs: get and list on the types it lists
// (ListedTypes, the pass's own resolution) and patch only on the types its rules act on,
// each in a Role in every namespace the rules that match the type name, when all of
// them name their namespaces literally, and in the ClusterRole otherwise (a rule
// without namespaces, or with a glob, or a cluster-scoped type); get (a name) or list (a
// selector) on the type each kubernetes provider of this cluster reads, resolved as the
// provider resolves it, get on namespaces when a preset reads the namespace's
// annotations, update on namespaces/finalize only when a rule may remove a namespace's
// own finalizer, for force deletions get on nodes, get and delete on pods (in a Role per
// namespace when every waitsForNode rule names its namespaces literally) and get,
// list and watch on leases in kube-node-lease (a Role there), create on events, on selfsubjectreviews and
// selfsubjectaccessreviews, and the Lease when leader election is on. Each Role and
// ClusterRole says what each of its rules is for (GrantsAnnotation). Warnings say where
// a rule forces broad permissions, which names were resolved to what, and where globs
// were resolved against the cluster as it is now.
func RBAC(p *policy.Policy, opts RBACOptions) ([]runtime.Object, []string, error) {
	var warnings []string
	res := &resolver{discover: opts.Discover}
	listed, err := listedTypes(p, res)
	if err != nil {
		return nil, nil, err
	}
	if len(listed.Unresolved) > 0 {
		var failed []string
		for _, in := range listed.Unresolved {
			failed = append(failed, fmt.Sprintf("%s (%s)", in.GroupVersion, in.Message))
		}
		return nil, nil, fmt.Errorf("the discovery of %s failed, and the globs of the rules' resources may match types there: the role cannot name them; try again when the API group is served", strings.Join(failed, ", "))
	}
	warnings = append(warnings, listed.Resolved...)
	warnings = append(warnings, listed.Unserved...)
	// The rules match, and so are granted, by what their names resolved to.
	p = listed.Policy
	g := &grants{cluster: verbsOf{}, namespaced: map[string]verbsOf{}}
	if listed.All {
		warnings = append(warnings, "a rule names no resources (or may remove a namespace's own finalizer): a pass lists every type, so the role reads every type of the cluster, secrets included")
		g.add(nil, everyType, fmt.Sprintf("get, list every type: rule %s names no resources or may remove a namespace's own finalizer (proving a namespace empty takes listing every type in it), so the pass lists every type cluster-wide", names(rulesOfAll(p))), "get", "list")
	}
	for _, gr := range listed.Types {
		g.add(listed.Namespaces[gr], gr, fmt.Sprintf("get, list %s: the pass lists them%s to find the stuck objects rule %s matches", gr, in(listed.Namespaces[gr]), names(rulesOf(p, gr))), "get", "list")
	}
	warnings = append(warnings, globWarnings(p, res)...)
	// What the providers read of the cluster itself, named as they resolve it, where they
	// read it (providerNamespaces).
	for _, r := range p.Rules {
		spec := provider.Of(&r.Spec.Verify)
		if spec == nil {
			continue
		}
		for _, read := range spec.Reads() {
			typ, err := providerType(r.Name, read, opts.Mapper)
			if err != nil {
				return nil, nil, err
			}
			gr := typ.GroupResource()
			if listed.All {
				continue // get and list on every type
			}
			namespaces, warning := providerNamespaces(r, spec.Kind(), read, typ.Namespaced, gr)
			if warning != "" {
				warnings = append(warnings, warning)
			}
			g.add(namespaces, gr, fmt.Sprintf("%s %s: the %s provider of rule %s %s%s", read.Verb, gr, spec.Kind(), r.Name, read.Purpose, in(namespaces)), read.Verb)
		}
	}
	// What presets read besides the object: the annotations of its namespace.
	for _, r := range p.Rules {
		if r.Preset != nil && r.Preset.NeedsNamespace && !listed.All {
			g.add(nil, namespacesType, fmt.Sprintf("get namespaces: the preset of rule %s reads the annotations of the object's namespace", r.Name), "get")
		}
	}
	// And the records in which an operator keeps where it put an object's resource (a
	// ProviderConfigUsage), for the types the rule lists.
	for _, r := range p.Rules {
		if r.Preset == nil || listed.All {
			continue
		}
		for _, gr := range listed.Types {
			if !r.MatchesType(gr.String()) {
				continue
			}
			if resource, kind, ok := r.Preset.ScopeRecordType(gr.Group); ok {
				rec := schema.ParseGroupResource(resource)
				g.add(listed.Namespaces[gr], rec, fmt.Sprintf("get %s: the preset of rule %s reads the %s of each %s, where its operator records where it put the resource%s", rec, r.Name, kind, gr, in(listed.Namespaces[gr])), "get")
			}
		}
	}
	// Writes: patch on the types the rules act on, where they act on them.
	acted, actAll, err := actedTypes(p, res)
	if err != nil {
		return nil, nil, err
	}
	if actAll != nil {
		warnings = append(warnings, "a rule names no resources: the role may patch every type to remove finalizers; name the resources of each rule to narrow it")
		g.add(nil, everyType, fmt.Sprintf("patch every type: rule %s names no resources, and removes finalizers with a patch", names(actAll)), writeVerbs(plan.Patch, everyType)...)
	}
	for _, a := range acted {
		g.add(a.namespaces, a.gr, fmt.Sprintf("patch %s: the pass removes%s the finalizers whose external resource rule %s verified gone", a.gr, in(a.namespaces), names(a.rules)), writeVerbs(plan.Patch, a.gr)...)
	}
	warnings = append(warnings, clusterWideWarnings(p, res, listed)...)
	if p.MatchesNamespaceFinalizers() {
		var rules []string
		for _, r := range p.Rules {
			if !r.Spec.WaitsForNode && r.MatchesType("namespaces") {
				rules = append(rules, r.Name)
			}
		}
		g.add(nil, namespacesFinalize, fmt.Sprintf("update namespaces/finalize: rule %s may remove a namespace's own finalizer (spec.finalizers)", names(rules)), writeVerbs(plan.Finalize, namespacesFinalize)...)
	}
	// A force deletion reads the pod, its node and the node's Lease afresh, then deletes
	// the pod; a rule whose provider is checked against Ready nodes lists them. Pods are
	// deleted in the rules' namespaces only when every such rule names them literally.
	podNamespaces, forceDeletes, everywhere := []string{}, false, false
	var forceRules []string
	for _, r := range p.Rules {
		if !r.Spec.WaitsForNode {
			continue
		}
		forceDeletes = true
		forceRules = append(forceRules, r.Name)
		g.add(nil, plan.Nodes, "get nodes: a force deletion reads the pod's node afresh: a node that exists refuses it", writeVerbs(plan.ForceDelete, plan.Nodes)...)
		if r.Controls > 0 && provider.Of(&r.Spec.Verify) != nil {
			g.add(nil, schema.GroupResource{Resource: "nodes"}, fmt.Sprintf("list nodes: the provider of rule %s is checked against the Ready nodes", r.Name), "list")
		}
		namespaces, literal := literalNamespaces(r)
		if !literal {
			if !everywhere {
				warnings = append(warnings, fmt.Sprintf("rule %s force-deletes pods in namespaces it does not name literally: the role may delete pods in every namespace; name the namespaces of each waitsForNode rule to narrow it to a Role in each", r.Name))
			}
			everywhere = true
			continue
		}
		for _, ns := range namespaces {
			if !slices.Contains(podNamespaces, ns) {
				podNamespaces = append(podNamespaces, ns)
			}
		}
	}
	forcePurpose := fmt.Sprintf("get, delete pods: rule %s force-deletes pods whose node is gone, read afresh first", names(forceRules))
	if everywhere {
		g.add(nil, podsType, forcePurpose, writeVerbs(plan.ForceDelete, podsType)...)
	}
	g.add(nil, schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "create events: each removal is recorded as an Event on its object (or in default)", "create")
	g.add(nil, schema.GroupResource{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}, "create selfsubjectreviews: the pass says who it runs as", "create")
	g.add(nil, schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}, "create selfsubjectaccessreviews: the pass asks whether it may make each write before it writes anything", "create")
	labels := map[string]string{"app.kubernetes.io/name": "kubectl-finalize"}
	rules, purposes := g.cluster.rules()
	role := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Labels: labels, Annotations: purposeAnnotation(purposes)}, Rules: rules}
	objs := []runtime.Object{role}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: opts.ServiceAccountNamespace, Name: opts.ServiceAccountName}}
	if opts.ServiceAccountName != "" {
		objs = append(objs, &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: opts.Name}, Subjects: subject})
	}
	// namespaced adds a Role of v in ns, and its binding.
	namespaced := func(name, ns string, v verbsOf) {
		rules, purposes := v.rules()
		r := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: purposeAnnotation(purposes)}, Rules: rules}
		objs = append(objs, r)
		if opts.ServiceAccountName != "" {
			objs = append(objs, &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}, Subjects: subject})
		}
	}
	// The types the rules read and patch only in the namespaces they name: a Role in each.
	for _, ns := range slices.Sorted(maps.Keys(g.namespaced)) {
		namespaced(opts.Name, ns, g.namespaced[ns])
	}
	if forceDeletes {
		// The Lease each kubelet renews: a recent renewal refuses a force deletion, and so
		// does a change the API server shows while the write watches it (listed by name,
		// then watched). Its names are the nodes', unknown in advance, so the Role is
		// namespace-wide.
		leases := verbsOf{}
		leases.add(leasesType,
			"get, list, watch leases: a force deletion reads the Lease of the pod's node, then watches it before the DELETE: a recent renewal, or a change while it watches, refuses it",
			writeVerbs(plan.ForceDelete, leasesType)...)
		namespaced(opts.Name+"-node-leases", corev1.NamespaceNodeLease, leases)
	}
	if !everywhere {
		sort.Strings(podNamespaces)
		for _, ns := range podNamespaces {
			pods := verbsOf{}
			pods.add(podsType, forcePurpose, writeVerbs(plan.ForceDelete, podsType)...)
			namespaced(opts.Name+"-force-delete-pods", ns, pods)
		}
	}
	if ns := opts.LeaderElectNamespace; ns != "" {
		lease := verbsOf{}
		lease.add(leasesType, "get, create, update leases: the Lease of the leader election (--leader-elect)", "get", "create", "update")
		namespaced(opts.Name+"-leader-election", ns, lease)
	}
	return objs, warnings, nil
}

// grants are the verbs granted on each type, cluster-wide (the ClusterRole) or in a
// namespace (a Role there).
type grants struct {
	cluster    verbsOf
	namespaced map[string]verbsOf
}

// add grants verbs on gr for purpose, in each of namespaces, or cluster-wide when there
// are none.
func (g *grants) add(namespaces []string, gr schema.GroupResource, purpose string, verbs ...string) {
	if len(namespaces) == 0 {
		g.cluster.add(gr, purpose, verbs...)
		return
	}
	for _, ns := range namespaces {
		if g.namespaced[ns] == nil {
			g.namespaced[ns] = verbsOf{}
		}
		g.namespaced[ns].add(gr, purpose, verbs...)
	}
}

// purposeAnnotation is the GrantsAnnotation of a role whose rules are for purposes.
func purposeAnnotation(purposes []string) map[string]string {
	var lines []string
	for i, p := range purposes {
		lines = append(lines, fmt.Sprintf("rules[%d]: %s", i, p))
	}
	// One line each, ended: printed as a YAML block, a line per rule, never folded.
	return map[string]string{GrantsAnnotation: strings.Join(lines, "\n") + "\n"}
}

// in says where a grant holds: " in namespace a, b", or "" for cluster-wide.
func in(namespaces []string) string {
	switch len(namespaces) {
	case 0:
		return ""
	case 1:
		return " in namespace " + namespaces[0]
	}
	return " in namespaces " + strings.Join(namespaces, ", ")
}

// names joins rule names.
func names(rules []string) string { return strings.Join(rules, ", ") }

// rulesOf are the rules that may match objects of type gr.
func rulesOf(p *policy.Policy, gr schema.GroupResource) []string {
	var out []string
	for _, r := range p.Rules {
		if r.MatchesType(gr.String()) {
			out = append(out, r.Name)
		}
	}
	return out
}

// rulesOfAll are the rules that make a pass list every type.
func rulesOfAll(p *policy.Policy) []string {
	var out []string
	for _, r := range p.Rules {
		if len(r.Spec.Resources) == 0 || (p.MatchesNamespaceFinalizers() && !r.Spec.WaitsForNode && r.MatchesType("namespaces")) {
			out = append(out, r.Name)
		}
	}
	return out
}

// clusterWideWarnings name the rules that make a namespaced type read (and patched)
// cluster-wide, with the types: naming the rule's namespaces narrows it to a Role in each.
func clusterWideWarnings(p *policy.Policy, res *resolver, listed Listing) []string {
	if listed.All {
		return nil
	}
	var out []string
	for _, r := range p.Rules {
		if r.Spec.WaitsForNode {
			continue // warned with its force deletions
		}
		if _, literal := literalNamespaces(r); literal {
			continue
		}
		var types []string
		for _, gr := range listed.Types {
			if t, ok := res.served[gr]; (ok && !t.Namespaced) || gr == namespacesType || !r.MatchesType(gr.String()) {
				continue
			}
			types = append(types, gr.String())
		}
		if len(types) == 0 {
			continue
		}
		what := "names no namespaces"
		if len(r.Spec.Namespaces) > 0 {
			what = "names its namespaces with a glob"
		}
		out = append(out, fmt.Sprintf("rule %s %s: the role may read and patch %s in every namespace (a ClusterRole); name the rule's namespaces literally to narrow it to a Role in each", r.Name, what, strings.Join(types, ", ")))
	}
	return out
}

// providerType is the type a provider of rule reads, resolved with the cluster's
// RESTMapper as the provider resolves it (plural, singular, Kind or short name, with or
// without its group): the role must name the plural resource.
func providerType(rule string, read provider.Read, mapper func() (meta.RESTMapper, error)) (kube.Resource, error) {
	field, resource := read.Field, read.Resource
	if mapper == nil {
		return kube.Resource{}, &UnresolvedError{Rule: rule, Field: field, Value: resource, Err: fmt.Errorf("no cluster to resolve it against")}
	}
	m, err := mapper()
	if err != nil {
		return kube.Resource{}, fmt.Errorf("rule %s: resolving %s %q: %w", rule, field, resource, err)
	}
	r, err := kube.ResolveResource(m, resource)
	if err != nil {
		return kube.Resource{}, &UnresolvedError{Rule: rule, Field: field, Value: resource,
			Err: fmt.Errorf("%w: its provider could not resolve it either, so the rule could verify nothing; name a type the cluster serves (kubectl api-resources)", err)}
	}
	return r, nil
}

// objectsNamespace is the template of the namespace of the object verified.
const objectsNamespace = "{.metadata.namespace}"

// providerNamespaces are the namespaces a provider of kind reads its type in, or nil for
// every namespace: the one its rule writes literally, or the object's own
// ({.metadata.namespace}) when the rule names its namespaces literally. A namespace
// templated otherwise is known only per object, and a selector without a namespace lists
// across all of them: the grant is cluster-wide, and the warning says so. A
// cluster-scoped type is read cluster-wide.
func providerNamespaces(r *policy.Rule, kind string, read provider.Read, namespaced bool, gr schema.GroupResource) ([]string, string) {
	if !namespaced {
		return nil, ""
	}
	ns := strings.TrimSpace(read.Namespace)
	switch {
	case ns != "" && !strings.Contains(ns, "{"):
		return []string{ns}, ""
	case ns == objectsNamespace:
		if namespaces, literal := literalNamespaces(r); literal {
			return namespaces, ""
		}
	}
	return nil, fmt.Sprintf("the %s provider of rule %s reads %s in a namespace known only per object: the role may read %s in every namespace (a ClusterRole); "+
		"to narrow it to a Role in each namespace it reads, name the provider's namespace literally, or read in the object's (namespace: %q) under a rule that names its namespaces literally", kind, r.Name, gr, gr, objectsNamespace)
}

// globWarnings say which globs were resolved, to what: the role names the types the
// cluster serves now.
func globWarnings(p *policy.Policy, res *resolver) []string {
	var out []string
	for _, r := range p.Rules {
		var globs []string
		for _, name := range r.Spec.Resources {
			if g, err := glob.Compile(name); err == nil && !g.Literal() {
				globs = append(globs, name)
			}
		}
		if len(globs) == 0 {
			continue
		}
		types, _, err := res.typesOf(r)
		if err != nil {
			continue
		}
		var names []string
		for _, gr := range types {
			if !slices.Contains(r.Spec.Resources, gr.String()) {
				names = append(names, gr.String())
			}
		}
		sort.Strings(names)
		if len(names) == 0 {
			out = append(out, fmt.Sprintf("rule %s: resources %q match no type the cluster serves now, so the role grants none for them; once a matching type is installed, a pass lists it: run kubectl finalize rbac again", r.Name, globs))
			continue
		}
		out = append(out, fmt.Sprintf("rule %s: resources %q match %s in the cluster now, and the role names those; a matching type installed later is listed by a pass but not granted: run kubectl finalize rbac again after installing one", r.Name, globs, strings.Join(names, ", ")))
	}
	return out
}

// acted is a type a pass may patch, where, and for which rules.
type acted struct {
	gr schema.GroupResource
	// namespaces, if any, are the only namespaces it is patched in.
	namespaces []string
	rules      []string
}

// actedTypes are the types whose finalizers a pass may patch away, each in the
// namespaces its rules name when all of them name theirs literally (a cluster-scoped
// type is patched cluster-wide); all names the rules that make it every type. A
// namespace is left out of a rule that only removes the namespace's own finalizer
// ("kubernetes", in its spec): that goes through namespaces/finalize, not a patch.
func actedTypes(p *policy.Policy, res *resolver) (out []*acted, all []string, err error) {
	everywhere := map[schema.GroupResource]bool{}
	for _, r := range p.Rules {
		if r.Spec.WaitsForNode {
			continue // it deletes pods, and patches nothing
		}
		if len(r.Spec.Resources) == 0 {
			all = append(all, r.Name)
			continue
		}
		grs, _, err := res.typesOf(r)
		if err != nil {
			return nil, nil, err
		}
		onlySpec := len(r.Spec.Finalizers) > 0 && !slices.ContainsFunc(r.Spec.Finalizers, func(f string) bool { return f != string(corev1.FinalizerKubernetes) })
		if onlySpec {
			grs = slices.DeleteFunc(grs, func(gr schema.GroupResource) bool { return gr == namespacesType })
		}
		namespaces, literal := literalNamespaces(r)
		for _, gr := range grs {
			i := slices.IndexFunc(out, func(a *acted) bool { return a.gr == gr })
			if i < 0 {
				out = append(out, &acted{gr: gr})
				i = len(out) - 1
			}
			a := out[i]
			a.rules = append(a.rules, r.Name)
			if t, ok := res.served[gr]; !literal || (ok && !t.Namespaced) || gr == namespacesType {
				everywhere[gr] = true
				continue
			}
			for _, ns := range namespaces {
				if !slices.Contains(a.namespaces, ns) {
					a.namespaces = append(a.namespaces, ns)
				}
			}
		}
	}
	if len(all) > 0 {
		return nil, all, nil
	}
	for _, a := range out {
		if everywhere[a.gr] {
			a.namespaces = nil
		}
		slices.Sort(a.namespaces)
	}
	return out, nil, nil
}

// verbsOf are the verbs granted on each type, each with what it is for.
type verbsOf map[schema.GroupResource]map[string][]string

func (v verbsOf) add(gr schema.GroupResource, purpose string, verbs ...string) {
	if v[gr] == nil {
		v[gr] = map[string][]string{}
	}
	for _, verb := range verbs {
		if !slices.Contains(v[gr][verb], purpose) {
			v[gr][verb] = append(v[gr][verb], purpose)
		}
	}
}

// rules makes one rule per API group and set of verbs, resources sorted: the role reads
// like a person would write it. purposes say what each rule is for.
func (v verbsOf) rules() (rules []rbacv1.PolicyRule, purposes []string) {
	type key struct{ group, verbs string }
	byKey := map[key]*rbacv1.PolicyRule{}
	var keys []key
	for gr, byVerb := range v {
		// kubectl's order of verbs; a verb it does not name comes after, never dropped.
		order := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
		sorted := slices.DeleteFunc(slices.Clone(order), func(s string) bool { _, ok := byVerb[s]; return !ok })
		for _, verb := range slices.Sorted(maps.Keys(byVerb)) {
			if !slices.Contains(order, verb) {
				sorted = append(sorted, verb)
			}
		}
		k := key{gr.Group, fmt.Sprint(sorted)}
		r, ok := byKey[k]
		if !ok {
			r = &rbacv1.PolicyRule{APIGroups: []string{gr.Group}, Verbs: sorted}
			byKey[k] = r
			keys = append(keys, k)
		}
		r.Resources = append(r.Resources, gr.Resource)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].group != keys[j].group {
			return keys[i].group < keys[j].group
		}
		return keys[i].verbs < keys[j].verbs
	})
	rules = make([]rbacv1.PolicyRule, 0, len(keys))
	for _, k := range keys {
		r := byKey[k]
		sort.Strings(r.Resources)
		var why []string
		for _, res := range r.Resources {
			for _, verb := range r.Verbs {
				for _, p := range v[schema.GroupResource{Group: k.group, Resource: res}][verb] {
					if !slices.Contains(why, p) {
						why = append(why, p)
					}
				}
			}
		}
		rules = append(rules, *r)
		purposes = append(purposes, strings.Join(why, "; "))
	}
	return rules, purposes
}
