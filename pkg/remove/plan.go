package remove

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Flags that unlock refused removals.
const (
	FlagForceUnverified = "--force-unverified --reason TEXT"
	FlagAllowSystem     = "--allow-system"
	FlagAllowStranding  = "--allow-stranding"
)

// Options are the break-glass switches of a removal.
type Options struct {
	// ForceUnverified allows removals no provider verified; Reason says why, for the audit.
	ForceUnverified bool
	Reason          string
	// AllowSystem allows removing finalizers that belong to Kubernetes itself.
	AllowSystem bool
	// AllowStranding allows removing a namespace's kubernetes finalizer while the
	// namespace may still hold objects, which then stay in etcd.
	AllowStranding bool
}

// Request asks for finalizers of one stuck object to be removed: the named ones, or all.
type Request struct {
	Object     *scan.Object
	Finalizers []string
	All        bool
}

// Action is one planned removal, with what the preview shows of it.
type Action struct {
	Target
	Finalizer finalizev1alpha1.Finalizer
	Cause     *finalizev1alpha1.Cause
	// Verified removals were confirmed by a provider (Rule, Evidence); the others are
	// forced.
	Verified bool
	Rule     string
	Evidence string
}

// Refusal is a removal that will not happen, and why.
type Refusal struct {
	Object    string
	Finalizer string
	Why       string
	// Flag, if set, is what would allow it.
	Flag string
}

// Plan is every removal decided before any is made.
type Plan struct {
	Actions  []Action
	Refusals []Refusal
}

// Objects counts the distinct objects the plan touches.
func (p *Plan) Objects() int {
	seen := map[string]bool{}
	for _, a := range p.Actions {
		seen[string(a.UID)] = true
	}
	return len(seen)
}

// NewPlan decides each requested removal. res is a scan, with its index, that covers the
// objects (and, for a namespace, its content); causeOf gives each object's diagnosis.
func NewPlan(reqs []Request, res *scan.Result, causeOf func(*scan.Object) *finalizev1alpha1.Cause, catalog *owner.Catalog, opts Options) *Plan {
	p := &Plan{}
	for _, req := range reqs {
		o := req.Object
		name := objectName(o.Resource, o.Meta.Namespace, o.Meta.Name)
		names := req.Finalizers
		if req.All {
			names = nil
			for _, f := range o.Finalizers {
				names = append(names, f.Name)
			}
		}
		for _, fname := range names {
			i := slices.IndexFunc(o.Finalizers, func(f finalizev1alpha1.Finalizer) bool { return f.Name == fname })
			if i < 0 {
				var have []string
				for _, f := range o.Finalizers {
					have = append(have, f.Name)
				}
				p.Refusals = append(p.Refusals, Refusal{Object: name, Finalizer: fname,
					Why: fmt.Sprintf("it has no such finalizer (it has: %s)", strings.Join(have, ", "))})
				continue
			}
			fin := o.Finalizers[i]
			a := Action{
				Target:    Target{Resource: o.Resource, Namespace: o.Meta.Namespace, Name: o.Meta.Name, UID: o.Meta.UID, Finalizer: fin.Name, Field: fin.Field},
				Finalizer: fin,
				Cause:     causeOf(o),
			}
			if r := refuse(a, o, res, catalog, opts); r != nil {
				r.Object = name
				p.Refusals = append(p.Refusals, *r)
				continue
			}
			p.Actions = append(p.Actions, a)
		}
	}
	return p
}

// refuse returns why a removal may not happen, or nil.
func refuse(a Action, o *scan.Object, res *scan.Result, catalog *owner.Catalog, opts Options) *Refusal {
	guards := "what the finalizer guards is done"
	if e, ok := catalog.Lookup(a.Finalizer.Name); ok && e.Purpose != "" {
		guards = e.Purpose
	}
	cause := ""
	if a.Cause != nil {
		cause = fmt.Sprintf(" (cause: %s: %s)", a.Cause.Reason, a.Cause.Message)
	}
	if a.Finalizer.System && !opts.AllowSystem {
		return &Refusal{Finalizer: a.Finalizer.Name, Flag: FlagAllowSystem,
			Why: fmt.Sprintf("it is a system finalizer of %s, which removes it once %s; removing it by hand breaks that guarantee%s", a.Finalizer.Owner, guards, cause)}
	}
	if a.Field == finalizev1alpha1.FieldSpecFinalizers && a.Finalizer.Name == "kubernetes" && !opts.AllowStranding {
		if why := stranding(o, res); why != "" {
			return &Refusal{Finalizer: a.Finalizer.Name, Flag: FlagAllowStranding,
				Why: why + "; removing it now would strand those objects in etcd, where a namespace created later under the same name shows them again"}
		}
	}
	if !a.Verified && (!opts.ForceUnverified || strings.TrimSpace(opts.Reason) == "") {
		return &Refusal{Finalizer: a.Finalizer.Name, Flag: FlagForceUnverified,
			Why: fmt.Sprintf("nothing verified that %s%s", guards, cause)}
	}
	return nil
}

// stranding says why a namespace may still hold objects, or "".
func stranding(o *scan.Object, res *scan.Result) string {
	if idx := res.Index; idx != nil {
		if c := idx.Content[o.Meta.Name]; c != nil && c.Count > 0 {
			var types []string
			for t, n := range c.ByType {
				types = append(types, fmt.Sprintf("%s: %d", t, n))
			}
			sort.Strings(types)
			var sample []string
			for _, r := range c.Sample {
				sample = append(sample, r.Resource.String()+"/"+r.Name)
			}
			more := ""
			if int64(len(sample)) < c.Count {
				more = ", ..."
			}
			return fmt.Sprintf("the namespace still holds %d objects (%s: %s%s)", c.Count, strings.Join(types, ", "), strings.Join(sample, ", "), more)
		}
	}
	if len(res.Incomplete) > 0 {
		var what []string
		for _, in := range res.Incomplete {
			w := in.GroupVersion
			if in.Resource != "" {
				w = in.Resource + " (" + in.GroupVersion + ")"
			}
			what = append(what, w)
		}
		return fmt.Sprintf("the namespace may still hold objects: the scan could not list %s", strings.Join(what, ", "))
	}
	return ""
}
