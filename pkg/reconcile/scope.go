package reconcile

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
)

// Discover lists the types a cluster serves and the group versions whose discovery
// failed: scan.Discover over a discovery client.
type Discover func() ([]kube.Resource, []finalizev1alpha1.IncompleteResource, error)

// Listing is what a pass of a policy lists.
type Listing struct {
	// All means every type the cluster serves.
	All bool
	// Types, unless All, are the names the rules give and the served types their globs
	// match.
	Types []schema.GroupResource
	// Unresolved are the group versions whose discovery failed and whose types a glob of
	// the rules may match: what the glob stands for there is not known.
	Unresolved []finalizev1alpha1.IncompleteResource
}

// ListedTypes resolves what a pass of p lists. A pass lists exactly this, and
// `kubectl finalize rbac` grants get and list on exactly this: one resolution, so that
// the two agree. Every type, when a rule names no resources or may remove a namespace's
// own finalizer (a namespace is proven empty only by listing every type in it);
// otherwise the names the rules give, and the types the cluster serves now that their
// globs match. discover is called only when a rule has a glob.
func ListedTypes(p *policy.Policy, discover Discover) (Listing, error) {
	return listedTypes(p, &resolver{discover: discover})
}

func listedTypes(p *policy.Policy, res *resolver) (Listing, error) {
	if p.MatchesNamespaceFinalizers() {
		return Listing{All: true}, nil
	}
	for _, r := range p.Rules {
		if len(r.Spec.Resources) == 0 {
			return Listing{All: true}, nil
		}
	}
	var l Listing
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
	return l, nil
}

// resolver resolves the resources of rules against one discovery of the cluster, made
// when the first glob needs it.
type resolver struct {
	discover Discover
	done     bool
	served   []kube.Resource
	failed   []finalizev1alpha1.IncompleteResource
	err      error
}

// typesOf are the types rule r names: its literal names as written, and the served types
// its globs match. unresolved are the failed group versions a glob of r may match.
func (res *resolver) typesOf(r *policy.Rule) (types []schema.GroupResource, unresolved []finalizev1alpha1.IncompleteResource, err error) {
	var globs []string
	for _, name := range r.Spec.Resources {
		if g, err := glob.Compile(name); err != nil || g.Literal() {
			types = append(types, schema.ParseGroupResource(name))
			continue
		}
		globs = append(globs, name)
	}
	if len(globs) == 0 {
		return types, nil, nil
	}
	if !res.done {
		res.done = true
		if res.discover == nil {
			res.err = fmt.Errorf("no cluster to resolve globs against")
		} else {
			res.served, res.failed, res.err = res.discover()
		}
	}
	if res.err != nil {
		return nil, nil, fmt.Errorf("rule %s: resources %q: resolving the glob against the cluster's discovery: %w", r.Name, globs, res.err)
	}
	for _, t := range res.served {
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
