package reconcile

import (
	"fmt"
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
	return fmt.Sprintf("rule %s: %s %q: %v", e.Rule, e.Field, e.Value, e.Err)
}

func (e *UnresolvedError) Unwrap() error { return e.Err }

var namespacesType = schema.GroupResource{Resource: "namespaces"}

// RBAC is the least-privilege ClusterRole (and bindings) a pass of p needs: get and list
// on the types it lists (ListedTypes, the pass's own resolution), patch only on the types
// its rules act on, get (a name) or list (a selector) on the type each kubernetes provider
// of this cluster reads, resolved as the provider resolves it, get on namespaces when a
// preset reads the namespace's annotations, update on namespaces/finalize only when a rule
// may remove a namespace's own finalizer, for force deletions get on nodes, get and
// delete on pods (in a Role per namespace when every waitsForNode rule names its
// namespaces literally) and get, list and watch on leases in kube-node-lease (a Role there), create on
// events, on selfsubjectreviews and
// selfsubjectaccessreviews, and the Lease when leader election is on. Warnings say where a
// rule forces broad permissions, and where globs were resolved against the cluster as it
// is now.
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
	role := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Labels: map[string]string{"app.kubernetes.io/name": "kubectl-finalize"}}}
	grants := verbsOf{}
	if listed.All {
		warnings = append(warnings, "a rule names no resources (or may remove a namespace's own finalizer): a pass lists every type, so the role reads every type of the cluster, secrets included")
		grants.add(schema.GroupResource{Group: "*", Resource: "*"}, "get", "list")
	}
	for _, gr := range listed.Types {
		grants.add(gr, "get", "list")
	}
	warnings = append(warnings, globWarnings(p, res)...)
	// What the kubernetes providers of the cluster itself read, named as they resolve it.
	for _, r := range p.Rules {
		k := r.Spec.Verify.Kubernetes
		if k == nil || k.Kubeconfig != "" || k.Context != "" {
			continue
		}
		gr, err := providerType(r.Name, k.Resource, opts.Mapper)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case listed.All: // get and list on every type
		case k.Name != "":
			grants.add(gr, "get")
		default:
			grants.add(gr, "list")
		}
	}
	// What presets read besides the object: the annotations of its namespace.
	for _, r := range p.Rules {
		if r.Preset != nil && r.Preset.NeedsNamespace && !listed.All {
			grants.add(namespacesType, "get")
		}
	}
	// Writes: patch on the types the rules act on.
	acted, actAll, err := actedTypes(p, res)
	if err != nil {
		return nil, nil, err
	}
	if actAll {
		warnings = append(warnings, "a rule names no resources: the role may patch every type to remove finalizers; name the resources of each rule to narrow it")
		grants.add(schema.GroupResource{Group: "*", Resource: "*"}, "patch")
	}
	for _, gr := range acted {
		grants.add(gr, "patch")
	}
	if p.MatchesNamespaceFinalizers() {
		grants.add(schema.GroupResource{Resource: "namespaces/finalize"}, "update")
	}
	// A force deletion reads the pod, its node and the node's Lease afresh, then deletes
	// the pod; a rule whose provider is checked against Ready nodes lists them. Pods are
	// deleted in the rules' namespaces only when every such rule names them literally.
	podNamespaces, forceDeletes, everywhere := []string{}, false, false
	for _, r := range p.Rules {
		if !r.Spec.WaitsForNode {
			continue
		}
		forceDeletes = true
		grants.add(schema.GroupResource{Resource: "nodes"}, "get")
		if r.Controls > 0 && (r.Spec.Verify.HTTP != nil || r.Spec.Verify.Exec != nil || r.Spec.Verify.Kubernetes != nil) {
			grants.add(schema.GroupResource{Resource: "nodes"}, "list")
		}
		literal := len(r.Spec.Namespaces) > 0
		for _, ns := range r.Spec.Namespaces {
			if g, err := glob.Compile(ns); err != nil || !g.Literal() {
				literal = false
			}
		}
		if !literal {
			if !everywhere {
				warnings = append(warnings, fmt.Sprintf("rule %s force-deletes pods in namespaces it does not name literally: the role may delete pods in every namespace; name the namespaces of each waitsForNode rule to narrow it to a Role in each", r.Name))
			}
			everywhere = true
			continue
		}
		for _, ns := range r.Spec.Namespaces {
			if !slices.Contains(podNamespaces, ns) {
				podNamespaces = append(podNamespaces, ns)
			}
		}
	}
	if everywhere {
		grants.add(schema.GroupResource{Resource: "pods"}, "get", "delete")
	}
	grants.add(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "create")
	grants.add(schema.GroupResource{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}, "create")
	grants.add(schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}, "create")
	role.Rules = grants.rules()
	objs := []runtime.Object{role}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: opts.ServiceAccountNamespace, Name: opts.ServiceAccountName}}
	if opts.ServiceAccountName != "" {
		objs = append(objs, &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Labels: role.Labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: opts.Name}, Subjects: subject})
	}
	// namespaced adds a Role of rules in ns, and its binding.
	namespaced := func(name, ns string, rules ...rbacv1.PolicyRule) {
		r := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: role.Labels}, Rules: rules}
		objs = append(objs, r)
		if opts.ServiceAccountName != "" {
			objs = append(objs, &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: role.Labels},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}, Subjects: subject})
		}
	}
	if forceDeletes {
		// The Lease each kubelet renews: a recent renewal refuses a force deletion, and so
		// does a change the API server shows while the write watches it (listed by name,
		// then watched). Its names are the nodes', unknown in advance, so the Role is
		// namespace-wide.
		namespaced(opts.Name+"-node-leases", corev1.NamespaceNodeLease,
			rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch"}})
	}
	if !everywhere {
		sort.Strings(podNamespaces)
		for _, ns := range podNamespaces {
			namespaced(opts.Name+"-force-delete-pods", ns, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "delete"}})
		}
	}
	if ns := opts.LeaderElectNamespace; ns != "" {
		lease := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: opts.Name + "-leader-election", Namespace: ns, Labels: role.Labels},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}}}}
		objs = append(objs, lease)
		if opts.ServiceAccountName != "" {
			objs = append(objs, &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: lease.Name, Namespace: ns, Labels: role.Labels},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: lease.Name}, Subjects: subject})
		}
	}
	return objs, warnings, nil
}

// providerType is the type a kubernetes provider of rule reads, resolved with the
// cluster's RESTMapper as the provider resolves it (plural, singular, Kind or short
// name, with or without its group): the role must name the plural resource.
func providerType(rule, resource string, mapper func() (meta.RESTMapper, error)) (schema.GroupResource, error) {
	field := "verify.kubernetes.resource"
	if mapper == nil {
		return schema.GroupResource{}, &UnresolvedError{Rule: rule, Field: field, Value: resource, Err: fmt.Errorf("no cluster to resolve it against")}
	}
	m, err := mapper()
	if err != nil {
		return schema.GroupResource{}, fmt.Errorf("rule %s: resolving %s %q: %w", rule, field, resource, err)
	}
	r, err := kube.ResolveResource(m, resource)
	if err != nil {
		return schema.GroupResource{}, &UnresolvedError{Rule: rule, Field: field, Value: resource,
			Err: fmt.Errorf("%w: its provider could not resolve it either, so the rule could verify nothing; name a type the cluster serves (kubectl api-resources)", err)}
	}
	return r.GroupResource(), nil
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

// actedTypes are the types whose finalizers a pass may patch away; all means every type.
// A namespace is left out of a rule that only removes the namespace's own finalizer
// ("kubernetes", in its spec): that goes through namespaces/finalize, not a patch.
func actedTypes(p *policy.Policy, res *resolver) ([]schema.GroupResource, bool, error) {
	var out []schema.GroupResource
	for _, r := range p.Rules {
		if r.Spec.WaitsForNode {
			continue // it deletes pods, and patches nothing
		}
		if len(r.Spec.Resources) == 0 {
			return nil, true, nil
		}
		grs, _, err := res.typesOf(r)
		if err != nil {
			return nil, false, err
		}
		onlySpec := len(r.Spec.Finalizers) > 0 && !slices.ContainsFunc(r.Spec.Finalizers, func(f string) bool { return f != string(corev1.FinalizerKubernetes) })
		if onlySpec {
			grs = slices.DeleteFunc(grs, func(gr schema.GroupResource) bool { return gr == namespacesType })
		}
		out = append(out, grs...)
	}
	return out, false, nil
}

// verbsOf are the verbs granted on each type.
type verbsOf map[schema.GroupResource][]string

func (v verbsOf) add(gr schema.GroupResource, verbs ...string) {
	for _, verb := range verbs {
		if !slices.Contains(v[gr], verb) {
			v[gr] = append(v[gr], verb)
		}
	}
}

// rules makes one rule per API group and set of verbs, resources sorted: the role reads
// like a person would write it.
func (v verbsOf) rules() []rbacv1.PolicyRule {
	type key struct{ group, verbs string }
	byKey := map[key]*rbacv1.PolicyRule{}
	var keys []key
	for gr, verbs := range v {
		order := []string{"get", "list", "create", "update", "patch", "delete"}
		sorted := slices.DeleteFunc(slices.Clone(order), func(s string) bool { return !slices.Contains(verbs, s) })
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
	out := make([]rbacv1.PolicyRule, 0, len(keys))
	for _, k := range keys {
		r := byKey[k]
		sort.Strings(r.Resources)
		out = append(out, *r)
	}
	return out
}
