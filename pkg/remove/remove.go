// Package remove is the one path a removal takes, for every command that removes
// finalizers (remove, reconcile): requests are planned (pkg/remove/plan), the plan
// passes the gates the command asks for (all or nothing, the breaker, a confirmation,
// the permissions), the actions are carried out and recorded (pkg/remove/write), and the
// plan comes back as the API's RemovalPlan with the result of each action. The walk is
// in docs/development.md, "The one path a removal takes".
package remove

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"
)

// Runner carries the requested removals of one run from plan to record.
type Runner struct {
	Clients *client.Clients
	// Scan is a scan, with its index, that covers the requested objects (and, for a
	// namespace, its content).
	Scan *scan.Result
	// CauseOf gives each object's diagnosis; nil when there is none.
	CauseOf func(*kube.Object) *finalizev1alpha1.Cause
	// Verifier, if set, is asked about every requested removal, and again about a pinned
	// object that changed before its write; without one nothing is verified.
	Verifier plan.Verifier
	// VerifyConcurrency bounds the verifications in flight; zero means
	// plan.DefaultVerifyConcurrency.
	VerifyConcurrency int
	// Options are what the person (remove) or the policy (reconcile) allows.
	Options plan.Options

	// DryRun none writes; client only reads; server sends each write with dryRun=All.
	DryRun write.DryRun
	// PlanOnly reads and writes nothing after planning: every action that passes the
	// gates would be removed (reconcile --dry-run).
	PlanOnly bool
	// Audit records each removal; it is required when DryRun is none.
	Audit *write.Audit
	// BackupDir, if set, receives each object before anything is removed from it.
	BackupDir string
	// Workers bounds how many objects are written at once; 0 or 1 writes one at a time.
	Workers int
	// Continue, if set, is asked before each write; false stops the run there, after the
	// actions in hand, and the rest are kept, not attempted.
	Continue func() bool
	// FinishOnCancel makes a cancelled context stop the run as Continue does: the
	// removals in hand still finish, whole, and no other starts (a SIGTERM to an
	// unattended pass). Otherwise the context cuts the writes off.
	FinishOnCancel bool
	// OnRecord, if set, sees each removal as it is made, one at a time.
	OnRecord func(*write.Record)
	// Warn, if set, receives what went wrong without failing a removal.
	Warn func(error)
	// Clock is the API server's clock, which the plan and the write measure ages by;
	// nil means the scan's (Scan.Clock).
	Clock clock.PassiveClock
}

// clock is the run's clock: Clock, or the scan's; nil lets the planner and the writer
// measure the API server's.
func (r *Runner) clock() clock.PassiveClock {
	switch {
	case r.Clock != nil:
		return r.Clock
	case r.Scan != nil:
		return r.Scan.Clock
	}
	return nil
}

// Gates are the checks a plan passes before anything is written. Each command asks for
// its own: remove for AllOrNothing and Confirm, reconcile for the Breaker and
// CheckPermissions.
type Gates struct {
	// AllOrNothing writes nothing when any requested removal is refused.
	AllOrNothing bool
	// Breaker: a plan with more actions than MaxRemovals writes nothing, and each action
	// is kept, saying why. A MaxRemovals of 0 allows none: the breaker fails closed.
	Breaker     bool
	MaxRemovals int
	// MaxForceDeletions, with Breaker: a plan with more force deletions of pods than this
	// writes nothing either. 0 allows none.
	MaxForceDeletions int
	// Confirm, if set, is shown the plan and asked before anything is written; false
	// writes nothing.
	Confirm func(*finalizev1alpha1.RemovalPlan) (bool, error)
	// CheckPermissions asks the API server for every permission the actions need before
	// any is written; an action that lacks one fails, naming it, and is not attempted.
	CheckPermissions bool
}

// Stop names the gate that stopped a run before anything was written.
type Stop string

// The gates that stop a run.
const (
	// Refused: AllOrNothing, and a requested removal was refused.
	Refused Stop = "Refused"
	// Breaker: the plan holds more actions than Gates.MaxRemovals.
	Breaker Stop = "Breaker"
	// Declined: Confirm said no.
	Declined Stop = "Declined"
)

// Report is a plan carried through its gates: the twin of reconcile's ReconcileReport,
// for a person's run.
type Report struct {
	// Plan is the plan as the API shows it, each action in plan order with its result
	// once the run got that far.
	Plan *finalizev1alpha1.RemovalPlan
	// Stopped names the gate that stopped the run before anything was written; empty
	// when none did.
	Stopped Stop
}

// Plan decides each requested removal: verified by a provider, forced by the options, or
// refused with the reason.
func (r *Runner) Plan(ctx context.Context, reqs []plan.Request) *plan.Plan {
	planner := &plan.Planner{Result: r.Scan, CauseOf: r.CauseOf, Verifier: r.Verifier, Concurrency: r.VerifyConcurrency,
		Content: &plan.ContentReader{Discovery: r.Clients.Discovery, Metadata: r.Clients.Metadata}, Kube: r.Clients.Kube, Metadata: r.Clients.Metadata, Dynamic: r.Clients.Dynamic}
	if clk := r.clock(); clk != nil {
		planner.Now = clk.Now
	}
	return planner.Plan(ctx, reqs, r.Options)
}

// API is the plan as the API shows it, before any result. Its actions have room for the
// refusals after them, where a reconcile report puts them: ten thousand rows are not
// copied to add a few.
func (r *Runner) API(p *plan.Plan) *finalizev1alpha1.RemovalPlan {
	out := &finalizev1alpha1.RemovalPlan{
		TypeMeta: metav1.TypeMeta{APIVersion: finalizev1alpha1.SchemeGroupVersion.String(), Kind: "RemovalPlan"},
		DryRun:   string(r.DryRun), Actions: make([]finalizev1alpha1.Removal, 0, len(p.Actions)+len(p.Refusals)), Refusals: make([]finalizev1alpha1.Removal, 0, len(p.Refusals)),
	}
	for i := range p.Actions {
		out.Actions = append(out.Actions, p.Actions[i].API())
	}
	for i := range p.Refusals {
		out.Refusals = append(out.Refusals, p.Refusals[i].API())
	}
	return out
}

// Act passes the plan through the gates, then carries out the actions that passed, and
// returns the plan with the result of each. The error joins the failures of the
// removals, each also in its action's result; it is nil when a gate stopped the run.
// When the run fails before anything could be written (a run that would write has no
// Audit, Confirm failed, the audit log cannot be opened), the Report is nil.
func (r *Runner) Act(ctx context.Context, p *plan.Plan, gates Gates) (*Report, error) {
	writes := !r.PlanOnly && (r.DryRun == "" || r.DryRun == write.DryRunNone)
	if writes && r.Audit == nil {
		return nil, errors.New("refusing to remove finalizers without an audit log")
	}
	if n := UnsafeDeletions(p); n > 0 && (gates.Confirm == nil || gates.Breaker || n > 1) {
		// Break-glass, for a person: one object, after a confirmation, never unattended.
		return nil, fmt.Errorf("refusing a plan with %s: an object the API server cannot read is deleted only by kubectl finalize remove --unsafe-delete, one per run, after a person confirmed it",
			words.Count(n, "unsafe deletion"))
	}
	out := &Report{Plan: r.API(p)}
	rows := out.Plan.Actions
	stopped, err := gates.stop(p, out.Plan)
	if err != nil {
		return nil, err
	}
	if stopped != "" {
		out.Stopped = stopped
		return out, nil
	}
	allowed := make([]bool, len(p.Actions))
	for i := range allowed {
		allowed[i] = true
	}
	if gates.CheckPermissions {
		allowed = permitted(ctx, r.Clients.Kube, p.Actions, rows)
	}
	if r.PlanOnly {
		for i, ok := range allowed {
			if ok {
				rows[i].Result = finalizev1alpha1.ResultWouldRemove
			}
		}
		return out, nil
	}
	var auditor *write.Auditor
	if writes {
		if auditor, err = r.Audit.Open(ctx, r.Clients.Kube); err != nil {
			return nil, err
		}
	}
	return out, r.write(ctx, p.Actions, allowed, rows, auditor)
}

// stop names the gate that stops the plan p, shown as api, before anything is written, if
// one does; the breaker keeps each action's row, saying why.
func (g *Gates) stop(p *plan.Plan, api *finalizev1alpha1.RemovalPlan) (Stop, error) {
	rows := api.Actions
	switch {
	case g.AllOrNothing && len(p.Refusals) > 0:
		return Refused, nil
	case g.Breaker && len(p.Actions) > g.MaxRemovals:
		for i := range rows {
			rows[i].Result = finalizev1alpha1.ResultKept
			rows[i].Message = fmt.Sprintf("not removed: the pass planned %d removals, more than the %d allowed (maxRemovals); nothing was written", len(p.Actions), g.MaxRemovals)
		}
		return Breaker, nil
	case g.Breaker && ForceDeletions(p) > g.MaxForceDeletions:
		for i := range rows {
			rows[i].Result = finalizev1alpha1.ResultKept
			rows[i].Message = fmt.Sprintf("not removed: the pass planned %d force deletions of pods, more than the %d allowed (maxForceDeletions); nothing was written", ForceDeletions(p), g.MaxForceDeletions)
		}
		return Breaker, nil
	case g.Confirm != nil:
		ok, err := g.Confirm(api)
		if err != nil || ok {
			return "", err
		}
		return Declined, nil
	}
	return "", nil
}

// write carries out the allowed actions through the executor, recorded by auditor (nil
// in a dry run), and gives each row its result: the record's, or why the action was not
// attempted.
func (r *Runner) write(ctx context.Context, actions []plan.Action, allowed []bool, rows []finalizev1alpha1.Removal, auditor *write.Auditor) error {
	ex := &write.Executor{
		Remover: &write.Remover{Metadata: r.Clients.Metadata, Kube: r.Clients.Kube, Raw: rawClient(r.Clients), Clock: r.clock()},
		DryRun:  r.DryRun, BackupDir: r.BackupDir, Dynamic: r.Clients.Dynamic, Verifier: r.Verifier,
		Workers: r.Workers, Continue: r.Continue, OnRecord: r.OnRecord, Warn: r.Warn,
	}
	if r.FinishOnCancel {
		stopped := ctx
		ex.Continue = func() bool { return stopped.Err() == nil && (r.Continue == nil || r.Continue()) }
		ctx = context.WithoutCancel(ctx)
	}
	if auditor != nil {
		if err := auditor.Failed(); err != nil {
			// The log failed in an earlier run and could not be taken up again: nothing
			// may be removed, and the run must not look idle.
			for i, ok := range allowed {
				if ok {
					rows[i].Result = finalizev1alpha1.ResultFailed
					rows[i].Error = fmt.Sprintf("%s: not removed: %v; free the disk of the audit log, or choose another --audit-log", actions[i].String(), err)
				}
			}
			return nil
		}
		ex.Auditor = auditor
	}
	var todo []plan.Action
	var todoRows []*finalizev1alpha1.Removal
	for i, ok := range allowed {
		if ok {
			todo = append(todo, actions[i])
			todoRows = append(todoRows, &rows[i])
		}
	}
	_, err := ex.Execute(ctx, todo, todoRows)
	return err
}

// ForceDeletions counts the force deletions of pods among a plan's actions.
func ForceDeletions(p *plan.Plan) int {
	n := 0
	for _, a := range p.Actions {
		if a.WriteKind() == plan.ForceDelete {
			n++
		}
	}
	return n
}

// UnsafeDeletions counts the actions of a plan only a person makes (plan.PersonOnly): the
// unsafe deletions of unreadable objects.
func UnsafeDeletions(p *plan.Plan) int {
	n := 0
	for _, a := range p.Actions {
		if plan.PersonOnly[a.WriteKind()] {
			n++
		}
	}
	return n
}

// rawClient is a REST client for any path of the API server (the discovery client's),
// or nil without one.
func rawClient(c *client.Clients) rest.Interface {
	if c.Kube == nil || c.Kube.Discovery() == nil {
		return nil
	}
	if rc := c.Kube.Discovery().RESTClient(); rc != nil && !reflect.ValueOf(rc).IsNil() {
		return rc
	}
	return nil
}
