// Package reconcile runs unattended passes of verified cleanup: scan what the policy's
// rules can match, verify each matched finalizer through the rule's provider, plan, stop
// at the breaker, check permissions, and remove what was verified through the shared
// executor, reporting every (object, finalizer) a rule matched.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/pipeline"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Options configure passes.
type Options struct {
	Policy *policy.Policy
	// DryRun verifies and plans, and writes nothing.
	DryRun bool
	// MaxRemovals trips the breaker; zero means the policy's.
	MaxRemovals int
	// Scan holds the listing options (concurrency, page size, progress).
	Scan scan.Options
	// VerifyConcurrency bounds the verifications in flight.
	VerifyConcurrency int
	// WriteConcurrency bounds the objects being written at once; 0 writes one at a time.
	WriteConcurrency int
	// Audit records each removal; it is required unless DryRun.
	Audit *write.Audit
	// Providers reach the cluster for kubernetes providers.
	Providers provider.Options
	// Continue, if set, is asked before each write: false stops the pass after the object
	// in hand (a SIGTERM).
	Continue func() bool
	// OnRecord, if set, sees each removal as it is made.
	OnRecord func(*write.Record)
	// Warn receives what went wrong without failing the pass.
	Warn func(error)
	// Clock is what ages are measured against; nil means the API server's clock,
	// measured at the start of each pass (plan.NewServerClock): a pass that cannot read
	// it fails.
	Clock clock.PassiveClock
	// PodGraceMargin is how long after its grace period a pod must still wait for its
	// kubelet before a rule with waitsForNode may force-delete it; zero means
	// plan.DefaultPodGraceMargin.
	PodGraceMargin time.Duration
}

// Reconciler runs passes against one cluster.
type Reconciler struct {
	Clients *client.Clients
	Options
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

func (r *Reconciler) warn(err error) {
	if r.Warn != nil {
		r.Warn(err)
	}
}

// Pass runs one pass. It fails only when it can do nothing at all (the scan failed);
// everything else, a failed removal included, is in the report.
func (r *Reconciler) Pass(ctx context.Context) (*finalizev1alpha1.ReconcileReport, error) {
	started := r.now()
	// Each pass discovers the cluster's types afresh: a continuous run must list, verify
	// and count in a namespace's content a type installed after it started, and must not
	// keep listing one removed since.
	r.Clients.Refresh()
	meta.MaybeResetRESTMapper(r.Providers.Mapper)
	// A continuous run whose audit log failed in an earlier pass tries it again: the
	// first removal's intent reaches the disk, or fails that removal and the pass.
	if r.Audit != nil {
		if err := r.Audit.Retry(); err != nil {
			r.warn(err)
		}
	}
	rep := &finalizev1alpha1.ReconcileReport{
		TypeMeta: metav1.TypeMeta{APIVersion: finalizev1alpha1.SchemeGroupVersion.String(), Kind: "ReconcileReport"},
		Policy:   r.Policy.File, DryRun: r.DryRun, StartTime: metav1.NewTime(started),
		Actions: []finalizev1alpha1.Removal{}, Summary: map[finalizev1alpha1.RemovalResult]int{}, Incomplete: []finalizev1alpha1.IncompleteResource{},
	}
	// Every age of the pass (a rule's minAge, a pod's grace period and margin, a
	// kubelet's last sign of life) is measured by the API server's clock, read afresh
	// each pass: the times it is compared with are the API server's.
	clk := r.Clock
	if clk == nil {
		sc := plan.NewServerClock(ctx, r.Clients.Kube)
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("the pass stopped before it verified or removed anything: its ages are measured by the API server's clock: %w", err)
		}
		clk = sc
	}
	// The rules' resources are resolved against the cluster as it is now, and the pass
	// matches by what they name.
	opts, pol, err := r.scanOptions()
	if err != nil {
		return nil, fmt.Errorf("the pass stopped before it listed anything: %w", err)
	}
	verifier := policy.NewVerifier(pol, r.Clients.Dynamic, r.Providers)
	verifier.Clock = clk
	for rule, err := range verifier.ProviderErrors() {
		r.warn(fmt.Errorf("rule %s cannot verify anything: its provider cannot run: %w", rule, err))
	}

	opts.Observe = verifier.Controls.Observe
	opts.Clock = clk
	res, err := pipeline.Scan(ctx, r.Clients, opts)
	if err != nil {
		return nil, fmt.Errorf("the pass stopped before it verified or removed anything: %w", err)
	}
	rep.Incomplete = append(rep.Incomplete, res.Incomplete...)

	runner := &remove.Runner{Clients: r.Clients, Scan: res, Verifier: verifier, VerifyConcurrency: r.VerifyConcurrency,
		Options: plan.Options{SystemByRule: true, PodGraceMargin: r.PodGraceMargin}, PlanOnly: r.DryRun, Audit: r.Audit, Workers: r.WriteConcurrency,
		Continue: r.Continue, FinishOnCancel: true, OnRecord: r.OnRecord, Warn: r.Warn, Clock: clk}
	p := runner.Plan(ctx, r.requests(pol, res, clk.Now()))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The plan holds what the gates and the writes need. Of the scan, the report needs
	// only its order: the stuck objects' metadata (megabytes for ten thousand of them)
	// and the index are let go before the report's rows are made.
	order := orderOf(res)
	runner.Scan = nil
	rep.Rules = verifier.RuleStatuses()
	limit := r.MaxRemovals
	if limit == 0 {
		limit = r.Policy.MaxRemovals
	}
	// Each failed removal is in its action's result, and the report carries them; an
	// error without an outcome (no audit log) means nothing could be written: the pass
	// fails rather than report its actions kept.
	out, err := runner.Act(ctx, p, remove.Gates{Breaker: true, MaxRemovals: limit, MaxForceDeletions: r.Policy.MaxForceDeletions, CheckPermissions: true})
	if out == nil {
		return nil, fmt.Errorf("the pass verified and planned, and removed nothing: %w", err)
	}
	if out.Stopped == remove.Breaker {
		rep.Breaker = &finalizev1alpha1.Breaker{Planned: len(p.Actions), MaxRemovals: limit,
			PlannedForceDeletions: remove.ForceDeletions(p), MaxForceDeletions: r.Policy.MaxForceDeletions}
	}
	// The plan's rows are the report's, not copied: ten thousand of them are megabytes.
	rep.Actions = out.Plan.Actions
	rep.Actions = append(rep.Actions, refusals(p)...)
	rep.Rules = r.presetWarnings(rep.Rules, rep.Actions)
	order.sort(rep.Actions)
	for _, a := range rep.Actions {
		rep.Summary[a.Result]++
	}
	rep.CompletionTime = metav1.NewTime(r.now())
	klog.V(2).InfoS("Pass done", "actions", len(rep.Actions), "summary", rep.Summary, "duration", rep.CompletionTime.Sub(started))
	return rep, nil
}

// presetWarnings adds what the presets of the rules that matched say a person must know.
func (r *Reconciler) presetWarnings(rules []finalizev1alpha1.RuleStatus, actions []finalizev1alpha1.Removal) []finalizev1alpha1.RuleStatus {
	for _, rule := range r.Policy.Rules {
		if rule.Preset == nil || len(rule.Preset.Warnings) == 0 ||
			!slices.ContainsFunc(actions, func(a finalizev1alpha1.Removal) bool { return a.Rule == rule.Name }) {
			continue
		}
		i := slices.IndexFunc(rules, func(st finalizev1alpha1.RuleStatus) bool { return st.Rule == rule.Name })
		if i < 0 {
			rules = append(rules, finalizev1alpha1.RuleStatus{Rule: rule.Name})
			i = len(rules) - 1
		}
		rules[i].Warnings = append(rules[i].Warnings, rule.Preset.Warnings...)
	}
	return rules
}

// scanOptions narrow the scan to the types the rules can match, each in the namespaces
// they can match it in, and return the policy the pass matches by. The types and their
// namespaces are resolved by ListedTypes, as `kubectl finalize rbac` resolves them,
// names and globs against the discovery this pass made: a pass lists nothing its
// generated RBAC does not grant, where it grants it. A name that could be two types
// fails the pass.
func (r *Reconciler) scanOptions() (scan.Options, *policy.Policy, error) {
	opts := r.Scan
	opts.Index = true
	if r.PodGraceMargin > 0 {
		opts.PodGraceMargin = r.PodGraceMargin
	}
	l, err := ListedTypes(r.Policy, func() ([]scan.Type, []finalizev1alpha1.IncompleteResource, error) {
		return scan.DiscoverTypes(r.Clients.Discovery)
	})
	var unresolved *UnresolvedError
	switch {
	case errors.As(err, &unresolved):
		return opts, nil, err
	case err != nil:
		// Discovery failed: the scan's own, through the same client, fails the pass.
		r.warn(err)
		opts.Namespaces = r.Policy.Scope().Namespaces
		return opts, r.Policy, nil
	}
	// What a name was resolved to, and what names nothing: no object of it is listed, and
	// no rule matches one under that name (a typo, or a CRD not installed yet).
	for _, note := range l.Resolved {
		r.warn(errors.New(note))
	}
	for _, note := range l.Unserved {
		r.warn(errors.New(note))
	}
	if l.All {
		opts.Namespaces = l.Policy.Scope().Namespaces
	} else {
		opts.Resources, opts.NamespacesOf = l.scanResources(), l.Namespaces
	}
	return opts, l.Policy, nil
}

// requests are the finalizers of each stuck object that a rule matches; now is the API
// server's time.
func (r *Reconciler) requests(pol *policy.Policy, res *scan.Result, now time.Time) []plan.Request {
	var reqs []plan.Request
	margin := r.PodGraceMargin
	if margin <= 0 {
		margin = plan.DefaultPodGraceMargin
	}
	for _, o := range res.Objects {
		s := policy.SubjectOf(o.Resource, o.Meta.Namespace, o.Meta.Name, o.Meta.Labels)
		var names []string
		for _, f := range o.Finalizers {
			if pol.Match(s, f.Name) != nil {
				names = append(names, f.Name)
			}
		}
		// A pod whose deletion waits for its node's kubelet, overdue by the scanned
		// metadata, that a waitsForNode rule matches, is force-deleted if the rule verifies
		// that the node's machine is gone. A pod held only by its finalizers (a grace
		// period of 0 already) or still in its grace period and margin is not asked for:
		// asking would only keep it, every pass.
		force := o.Resource.IsPods() && pol.MatchPod(s) != nil &&
			plan.Overdue(&corev1.Pod{ObjectMeta: o.Meta}, margin, now) == ""
		if len(names) > 0 || force {
			reqs = append(reqs, plan.Request{Object: o, Finalizers: names, ForceDelete: force})
		}
	}
	return reqs
}

// refusals are the matched finalizers the plan keeps, each the row the plan refused,
// with why and the result.
func refusals(p *plan.Plan) []finalizev1alpha1.Removal {
	var out []finalizev1alpha1.Removal
	for i := range p.Refusals {
		ref := &p.Refusals[i]
		v := ref.Verification
		a := ref.API()
		a.Result = finalizev1alpha1.ResultKept
		switch {
		case ref.ObjectGone:
			a.Result = finalizev1alpha1.ResultObjectGone
		case ref.Kind == finalizev1alpha1.RefusalTooYoung:
			a.Result = finalizev1alpha1.ResultTooYoung
		case v.Unread():
			// Kept, but not by a decision: the cluster could not be read to make one.
			a.Result, a.Message, a.Error = finalizev1alpha1.ResultFailed, "", fmt.Sprintf("%s: %s", ref.Target.String(), ref.Message)
		}
		out = append(out, a)
	}
	return out
}

// order is the scan's order of the stuck objects, kept without the objects: each one's
// place by uid, and the names of its finalizers in their order.
type order struct {
	pos  map[types.UID]int
	fins [][]string
}

func orderOf(res *scan.Result) *order {
	o := &order{pos: make(map[types.UID]int, len(res.Objects)), fins: make([][]string, len(res.Objects))}
	for i, x := range res.Objects {
		o.pos[x.Meta.UID] = i
		names := make([]string, len(x.Finalizers))
		for j, f := range x.Finalizers {
			names[j] = f.Name
		}
		o.fins[i] = names
	}
	return o
}

// sort orders the report like the scan: longest terminating first, then by object, then
// by the finalizer's place on it: its last, for a name an object holds twice (a
// namespace's "kubernetes" in both fields); a row of no finalizer, a pod's force
// deletion, goes with the first.
func (o *order) sort(actions []finalizev1alpha1.Removal) {
	key := func(a *finalizev1alpha1.Removal) (int, int) {
		p, ok := o.pos[a.Target.UID]
		if !ok {
			return 0, 0
		}
		for j := len(o.fins[p]) - 1; j > 0; j-- {
			if o.fins[p][j] == a.Finalizer {
				return p, j
			}
		}
		return p, 0
	}
	sort.SliceStable(actions, func(i, j int) bool {
		pa, fa := key(&actions[i])
		pb, fb := key(&actions[j])
		if pa != pb {
			return pa < pb
		}
		return fa < fb
	})
}
