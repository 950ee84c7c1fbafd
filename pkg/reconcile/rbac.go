package reconcile

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
	// Resolve expands a glob of resource.group names into the types a cluster serves;
	// nil means globs cannot be resolved.
	Resolve func(pattern string) ([]schema.GroupResource, error)
}

// RBAC is the least-privilege ClusterRole (and bindings) a pass of p needs: get and list
// on the types it scans, patch only on the types its rules act on, update on
// namespaces/finalize only when a rule may remove a namespace's own finalizer, create on
// events, on selfsubjectreviews and selfsubjectaccessreviews, and the Lease when leader
// election is on. Warnings say where a rule forces broad permissions.
func RBAC(p *policy.Policy, opts RBACOptions) ([]runtime.Object, []string, error) {
	var warnings []string
	scanned, all, err := scannedTypes(p, opts.Resolve)
	if err != nil {
		return nil, nil, err
	}
	role := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Labels: map[string]string{"app.kubernetes.io/name": "kubectl-finalize"}}}
	grants := verbsOf{}
	if all {
		warnings = append(warnings, "a rule names no resources (or may remove a namespace's own finalizer): a pass lists every type, so the role reads every type of the cluster, secrets included")
		grants.add(schema.GroupResource{Group: "*", Resource: "*"}, "get", "list")
	}
	for _, gr := range scanned {
		grants.add(gr, "get", "list")
	}
	// Types the kubernetes providers of the cluster itself read.
	for _, r := range p.Rules {
		if k := r.Spec.Verify.Kubernetes; k != nil && k.Kubeconfig == "" && k.Context == "" && !all {
			grants.add(schema.ParseGroupResource(k.Resource), "get", "list")
		}
	}
	// Writes: patch on the types the rules act on.
	acted, actAll, err := actedTypes(p, opts.Resolve)
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

// scannedTypes are the types a pass lists; all means every type. A rule that may remove
// a namespace's own finalizer needs every type listed, to prove the namespace empty.
func scannedTypes(p *policy.Policy, resolve func(string) ([]schema.GroupResource, error)) ([]schema.GroupResource, bool, error) {
	if p.MatchesNamespaceFinalizers() {
		return nil, true, nil
	}
	return namedTypes(p, resolve, false)
}

// actedTypes are the types whose finalizers a pass may patch away; all means every type.
func actedTypes(p *policy.Policy, resolve func(string) ([]schema.GroupResource, error)) ([]schema.GroupResource, bool, error) {
	return namedTypes(p, resolve, true)
}

// namedTypes are the types the rules name; all means every type. For patches, a
// namespace is left out of a rule that only removes the namespace's own finalizer
// ("kubernetes", in its spec): that goes through namespaces/finalize, not a patch.
func namedTypes(p *policy.Policy, resolve func(string) ([]schema.GroupResource, error), patched bool) ([]schema.GroupResource, bool, error) {
	var out []schema.GroupResource
	namespaces := schema.GroupResource{Resource: "namespaces"}
	for _, r := range p.Rules {
		if len(r.Spec.Resources) == 0 {
			return nil, true, nil
		}
		grs, err := expand(r.Spec.Resources, resolve)
		if err != nil {
			return nil, false, fmt.Errorf("rule %s: %w", r.Name, err)
		}
		onlySpec := len(r.Spec.Finalizers) > 0 && !slices.ContainsFunc(r.Spec.Finalizers, func(f string) bool { return f != string(corev1.FinalizerKubernetes) })
		if patched && onlySpec {
			grs = slices.DeleteFunc(grs, func(gr schema.GroupResource) bool { return gr == namespaces })
		}
		out = append(out, grs...)
	}
	return out, false, nil
}

func expand(patterns []string, resolve func(string) ([]schema.GroupResource, error)) ([]schema.GroupResource, error) {
	var out []schema.GroupResource
	for _, pat := range patterns {
		if !slices.ContainsFunc([]rune(pat), func(c rune) bool { return c == '*' || c == '?' }) {
			out = append(out, schema.ParseGroupResource(pat))
			continue
		}
		if resolve == nil {
			return nil, fmt.Errorf("resources %q is a glob: RBAC names types, so the glob must be resolved against a cluster", pat)
		}
		grs, err := resolve(pat)
		if err != nil {
			return nil, err
		}
		out = append(out, grs...)
	}
	return out, nil
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
		order := []string{"get", "list", "create", "update", "patch"}
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
