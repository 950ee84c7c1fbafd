// Package plan decides removals before any is made: which requested finalizers a
// provider verified (through a Verifier), which are forced, and which are refused and
// why. It reads the cluster (a verifier's answers, a namespace's content) and writes
// nothing; pkg/remove/write carries out its actions.
package plan

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Options are the switches of a removal that a person (remove) or a policy (reconcile)
// decides.
type Options struct {
	// ForceUnverified allows removals no provider verified; Reason says why, for the audit.
	ForceUnverified bool
	Reason          string
	// AllowSystem allows removing finalizers that belong to Kubernetes itself.
	AllowSystem bool
	// SystemByRule lets a rule that allows system finalizers (Verification.AllowSystem)
	// remove one when its provider said Gone. Reconcile sets it; remove asks for
	// AllowSystem whatever a rule says.
	SystemByRule bool
	// AllowStranding allows removing a namespace's kubernetes finalizer while the
	// namespace may still hold objects, which then stay in etcd.
	AllowStranding bool
	// PodGraceMargin is how long after its grace period ended a pod must still be
	// waiting for its kubelet before it may be force-deleted; zero means
	// DefaultPodGraceMargin.
	PodGraceMargin time.Duration
	// UnsafeDelete allows the unsafe deletion of an object the API server cannot read
	// (Request.Unreadable). Only `remove --unsafe-delete` sets it.
	UnsafeDelete bool
}

// Request asks for finalizers of one stuck object to be removed: the named ones, or all;
// or, with ForceDelete, for a pod whose deletion waits for its kubelet to be deleted
// without it.
type Request struct {
	Object     *kube.Object
	Finalizers []string
	All        bool
	// ForceDelete asks for the pod's force deletion (DELETE with gracePeriodSeconds 0),
	// planned before the removals of the finalizers the request names.
	ForceDelete bool
	// Unreadable, instead of Object, asks for the unsafe deletion of an object the API
	// server cannot read (UnsafeDelete); Cause is its diagnosis.
	Unreadable *Unreadable
	Cause      *finalizev1alpha1.Cause
}

// Action is one planned removal.
type Action struct {
	Target
	Finalizer finalizev1alpha1.Finalizer
	Cause     *finalizev1alpha1.Cause
	// Verification is what the verifier answered, if it was asked.
	Verification Verification
	// Verified removals were proven by a provider; the others are forced with Reason.
	Verified bool
	Reason   string
}

// API is the action as the plan prints it.
func (a *Action) API() finalizev1alpha1.Removal {
	r := finalizev1alpha1.Removal{
		Target: a.Ref.API(), Finalizer: a.Finalizer.Name, Field: a.Field, Owner: a.Finalizer.Owner,
		Rule: a.Verification.Rule, Verdict: a.Verification.Verdict, Evidence: a.Verification.Evidence,
	}
	r.Action, r.Node = a.WriteKind().Action(), a.Node
	if a.Cause != nil {
		r.Cause = a.Cause.Reason
	}
	if !a.Verified {
		r.Reason = a.Reason
	}
	if v := a.Verification.Record(); a.Verification.Rule != "" {
		r.VerifiedAt, r.ResourceVersion, r.Verifications = v.VerifiedAt, v.ResourceVersion, 1
	}
	return r
}

// Refusal is a removal that will not happen: its row as the API shows it (Target,
// Action and Node, Finalizer, Field, Owner, Cause, as the scan and the doctor found them,
// so that a kept finalizer is reported as fully as a removed one), with the refusal's Kind
// and, in Message, why; and what the plan knew besides.
type Refusal struct {
	finalizev1alpha1.Removal
	// Verification is what the verifier answered, if it was asked.
	Verification Verification
	// ObjectGone: the object was deleted (or replaced by a namesake) since the scan;
	// nothing is left to decide.
	ObjectGone bool
}

// refusal is a refusal of kind, saying why.
func refusal(kind finalizev1alpha1.RefusalKind, why string) *Refusal {
	return &Refusal{Removal: finalizev1alpha1.Removal{Kind: kind, Message: why}}
}

// API is the refusal's row, with what the verifier answered.
func (r *Refusal) API() finalizev1alpha1.Removal {
	out := r.Removal
	out.Rule, out.Verdict, out.Evidence = r.Verification.Rule, r.Verification.Verdict, r.Verification.Evidence
	return out
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

// DefaultVerifyConcurrency is how many verifications a planner runs at once.
const DefaultVerifyConcurrency = 8

// Planner decides requested removals.
type Planner struct {
	// Result is a scan, with its index, that covers the objects (and, for a namespace,
	// its content).
	Result *scan.Result
	// CauseOf gives each object's diagnosis; nil when there is none.
	CauseOf func(*kube.Object) *finalizev1alpha1.Cause
	// Catalog names what each well-known finalizer guards; nil means owner.Builtin().
	Catalog *owner.Catalog
	// Verifier, if set, is asked about every requested removal; without one nothing is
	// verified.
	Verifier Verifier
	// Concurrency bounds the verifications in flight; zero means
	// DefaultVerifyConcurrency.
	Concurrency int
	// Content reads afresh what a namespace holds when Result did not index it (the
	// namespace was not being deleted when the scan listed it, or there is no index).
	// Without it, removing such a namespace's kubernetes finalizer is refused.
	Content *ContentReader
	// Kube reads a pod and its node afresh before its force deletion is decided; without
	// it, every force deletion is refused.
	Kube client.Interface
	// Metadata reads afresh an object whose unsafe deletion is asked for; without it,
	// every unsafe deletion is refused.
	Metadata metadata.Interface
	// Dynamic reads the APIService that serves the type of an object whose unsafe
	// deletion is asked for; without it, such a type outside the core group is refused.
	Dynamic dynamic.Interface
	// Now is the API server's clock, which pods are found overdue and kubelets alive by;
	// nil measures one (NewServerClock through Kube) when a pod's force deletion is first
	// planned.
	Now func() time.Time

	serverClock *ServerClock
}

// now is the API server's time.
func (p *Planner) now(ctx context.Context) time.Time {
	if p.Now != nil {
		return p.Now()
	}
	if p.serverClock == nil {
		p.serverClock = NewServerClock(ctx, p.Kube)
	}
	return p.serverClock.Now()
}

// candidate is one (object, finalizer) of a request, in request order.
type candidate struct {
	o      *kube.Object
	name   string
	fin    *finalizev1alpha1.Finalizer // nil: the object has no such finalizer
	verify Verification
}

// Plan decides each requested removal: verified by a provider, forced by opts, or
// refused with the reason. The verifier is asked concurrently; the plan keeps request
// order.
func (p *Planner) Plan(ctx context.Context, reqs []Request, opts Options) *Plan {
	var cands []*candidate
	plan := &Plan{}
	for _, req := range reqs {
		if req.Unreadable != nil {
			// One object per write, decided from a GET made now; it has no finalizers
			// anyone can read.
			if a, r := p.planUnsafe(ctx, *req.Unreadable, req.Cause, opts); r != nil {
				plan.Refusals = append(plan.Refusals, *r)
			} else {
				plan.Actions = append(plan.Actions, *a)
			}
			continue
		}
		if req.ForceDelete {
			// One pod per write, decided from the pod and its node read afresh, before
			// the finalizers of the request.
			if a, r := p.planForce(ctx, req.Object, opts); r != nil {
				plan.Refusals = append(plan.Refusals, *r)
			} else {
				plan.Actions = append(plan.Actions, *a)
			}
		}
		o := req.Object
		names := req.Finalizers
		if req.All {
			names = nil
			for _, f := range o.Finalizers {
				names = append(names, f.Name)
			}
		}
		for _, name := range names {
			c := &candidate{o: o, name: name}
			if i := slices.IndexFunc(o.Finalizers, func(f finalizev1alpha1.Finalizer) bool { return f.Name == name }); i >= 0 {
				c.fin = &o.Finalizers[i]
			}
			cands = append(cands, c)
		}
	}
	p.verifyAll(ctx, cands)
	// A verifier keeps its answers so that requests alike are asked once. Every request
	// of the plan has been asked, and what is written after it is verified afresh
	// (VerifyRequest.Fresh), so they are let go before the plan's actions are made: ten
	// thousand answers are megabytes (#36).
	if f, ok := p.Verifier.(interface{ ForgetAnswers() }); ok {
		f.ForgetAnswers()
	}
	plan.Actions = slices.Grow(plan.Actions, len(cands))
	for i, c := range cands {
		cands[i] = nil // what the plan keeps of it is copied: ten thousand are megabytes
		if c.fin == nil {
			var have []string
			for _, f := range c.o.Finalizers {
				have = append(have, f.Name)
			}
			r := refusal(finalizev1alpha1.RefusalNoSuchFinalizer, fmt.Sprintf("it has no such finalizer (it has: %s)", strings.Join(have, ", ")))
			r.Target, r.Finalizer = c.o.Ref().API(), c.name
			plan.Refusals = append(plan.Refusals, *r)
			continue
		}
		a := Action{
			Target:       Target{Ref: c.o.Ref(), Kind: finalizerKind(c.fin.Field), Finalizer: c.fin.Name, Field: c.fin.Field},
			Finalizer:    *c.fin,
			Verification: c.verify,
			Verified:     c.verify.Gone(),
		}
		if p.CauseOf != nil {
			a.Cause = p.CauseOf(c.o)
		}
		if a.Verified {
			a.ResourceVersion, a.Finalizers = c.verify.ResourceVersion, c.verify.Finalizers
		} else {
			a.Reason = opts.Reason
		}
		if r := p.refuse(ctx, &a, c.o, opts); r != nil {
			r.Target, r.Finalizer, r.Verification = c.o.Ref().API(), c.fin.Name, c.verify
			r.Field, r.Owner = c.fin.Field, c.fin.Owner
			if a.Cause != nil {
				r.Cause = a.Cause.Reason
			}
			plan.Refusals = append(plan.Refusals, *r)
			continue
		}
		// A system finalizer that only its rule's allowSystem lets go: a verification
		// made again before the write must be by a rule that allows it too.
		a.SystemByRule = isSystem(a.Finalizer) && !opts.AllowSystem
		plan.Actions = append(plan.Actions, a)
	}
	return plan
}

// isSystem reports whether fin is a system finalizer: by its name (owner.IsSystem),
// whatever the catalogue knows of it; the field of the scan's answer is the same rule's.
func isSystem(fin finalizev1alpha1.Finalizer) bool { return fin.System || owner.IsSystem(fin.Name) }

// verifyAll asks the verifier about every candidate, a bounded number at a time.
func (p *Planner) verifyAll(ctx context.Context, cands []*candidate) {
	if p.Verifier == nil {
		return
	}
	n := p.Concurrency
	if n <= 0 {
		n = DefaultVerifyConcurrency
	}
	var g errgroup.Group
	g.SetLimit(n)
	for _, c := range cands {
		if c.fin == nil {
			continue
		}
		g.Go(func() error {
			c.verify = p.Verifier.Verify(ctx, VerifyRequest{Object: c.o, Finalizer: *c.fin})
			return nil
		})
	}
	_ = g.Wait() // the verifications return no error: a failure is an answer
}

// refuse returns why a removal may not happen, or nil.
func (p *Planner) refuse(ctx context.Context, a *Action, o *kube.Object, opts Options) *Refusal {
	catalog := p.Catalog
	if catalog == nil {
		catalog = owner.Builtin()
	}
	guards := "what the finalizer guards is done"
	if e, ok := catalog.Lookup(a.Finalizer.Name); ok && e.Purpose != "" {
		guards = e.Purpose
	}
	cause := ""
	if a.Cause != nil {
		cause = fmt.Sprintf(" (cause: %s: %s)", a.Cause.Reason, a.Cause.Message)
	}
	v := &a.Verification
	ruleAllowsSystem := opts.SystemByRule && a.Verified && v.AllowSystem
	if isSystem(a.Finalizer) && !opts.AllowSystem && !ruleAllowsSystem {
		return refusal(finalizev1alpha1.RefusalSystem, systemWhy(catalog, a.Finalizer, guards, cause))
	}
	if r := a.WriteKind().refuse(ctx, p, a, o, opts); r != nil {
		return r
	}
	if a.Verified || (opts.ForceUnverified && strings.TrimSpace(opts.Reason) != "") {
		return nil
	}
	switch {
	case v.Rule == "":
		return refusal(finalizev1alpha1.RefusalUnverified, fmt.Sprintf("nothing verified that %s%s", guards, cause))
	case v.Status == TooYoung:
		return refusal(finalizev1alpha1.RefusalTooYoung, fmt.Sprintf("rule %s does not verify it yet: %s", v.Rule, v.Evidence))
	case v.Unread():
		return refusal(finalizev1alpha1.RefusalUnverified, fmt.Sprintf("rule %s could not verify it: %s", v.Rule, v.Detail))
	case v.Status == Distrusted:
		return refusal(finalizev1alpha1.RefusalUnverified, fmt.Sprintf("rule %s cannot be trusted: %s", v.Rule, v.Detail))
	case v.Verdict == finalizev1alpha1.VerdictRetained:
		return refusal(finalizev1alpha1.RefusalUnverified, fmt.Sprintf("rule %s: the external resource is retained by design, and the rule does not set allowRetained: %s", v.Rule, v.Evidence))
	}
	return refusal(finalizev1alpha1.RefusalUnverified, fmt.Sprintf("rule %s: the provider answered %s: %s", v.Rule, v.Verdict, v.Evidence))
}

// systemWhy says why the system finalizer fin is refused: the catalogue's owner of it and
// what it guards when the catalogue knows it, else why its name makes it system (a domain
// Kubernetes reserves, or none) and who is known to own it.
func systemWhy(catalog *owner.Catalog, fin finalizev1alpha1.Finalizer, guards, cause string) string {
	if _, known := catalog.Lookup(fin.Name); known && fin.Owner != "" {
		return fmt.Sprintf("it is a system finalizer of %s, which removes it once %s; removing it by hand breaks that guarantee%s", fin.Owner, guards, cause)
	}
	why := owner.SystemReason(fin.Name)
	if why == "" {
		why = "the scan marked it system"
	}
	who := "no known owner"
	if fin.Owner != "" {
		who = fmt.Sprintf("owner %s, from %s", fin.Owner, fin.OwnerSource)
	}
	return fmt.Sprintf("it is a system finalizer: %s, and Kubernetes reserves such names for its own components (%s); removing one by hand skips whatever it guards%s", why, who, cause)
}

// stranding says why a namespace may still hold objects, or "". The scan's index
// knows the content only of the namespaces that were being deleted when it listed them;
// any other namespace (read after the scan, or a scan without an index) is not proven
// empty by the index's silence: its content is read afresh, or the removal refused.
func (p *Planner) stranding(ctx context.Context, o *kube.Object) string {
	res := p.Result
	if res != nil {
		// An object the API server cannot read is content no list counts.
		var unreadable []string
		for _, u := range res.Unreadable {
			if u.Namespace == o.Meta.Name {
				unreadable = append(unreadable, u.Resource.String()+"/"+u.Name)
			}
		}
		if len(unreadable) > 0 {
			return fmt.Sprintf("the namespace still holds objects the API server cannot read (%s): removed with the namespace's finalizer, they would stay in etcd and come back if the namespace is made again", strings.Join(unreadable, ", "))
		}
	}
	if !indexed(o, res) {
		if p.Content == nil {
			return fmt.Sprintf("the scan did not index what namespace %s holds, and it was not read afresh", o.Meta.Name)
		}
		return p.Content.Holds(ctx, o.Meta.Name)
	}
	if c := res.Index.Content[o.Meta.Name]; c != nil && c.Count > 0 {
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

// indexed reports whether the scan's index holds the content of namespace o: the scan
// listed o as being deleted, so it counted what o holds while listing every type.
func indexed(o *kube.Object, res *scan.Result) bool {
	if res == nil || res.Index == nil {
		return false
	}
	return slices.ContainsFunc(res.Objects, func(x *kube.Object) bool {
		return x.Resource.IsNamespaces() && x.Meta.UID == o.Meta.UID && x.Meta.DeletionTimestamp != nil
	})
}
