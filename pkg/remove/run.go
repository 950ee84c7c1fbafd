package remove

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/doctor"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/pipeline"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Config is what a person asks of one `remove`: the objects, what to remove from each,
// what they allow, and how the run reports.
type Config struct {
	// Targets name the objects (Resource, Namespace and Name).
	Targets []plan.Target
	// Finalizers are the finalizers to remove from each object, or All of them;
	// ForceDelete asks for the force deletion of each (a pod) instead.
	Finalizers  []string
	All         bool
	ForceDelete bool
	// UnsafeDelete asks for the unsafe deletion of each (an object the API server cannot
	// read) instead: see plan.UnsafeDelete.
	UnsafeDelete bool
	// Policy, if set, verifies the removals through its rules' providers; Mapper resolves
	// the types its kubernetes providers name.
	Policy *policy.Policy
	Mapper meta.RESTMapper
	// Scan holds the listing options (concurrency, page size, progress); ScanDone, if
	// set, is called once the scan is over, before anything else is reported.
	Scan     scan.Options
	ScanDone func()
	// Options are what the person allows.
	Options plan.Options
	// DryRun, Audit and BackupDir are as in Runner.
	DryRun    write.DryRun
	Audit     *write.Audit
	BackupDir string
	// Confirm is shown the plan and asked before anything is written; false writes
	// nothing (Declined).
	Confirm func(*finalizev1alpha1.RemovalPlan) (bool, error)
	// OnRecord, if set, sees each removal as it is made; Warn receives what went wrong
	// without failing a removal.
	OnRecord func(*write.Record)
	Warn     func(error)
}

// TargetsError says why some of the objects asked for cannot be worked on; nothing was
// removed from any.
type TargetsError struct{ Err error }

func (e *TargetsError) Error() string { return e.Err.Error() }
func (e *TargetsError) Unwrap() error { return e.Err }

// Run is one `remove`: it diagnoses the objects, plans the removals asked for, shows the
// plan to Confirm, and carries out all of them or none (a refusal stops everything). It
// is the twin of reconcile's pass, for a person. The error is a *TargetsError when an
// object cannot be worked on; with a Report, it joins the failed removals.
func Run(ctx context.Context, clients *client.Clients, cfg Config) (*Report, error) {
	warn := func(err error) {
		if cfg.Warn != nil {
			cfg.Warn(err)
		}
	}
	scanDone := func() {
		if cfg.ScanDone != nil {
			cfg.ScanDone()
		}
	}
	opts := cfg.Scan
	opts.Namespace = scope(cfg.Targets)
	opts.PodGraceMargin = cfg.Options.PodGraceMargin
	// Every age (a rule's minAge, a pod's grace period and margin, a kubelet's last sign
	// of life) is measured by the API server's clock: a run that decides by one fails
	// without it.
	clk := plan.NewServerClock(ctx, clients.Kube)
	if err := clk.Err(); err != nil {
		if cfg.Policy != nil || cfg.ForceDelete {
			scanDone()
			return nil, fmt.Errorf("%w: a rule's minAge and a pod's grace period are measured by it; nothing was removed", err)
		}
		warn(fmt.Errorf("%w: ages are shown by this machine's clock, which may be off", err))
	}
	opts.Clock = clk
	if cfg.UnsafeDelete {
		scanDone()
		return unsafeDelete(ctx, clients, clk, cfg)
	}
	var verifier *policy.Verifier
	if cfg.Policy != nil {
		verifier = policy.NewVerifier(cfg.Policy, clients.Dynamic, provider.Options{Dynamic: clients.Dynamic, Mapper: cfg.Mapper})
		verifier.Clock = clk
		// The rules' providers are checked against live objects anywhere in the cluster.
		opts.Namespace, opts.Observe = "", verifier.Controls.Observe
	}
	rep, err := pipeline.Diagnose(ctx, clients, opts, doctor.Options{})
	scanDone()
	if err != nil {
		return nil, err
	}
	for _, w := range rep.Warnings {
		warn(errors.New(w))
	}
	reqs, err := requests(ctx, clients, rep, cfg)
	if err != nil {
		return nil, &TargetsError{err}
	}
	runner := &Runner{Clients: clients, Scan: rep.Result, CauseOf: rep.Cause, Options: cfg.Options,
		DryRun: cfg.DryRun, Audit: cfg.Audit, BackupDir: cfg.BackupDir, OnRecord: cfg.OnRecord, Warn: cfg.Warn, Clock: clk}
	if verifier != nil {
		runner.Verifier = verifier
	}
	p := runner.Plan(ctx, reqs)
	if verifier != nil {
		// Which rules' answers could not be trusted, and why.
		for _, st := range verifier.RuleStatuses() {
			if st.Distrust == "" {
				continue
			}
			what := "is not trusted"
			if st.Broken {
				what = "is BROKEN"
			}
			warn(fmt.Errorf("rule %s %s: %s", st.Rule, what, st.Distrust))
		}
	}
	return runner.Act(ctx, p, Gates{AllOrNothing: true, Confirm: cfg.Confirm})
}

// unsafeDelete is a Run of the unsafe deletion of objects the API server cannot read. It
// scans nothing: a GET of each made now is the proof its plan needs (plan.ProveUnreadable),
// and a scan would walk every list the object breaks (kubectl finalize doctor explains
// it). The row's cause is Unreadable, which that GET proves.
func unsafeDelete(ctx context.Context, clients *client.Clients, clk *plan.ServerClock, cfg Config) (*Report, error) {
	var reqs []plan.Request
	for _, t := range cfg.Targets {
		u := plan.Unreadable{Resource: t.Resource, Namespace: t.Namespace, Name: t.Name}
		reqs = append(reqs, plan.Request{Unreadable: &u, Cause: &finalizev1alpha1.Cause{Reason: finalizev1alpha1.ReasonUnreadable}})
	}
	runner := &Runner{Clients: clients, Options: cfg.Options, DryRun: cfg.DryRun, Audit: cfg.Audit, BackupDir: cfg.BackupDir, OnRecord: cfg.OnRecord, Warn: cfg.Warn, Clock: clk}
	return runner.Act(ctx, runner.Plan(ctx, reqs), Gates{AllOrNothing: true, Confirm: cfg.Confirm})
}

// requests are the requested removals, each from a stuck object a target names; the
// error says why some target cannot be worked on.
func requests(ctx context.Context, clients *client.Clients, rep *doctor.Report, cfg Config) ([]plan.Request, error) {
	var reqs []plan.Request
	var missing []error
	for _, t := range cfg.Targets {
		obj, err := find(ctx, clients, rep, t, cfg.ForceDelete)
		if err != nil {
			missing = append(missing, err)
			continue
		}
		reqs = append(reqs, plan.Request{Object: obj, Finalizers: cfg.Finalizers, All: cfg.All, ForceDelete: cfg.ForceDelete})
	}
	return reqs, utilerrors.NewAggregate(missing)
}

// scope is the namespace a diagnosis covering every target can be limited to, or "" for
// the whole cluster.
func scope(targets []plan.Target) string {
	ns := ""
	for i, t := range targets {
		tns := t.Namespace
		if t.Resource.IsNamespaces() {
			tns = t.Name
		}
		if tns == "" || (i > 0 && tns != ns) {
			return ""
		}
		ns = tns
	}
	return ns
}

// find returns the stuck object a target names, or says why it cannot be worked on.
func find(ctx context.Context, clients *client.Clients, rep *doctor.Report, t plan.Target, forceDelete bool) (*kube.Object, error) {
	for _, obj := range rep.Result.Objects {
		if obj.Resource.GroupResource() == t.Resource.GroupResource() && obj.Meta.Namespace == t.Namespace && obj.Meta.Name == t.Name {
			return obj, nil
		}
	}
	// Not found stuck: read it, to say why (or to find one the scan could not list).
	remover := &write.Remover{Metadata: clients.Metadata, Kube: clients.Kube}
	obj, err := remover.Read(ctx, t)
	if err != nil {
		return nil, err
	}
	switch {
	case obj.Meta.DeletionTimestamp == nil:
		return nil, fmt.Errorf("%s is not being deleted: removing a finalizer now would let its deletion skip the cleanup later; delete it first", t.Ref)
	case len(obj.Finalizers) == 0 && !forceDelete:
		return nil, fmt.Errorf("%s is being deleted and has no finalizers left", t.Ref)
	}
	owner.NewResolver(owner.Builtin(), rep.Result.Groups).Annotate([]*kube.Object{obj})
	return obj, nil
}
