package reconcile

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Discover lists the types a cluster serves, with the other names kubectl accepts for
// each, and the group versions whose discovery failed: scan.DiscoverTypes over a
// discovery client.
type Discover func() ([]scan.Type, []finalizev1alpha1.IncompleteResource, error)

// Listing is what a pass of a policy lists.
type Listing struct {
	// All means every type the cluster serves.
	All bool
	// Types, unless All, are the names the rules give and the served types their globs
	// match.
	Types []schema.GroupResource
	// Namespaces, unless All, are the namespaces a type of Types is listed in when every
	// rule that may match it names its namespaces literally: the union of those. A type
	// not here is listed cluster-wide: a rule that matches it names no namespaces or a
	// glob, or it is cluster-scoped.
	Namespaces map[schema.GroupResource][]string
	// Unresolved are the group versions whose discovery failed and whose types a glob of
	// the rules may match: what the glob stands for there is not known.
	Unresolved []finalizev1alpha1.IncompleteResource
	// Policy is what the pass matches objects by: the policy with each literal entry of
	// its rules' resources (and of exclude.resources) that names a served type by another
	// name resolved to its resource.group (policy.WithResources).
	Policy *policy.Policy
	// Resolved say which entries were resolved, to what.
	Resolved []string
	// Unserved say which literal entries name no type the cluster serves.
	Unserved []string
}

// ListedTypes resolves what a pass of p lists, and where. A pass lists exactly this, and
// `kubectl finalize rbac` grants get and list on exactly this, in the same namespaces:
// one resolution, so that the two agree. Every type, when a rule names no resources or
// may remove a namespace's own finalizer (a namespace is proven empty only by listing
// every type in it); otherwise the types the rules name, as kubectl resolves a type
// argument (a singular, a Kind or a short name names its plural), and the types the
// cluster serves now that their globs match. A name that could be two types is refused
// (an UnresolvedError naming them); a name the cluster does not serve is kept as written
// (a CRD may be installed later), and said in Unserved. Without discover nothing is
// resolved: names are taken as written, and a glob is an error.
func ListedTypes(p *policy.Policy, discover Discover) (Listing, error) {
	return listedTypes(p, &resolver{discover: discover})
}

func listedTypes(p *policy.Policy, res *resolver) (Listing, error) {
	resolved, err := res.resolve(p)
	if err != nil {
		return Listing{}, err
	}
	l := Listing{Policy: resolved.policy, Resolved: resolved.notes, Unserved: resolved.unserved}
	p = resolved.policy
	if p.MatchesNamespaceFinalizers() {
		l.All = true
		return l, nil
	}
	for _, r := range p.Rules {
		if len(r.Spec.Resources) == 0 {
			l.All = true
			return l, nil
		}
	}
	for _, r := range p.Rules {
		types, unresolved, err := res.typesOf(r)
		if err != nil {
			return Listing{}, err
		}
		for _, gr := range types {
			if !slices.Contains(l.Types, gr) {
				l.Types = append(l.Types, gr)
			}
		}
		for _, in := range unresolved {
			if !slices.Contains(l.Unresolved, in) {
				l.Unresolved = append(l.Unresolved, in)
			}
		}
	}
	for _, gr := range l.Types {
		if ns := res.namespacesOf(p, gr); ns != nil {
			if l.Namespaces == nil {
				l.Namespaces = map[schema.GroupResource][]string{}
			}
			l.Namespaces[gr] = ns
		}
	}
	return l, nil
}

// resolver resolves the resources of rules against one discovery of the cluster, made
// when the first name needs it.
type resolver struct {
	discover Discover
	done     bool
	types    []scan.Type
	served   map[schema.GroupResource]scan.Type
	failed   []finalizev1alpha1.IncompleteResource
	err      error
}

// namespacesOf are the namespaces the rules of p restrict type gr to, sorted, or nil
// when gr must be read cluster-wide: a rule that may match it names no namespaces or a
// glob, or gr is cluster-scoped (a Namespace is matched by its own name, but namespaces
// are listed, and granted, cluster-wide).
func (res *resolver) namespacesOf(p *policy.Policy, gr schema.GroupResource) []string {
	if t, ok := res.served[gr]; ok && !t.Namespaced {
		return nil
	}
	if gr == namespacesType {
		return nil
	}
	var out []string
	for _, r := range p.Rules {
		if !r.MatchesType(gr.String()) {
			continue
		}
		ns, ok := literalNamespaces(r)
		if !ok {
			return nil
		}
		for _, n := range ns {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// literalNamespaces are the namespaces rule r names, when it names some and every one
// literally.
func literalNamespaces(r *policy.Rule) ([]string, bool) {
	if len(r.Spec.Namespaces) == 0 {
		return nil, false
	}
	for _, ns := range r.Spec.Namespaces {
		if g, err := glob.Compile(ns); err != nil || !g.Literal() {
			return nil, false
		}
	}
	return r.Spec.Namespaces, true
}

// load discovers the cluster, once.
func (res *resolver) load() error {
	if !res.done {
		res.done = true
		if res.discover == nil {
			res.err = fmt.Errorf("no cluster to resolve globs against")
		} else {
			res.types, res.failed, res.err = res.discover()
			res.served = map[schema.GroupResource]scan.Type{}
			for _, t := range res.types {
				res.served[t.GroupResource()] = t
			}
		}
	}
	return res.err
}

// resolution is a policy whose names were resolved against the cluster.
type resolution struct {
	policy          *policy.Policy
	notes, unserved []string
}

// resolve resolves every literal entry of the resources of p's rules and exclude block
// against the cluster, as kubectl resolves a type argument. Without a cluster (no
// discover), names are taken as written.
func (res *resolver) resolve(p *policy.Policy) (resolution, error) {
	var names []string
	for _, r := range p.Rules {
		names = append(names, r.Spec.Resources...)
	}
	names = append(names, p.ExcludedResources()...)
	if !slices.ContainsFunc(names, isLiteral) || res.discover == nil {
		return resolution{policy: p}, nil
	}
	if err := res.load(); err != nil {
		return resolution{}, fmt.Errorf("resolving the rules' resources against the cluster's discovery: %w", err)
	}
	out := resolution{}
	to := map[string]string{}
	check := func(rule, field, name string) error {
		if !isLiteral(name) {
			return nil
		}
		if _, done := to[name]; done {
			return nil
		}
		gr, candidates := resolveName(name, res.types)
		switch {
		case len(candidates) > 1:
			var list []string
			for _, c := range candidates {
				list = append(list, c.String())
			}
			return &UnresolvedError{Rule: rule, Field: field, Value: name,
				Err: fmt.Errorf("it could name any of %s: write the one you mean as RESOURCE.GROUP, as kubectl api-resources shows it", strings.Join(list, ", "))}
		case len(candidates) == 0:
			if !res.failedGroup(name) {
				out.unserved = append(out.unserved, fmt.Sprintf("%s %q names no type this cluster serves: nothing is listed or matched under it until one is installed; name types as kubectl api-resources shows them (RESOURCE.GROUP)", where(rule, field), name))
			}
		case gr.String() != name:
			to[name] = gr.String()
			out.notes = append(out.notes, fmt.Sprintf("%s %q is %s, as kubectl resolves it: the pass lists, matches and patches %s (write %s to say so)", where(rule, field), name, gr, gr, gr))
		}
		return nil
	}
	for _, r := range p.Rules {
		for _, name := range r.Spec.Resources {
			if err := check(r.Name, "resources", name); err != nil {
				return resolution{}, err
			}
		}
	}
	for _, name := range p.ExcludedResources() {
		if err := check("", "exclude.resources", name); err != nil {
			return resolution{}, err
		}
	}
	out.policy = p.WithResources(to)
	return out, nil
}

func where(rule, field string) string {
	if rule == "" {
		return field
	}
	return "rule " + rule + ": " + field
}

func isLiteral(name string) bool {
	g, err := glob.Compile(name)
	return err == nil && g.Literal()
}

// failedGroup reports whether name may be in a group whose discovery failed: the scan
// reports that group incomplete, so the name is not said unserved.
func (res *resolver) failedGroup(name string) bool {
	_, gr := schema.ParseResourceArg(name)
	for _, in := range res.failed {
		if gv, err := schema.ParseGroupVersion(in.GroupVersion); err == nil && gv.Group == gr.Group {
			return true
		}
	}
	return false
}

// resolveName resolves a type argument the way kubectl does (resource.version.group,
// resource.group or resource, where resource is the plural, the singular, a short name
// or the Kind) against the types a scan lists. A name that is a served resource.group
// is that type. candidates are every type the name could be: more than one is
// ambiguous. kubectl would pick one of them by its groups' priority and warn; a rule
// that removes finalizers does not guess.
func resolveName(name string, types []scan.Type) (gr schema.GroupResource, candidates []schema.GroupResource) {
	for _, t := range types {
		if t.GroupResource().String() == name {
			return t.GroupResource(), []schema.GroupResource{t.GroupResource()}
		}
	}
	named := func(t scan.Type, resource string) bool {
		lower := strings.ToLower(resource)
		return t.Resource.Resource == lower || t.Singular == lower || slices.Contains(t.ShortNames, resource) || t.Kind == resource
	}
	add := func(t scan.Type) {
		if !slices.Contains(candidates, t.GroupResource()) {
			candidates = append(candidates, t.GroupResource())
		}
	}
	fully, partial := schema.ParseResourceArg(name)
	if fully != nil {
		for _, t := range types {
			if t.Group == fully.Group && t.Version == fully.Version && named(t, fully.Resource) {
				add(t)
			}
		}
	}
	if len(candidates) == 0 {
		for _, t := range types {
			if (partial.Group == "" || t.Group == partial.Group) && named(t, partial.Resource) {
				add(t)
			}
		}
	}
	if len(candidates) == 1 {
		gr = candidates[0]
	}
	return gr, candidates
}

// typesOf are the types rule r names: its literal names (resolved by resolve), and the
// served types its globs match. unresolved are the failed group versions a glob of r may
// match.
func (res *resolver) typesOf(r *policy.Rule) (types []schema.GroupResource, unresolved []finalizev1alpha1.IncompleteResource, err error) {
	var globs []string
	for _, name := range r.Spec.Resources {
		if isLiteral(name) {
			types = append(types, schema.ParseGroupResource(name))
			continue
		}
		globs = append(globs, name)
	}
	if len(globs) == 0 {
		return types, nil, nil
	}
	if err := res.load(); err != nil {
		return nil, nil, fmt.Errorf("rule %s: resources %q: resolving the glob against the cluster's discovery: %w", r.Name, globs, err)
	}
	for _, t := range res.types {
		if gr := t.GroupResource(); r.MatchesType(gr.String()) && !slices.Contains(types, gr) {
			types = append(types, gr)
		}
	}
	for _, in := range res.failed {
		gv, perr := schema.ParseGroupVersion(in.GroupVersion)
		if perr != nil || slices.ContainsFunc(globs, func(g string) bool { return mayMatchGroup(g, gv.Group) }) {
			unresolved = append(unresolved, in)
		}
	}
	return types, unresolved, nil
}

// mayMatchGroup reports whether the glob pattern may match a type of group ("R.GROUP",
// or "R" for the core group), whatever its resource R: what follows the pattern's last
// wildcard must fit the end of such a name. It errs on the side of yes.
func mayMatchGroup(pattern, group string) bool {
	tail := pattern[strings.LastIndexAny(pattern, "*?")+1:]
	if group == "" {
		return !strings.Contains(tail, ".")
	}
	if strings.HasSuffix("."+group, tail) {
		return true
	}
	head, ok := strings.CutSuffix(tail, "."+group)
	return ok && !strings.Contains(head, ".")
}

// noType is a type no cluster serves. scan.Options lists every type when its Resources
// are empty, so a pass whose globs match nothing yet lists this instead: nothing.
var noType = schema.GroupResource{Group: "kubectl-finalize.invalid", Resource: "no-type-matches"}

// scanResources are the scan.Options Resources of a listing that is not All. A group
// version whose discovery failed and that a glob may match is named by a placeholder of
// its group: the scan then reports its failure as incomplete (exit 3) instead of
// dropping it as irrelevant to the types asked for.
func (l Listing) scanResources() []schema.GroupResource {
	out := slices.Clone(l.Types)
	for _, in := range l.Unresolved {
		if gv, err := schema.ParseGroupVersion(in.GroupVersion); err == nil {
			out = append(out, schema.GroupResource{Group: gv.Group, Resource: noType.Resource})
		}
	}
	if len(out) == 0 {
		out = append(out, noType)
	}
	return out
}
