// Package doctor is the `kubectl finalize doctor` command.
package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/doctor"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/fleet"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/pipeline"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/printer"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

var long = `Explain why objects are stuck in Terminating, and the next safe step.

Without an argument, every stuck object of the cluster (or of the namespace given with
-n) is diagnosed, and the diagnoses are grouped by root cause: one unavailable
APIService that holds forty objects is said once, with the objects it holds.

With TYPE/NAME, the doctor explains that one object as a tree: its finalizers and who
owns them, why each is still there, and below it everything it waits for, down to the
root causes. For a namespace, that is its whole remaining content.

An object gets the same cause however it is asked for: the doctor reads the whole
cluster, and -n, -l and TYPE/NAME choose what it prints. Only when you may not list
every namespace are the causes measured from the namespaces you asked for, and a
warning says so.

` + causes() + `

The doctor reads the scan's metadata and a few objects more (APIServices, webhook
configurations and their endpoints, CRDs, the type of a failing conversion webhook in
each terminating namespace, pods of namespaces with stuck claims,
VolumeSnapshots, VolumeAttachments, warning events, controllers' workloads), and asks
the API server what idle controllers' ServiceAccounts may do (SubjectAccessReviews,
which write nothing). It changes no object.

With --context given more than once, --all-contexts or --context-selector, each cluster
is diagnosed on its own and its root causes printed under its context; then the root
causes found in more than one cluster are said once, with their clusters: the same
operator gone in four clusters is one finding. A cluster that cannot be read is
reported as incomplete (exit status 3).`

// causes lists the causes the doctor registers, most urgent first.
func causes() string {
	var terms []util.Term
	for _, c := range doctor.Causes() {
		terms = append(terms, util.Term{Name: c.Reason, Meaning: c.Help})
	}
	return util.TermList("Causes, most urgent first (the reason names are stable, for scripts):", terms)
}

const example = `  # Every stuck object, grouped by root cause
  kubectl finalize doctor

  # Why is this namespace still terminating?
  kubectl finalize doctor namespace/team-a

  # One custom resource, as JSON
  kubectl finalize doctor databases.db.example.com/orders -n team-a -o json

  # Every production cluster: what is stuck where, and what repeats
  kubectl finalize doctor --context-selector 'prod-*'`

// flagProgressWindow is the name of the flag that sets how long a controller may go
// without writing to an object it holds and still be called Progressing.
const flagProgressWindow = "progress-window"

// flagPodGraceMargin is the name of the flag that sets how long past its grace period a
// pod's deletion may wait for its kubelet before the pod is diagnosed.
const flagPodGraceMargin = "pod-grace-margin"

// Options are the options of the doctor command.
type Options struct {
	PrintFlags *util.PrintFlags
	ListFlags  util.ListFlags
	FleetFlags util.FleetFlags
	// ProgressWindow is how long a controller may go without writing to an object it
	// holds and still be called Progressing.
	ProgressWindow time.Duration
	// PodGraceMargin is --pod-grace-margin.
	PodGraceMargin time.Duration

	clients   *client.Clients
	namespace string
	explicit  bool
	// target is the object `doctor TYPE/NAME` asks about.
	target *kube.Ref
	// clusters, when more than one, are the contexts a fleet run diagnoses through factory.
	clusters []string
	factory  util.Factory

	genericiooptions.IOStreams
}

// NewOptions returns the options with their defaults.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{PrintFlags: util.NewTablePrintFlags(), ListFlags: util.NewListFlags(), FleetFlags: util.NewFleetFlags(),
		ProgressWindow: doctor.DefaultProgressWindow, PodGraceMargin: scan.DefaultPodGraceMargin, IOStreams: streams}
}

// NewCmdDoctor returns the doctor command.
func NewCmdDoctor(f util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return util.NewCommand(f, NewOptions(streams), &cobra.Command{
		Use:               "doctor [TYPE/NAME | TYPE NAME] [flags]",
		Short:             "Explain why objects are stuck, grouped by root cause, and the next safe step",
		Long:              long,
		Example:           example,
		ValidArgsFunction: util.TerminatingCompletion(f),
	})
}

// AddFlags binds the flags to cmd.
func (o *Options) AddFlags(cmd *cobra.Command) {
	o.PrintFlags.AddFlags(cmd)
	o.ListFlags.AddFlags(cmd)
	o.FleetFlags.AddFlags(cmd)
	cmd.Flags().DurationVar(&o.PodGraceMargin, flagPodGraceMargin, o.PodGraceMargin,
		"Diagnose a pod whose deletion still waits for its kubelet this long after its grace period ended (its deletionTimestamp), finalizers or not.")
	cmd.Flags().DurationVar(&o.ProgressWindow, flagProgressWindow, o.ProgressWindow,
		"How long a controller may go without writing to an object it holds and still be called Progressing; after that, a controller that runs is ControllerIdle. Raise it for operators whose cloud deletions report back slowly.")
}

// Complete resolves the clients, the target and the namespace.
func (o *Options) Complete(f util.Factory, _ *cobra.Command, args []string) error {
	var err error
	if o.namespace, o.explicit, err = f.Namespace(); err != nil {
		return err
	}
	if f, o.clusters, err = o.FleetFlags.Resolve(f); err != nil {
		return err
	}
	switch {
	case len(o.clusters) > 1 && len(args) > 0:
		return util.UsageErrorf(nil, "doctor TYPE/NAME explains one object of one cluster: give one --%s", util.FlagContext)
	case len(o.clusters) > 1:
		o.factory = f
		return nil
	}
	if o.clients, err = f.Clients(); err != nil {
		return err
	}
	if len(args) == 0 {
		return nil
	}
	objs, err := util.ParseObjectArgs(args)
	switch {
	case len(args) > 2 || err == nil && len(objs) > 1:
		return util.UsageErrorf(nil, "doctor takes one object: TYPE/NAME or TYPE NAME")
	case err != nil && len(args) == 1:
		return util.UsageErrorf(nil, "%q is not TYPE/NAME; to diagnose every stuck object, give no argument", args[0])
	case err != nil:
		return err
	}
	mapper, err := f.RESTMapper()
	if err != nil {
		return err
	}
	resolved, err := util.ResolveObjects(mapper, o.namespace, objs)
	if err != nil {
		return err
	}
	o.target = &resolved[0]
	return nil
}

// Validate rejects output formats the doctor has no use for.
func (o *Options) Validate() error {
	if o.PrintFlags.Wide() || o.PrintFlags.Name() {
		return util.UsageErrorf(nil, "--output %s is not supported by doctor: use the default, json, yaml, jsonpath or go-template", o.PrintFlags.OutputFormat)
	}
	if o.ProgressWindow <= 0 {
		return util.UsageErrorf(nil, "--%s must be positive, got %s", flagProgressWindow, o.ProgressWindow)
	}
	if o.PodGraceMargin <= 0 {
		return util.UsageErrorf(nil, "--%s must be positive, got %s", flagPodGraceMargin, o.PodGraceMargin)
	}
	return util.FirstError(o.PrintFlags.Validate(), o.FleetFlags.Validate(), o.ListFlags.Validate())
}

// Run diagnoses and prints.
func (o *Options) Run(ctx context.Context) error {
	if len(o.clusters) > 1 {
		return o.runFleet(ctx)
	}
	opts, done := o.ListFlags.ScanOptions(o.ErrOut)
	opts.PodGraceMargin = o.PodGraceMargin
	switch {
	case o.target == nil && o.explicit:
		opts.Namespace = o.namespace
	case o.target != nil && o.target.Resource.IsNamespaces():
		// A namespace and its content.
		opts.Namespace = o.target.Name
	case o.target != nil && o.target.Namespace != "":
		// Namespaced owners only have dependents in their own namespace.
		opts.Namespace = o.target.Namespace
	}
	clk := serverClock(ctx, o.clients, &opts)
	rep, err := pipeline.Diagnose(ctx, o.clients, opts, doctor.Options{ProgressWindow: o.ProgressWindow})
	done()
	if err != nil {
		return err
	}
	util.PrintWarnings(o.ErrOut, append(clockWarning(clk), rep.Warnings...))
	var target *kube.Object
	var d *finalizev1alpha1.Diagnosis
	if o.target != nil {
		for _, obj := range rep.Result.Objects {
			if ref := obj.Ref(); ref.Resource.GroupResource() == o.target.Resource.GroupResource() && ref.Namespace == o.target.Namespace && ref.Name == o.target.Name {
				target = obj
			}
		}
		if target == nil {
			// An object the API server cannot read is explained as the scan found it: a
			// GET of it fails.
			if d = rep.UnreadableDiagnosis(o.target.Resource, o.target.Namespace, o.target.Name); d == nil {
				return o.notStuck(ctx, clk.Now())
			}
		}
	}
	if d == nil {
		d = rep.Diagnosis(target)
	}
	switch {
	case !o.PrintFlags.Table():
		err = o.PrintFlags.PrintObject(d, o.Out)
	case d.Target != nil:
		err = printer.Tree(o.Out, d)
	case len(d.Items) == 0:
		where := "in the cluster"
		if opts.Namespace != "" {
			where = "in namespace " + opts.Namespace
		}
		fmt.Fprintf(o.ErrOut, "No stuck objects found %s.\n", where)
	default:
		err = printer.RootCauses(o.Out, d)
	}
	if err != nil {
		return err
	}
	return util.IncompleteWarning(o.ErrOut, d.Incomplete)
}

// serverClock measures the API server's clock through clients, which the diagnosis
// measures every age by.
func serverClock(ctx context.Context, clients *client.Clients, opts *scan.Options) *plan.ServerClock {
	clk := plan.NewServerClock(ctx, clients.Kube)
	opts.Clock = clk
	return clk
}

// clockWarning says that the API server's clock could not be read, if so.
func clockWarning(clk *plan.ServerClock) []string {
	if err := clk.Err(); err != nil {
		return []string{fmt.Sprintf("%v: ages are measured by this machine's clock, which may be off", err)}
	}
	return nil
}

// notStuck explains a target that the scan did not find stuck; now is the API server's
// time.
func (o *Options) notStuck(ctx context.Context, now time.Time) error {
	gvr := o.target.Resource.GroupVersionResource
	r := o.clients.Metadata.Resource(gvr)
	var meta *metav1.PartialObjectMetadata
	var err error
	if o.target.Namespace != "" {
		meta, err = r.Namespace(o.target.Namespace).Get(ctx, o.target.Name, metav1.GetOptions{})
	} else {
		meta, err = r.Get(ctx, o.target.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", o.target, err)
	}
	msg := "is not being deleted"
	switch {
	case o.target.Resource.IsPods() && scan.PodWithinMargin(&meta.ObjectMeta, now, o.PodGraceMargin):
		msg = o.podWithinMargin(meta.DeletionTimestamp.Time, now)
	case meta.DeletionTimestamp != nil && len(meta.Finalizers) == 0:
		msg = "is being deleted and has no finalizers left: it goes shortly"
	case meta.DeletionTimestamp != nil:
		msg = "is being deleted, but was filtered out"
	}
	_, err = fmt.Fprintf(o.Out, "%s %s.\n", o.target, msg)
	return err
}

// podWithinMargin explains a pod being deleted whose kubelet has not yet been waited
// for long enough to call it stuck: its grace period is not over, or ended less than
// --pod-grace-margin ago.
func (o *Options) podWithinMargin(deletion, now time.Time) string {
	if now.Before(deletion) {
		return fmt.Sprintf("is being deleted: its grace period ends in %s, by when its kubelet should have stopped it", duration.HumanDuration(deletion.Sub(now)))
	}
	return fmt.Sprintf("is being deleted: its grace period ended %s ago, less than --%s (%s); if its kubelet has not stopped it after that, run this again, or give a shorter --%s",
		duration.HumanDuration(now.Sub(deletion)), flagPodGraceMargin, o.PodGraceMargin, flagPodGraceMargin)
}

// runFleet diagnoses every cluster, a few at a time, and prints each cluster's root
// causes under its context, then the causes found in more than one cluster, once each.
func (o *Options) runFleet(ctx context.Context) error {
	results, warnings := util.RunFleet(ctx, o.factory, o.clusters, &o.FleetFlags, o.ErrOut, "diagnosing",
		func(ctx context.Context, _ util.Factory, clients *client.Clients) (*finalizev1alpha1.Diagnosis, []string, error) {
			opts := o.ListFlags.Options()
			opts.PodGraceMargin = o.PodGraceMargin
			if o.explicit {
				opts.Namespace = o.namespace
			}
			clk := serverClock(ctx, clients, &opts)
			rep, err := pipeline.Diagnose(ctx, clients, opts, doctor.Options{ProgressWindow: o.ProgressWindow})
			if err != nil {
				return nil, nil, err
			}
			return rep.Diagnosis(nil), append(clockWarning(clk), rep.Warnings...), nil
		})
	d, err := fleet.MergeDiagnoses(results)
	if err != nil {
		return err
	}
	return util.PrintResult(o.ErrOut, warnings, d.Incomplete, func() error {
		if !o.PrintFlags.Table() {
			return o.PrintFlags.PrintObject(d, o.Out)
		}
		return printer.FleetRootCauses(o.Out, d, o.clusters)
	})
}
