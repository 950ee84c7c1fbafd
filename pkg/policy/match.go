package policy

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// Subject is what rules match an object by.
type Subject struct {
	// Resource is "resource.group": "configmaps", "databases.db.example.com".
	Resource string
	// Namespace is the object's namespace, or for a Namespace its own name; empty for
	// other cluster-scoped objects.
	Namespace string
	Labels    map[string]string
}

// SubjectOf is the subject of an object of resource r.
func SubjectOf(r kube.Resource, namespace, name string, l map[string]string) Subject {
	s := Subject{Resource: r.String(), Namespace: namespace, Labels: l}
	if r.IsNamespaces() {
		s.Namespace = name
	}
	return s
}

// Excluded reports whether the exclude block keeps every rule away from s.
func (p *Policy) Excluded(s Subject) bool {
	ex := &p.exclude
	if len(ex.namespaces) > 0 && s.Namespace != "" && ex.namespaces.Match(s.Namespace) {
		return true
	}
	if len(ex.resources) > 0 && ex.resources.Match(s.Resource) {
		return true
	}
	for _, sel := range ex.selectors {
		if sel.Matches(labels.Set(s.Labels)) {
			return true
		}
	}
	return false
}

// Match returns the first rule that matches finalizer on s, or nil. Excluded objects
// match no rule.
func (p *Policy) Match(s Subject, finalizer string) *Rule {
	if p.Excluded(s) {
		return nil
	}
	for _, r := range p.Rules {
		if r.matches(s, finalizer) {
			return r
		}
	}
	return nil
}

func (r *Rule) matches(s Subject, finalizer string) bool {
	if r.Spec.WaitsForNode || !r.finalizers.Match(finalizer) || !r.resources.Match(s.Resource) {
		return false
	}
	return r.matchesObject(s)
}

// matchesObject reports whether s is in the rule's namespaces and selector.
func (r *Rule) matchesObject(s Subject) bool {
	if len(r.namespaces) > 0 && (s.Namespace == "" || !r.namespaces.Match(s.Namespace)) {
		return false
	}
	return r.selector == nil || r.selector.Matches(labels.Set(s.Labels))
}

// MatchPod returns the first rule with waitsForNode that matches the pod s, or nil.
// Excluded pods match no rule.
func (p *Policy) MatchPod(s Subject) *Rule {
	if s.Resource != "pods" || p.Excluded(s) {
		return nil
	}
	for _, r := range p.Rules {
		if r.Spec.WaitsForNode && r.matchesObject(s) {
			return r
		}
	}
	return nil
}

// MatchesPods reports whether a rule force-deletes pods waiting for a node (waitsForNode).
func (p *Policy) MatchesPods() bool {
	return slices.ContainsFunc(p.Rules, func(r *Rule) bool { return r.Spec.WaitsForNode })
}

// MatchesType reports whether the rule may match objects of type resource
// ("resource.group"), by its resources: a rule that names none matches every type.
func (r *Rule) MatchesType(resource string) bool { return r.resources.Match(resource) }

// ExcludedResources are the entries of exclude.resources, as written.
func (p *Policy) ExcludedResources() []string {
	out := make([]string, 0, len(p.exclude.resources))
	for _, g := range p.exclude.resources {
		out = append(out, g.String())
	}
	return out
}

// WithResources returns a copy of p whose rules and exclude block match by the names
// resolved gives for the literal entries of their resources: a rule that names a type by
// its singular, its Kind or its short name ("configmap", "ConfigMap", "cm") then matches
// the objects of its plural, "configmaps", the name every object is matched by. Entries
// resolved does not name, and globs, stay as written. p itself is not changed: each pass
// resolves the policy as written against the cluster as it is then.
func (p *Policy) WithResources(resolved map[string]string) *Policy {
	if len(resolved) == 0 {
		return p
	}
	rename := func(set glob.Set) (glob.Set, []string) {
		out := make(glob.Set, 0, len(set))
		var names []string
		for _, g := range set {
			if to, ok := resolved[g.String()]; ok && g.Literal() {
				g = glob.MustCompile(to)
			}
			if !slices.ContainsFunc(out, func(x glob.Pattern) bool { return x.String() == g.String() }) {
				out = append(out, g)
				names = append(names, g.String())
			}
		}
		return out, names
	}
	cp := *p
	cp.exclude.resources, _ = rename(p.exclude.resources)
	cp.Rules = make([]*Rule, len(p.Rules))
	for i, r := range p.Rules {
		nr := *r
		if len(r.resources) > 0 {
			spec := *r.Spec
			nr.resources, spec.Resources = rename(r.resources)
			nr.Spec = &spec
		}
		cp.Rules[i] = &nr
	}
	return &cp
}

// MatchesFinalizer reports whether some rule could match finalizer, on some object.
func (p *Policy) MatchesFinalizer(finalizer string) bool {
	for _, r := range p.Rules {
		if !r.Spec.WaitsForNode && r.finalizers.Match(finalizer) {
			return true
		}
	}
	return false
}

// Scope is what a pass must list to see every object the rules can match.
type Scope struct {
	// Resources are the resource.group names every rule names, when all of them are
	// literal; nil means every type.
	Resources []string
	// Namespaces are the namespaces every rule names, when all of them name literal
	// namespaces; nil means the whole cluster.
	Namespaces []string
}

// Scope narrows a pass to the types and namespaces the rules name, when every rule names
// them exactly; a rule without resources (or with a glob) needs every type. The types a
// pass lists, names and globs resolved against the cluster, each in the namespaces its
// rules name, are reconcile.ListedTypes: the pass and `kubectl finalize rbac` both use
// that; a pass uses Namespaces only when it lists every type.
func (p *Policy) Scope() Scope {
	var sc Scope
	resources, namespaces := map[string]bool{}, map[string]bool{}
	allResources, allNamespaces := true, true
	for _, r := range p.Rules {
		if len(r.resources) == 0 {
			allResources = false
		}
		for _, g := range r.resources {
			if !g.Literal() {
				allResources = false
			}
			resources[g.String()] = true
		}
		if len(r.namespaces) == 0 {
			allNamespaces = false
		}
		for _, g := range r.namespaces {
			if !g.Literal() {
				allNamespaces = false
			}
			namespaces[g.String()] = true
		}
	}
	if allResources {
		sc.Resources = sortedKeys(resources)
	}
	if allNamespaces {
		sc.Namespaces = sortedKeys(namespaces)
	}
	return sc
}

// MatchesNamespaceFinalizers reports whether a rule may remove the kubernetes finalizer
// of a Namespace: proving a namespace empty then takes a scan of every type.
func (p *Policy) MatchesNamespaceFinalizers() bool {
	for _, r := range p.Rules {
		if !r.Spec.WaitsForNode && r.resources.Match("namespaces") && r.finalizers.Match("kubernetes") {
			return true
		}
	}
	return false
}

// ruleNamed is the rule of that name, or nil.
func (p *Policy) ruleNamed(name string) *Rule {
	for _, r := range p.Rules {
		if r.Name == name {
			return r
		}
	}
	return nil
}
