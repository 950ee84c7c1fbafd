// Package scan is the `kubectl finalize scan` command.
package scan

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/doctor"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/fleet"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/pipeline"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/printer"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

const long = `List every object that is being deleted and still carries finalizers.

Every listable resource type of the cluster is scanned: built-in types, custom resources
and aggregated APIs, namespaced and cluster-scoped. The whole cluster is scanned unless
-n is given; then the namespace itself and the objects in it are. Objects are sorted
longest-terminating first. AGE is how long an object has been terminating; OWNER is who
is expected to remove each finalizer: a known controller, the field manager that added
it, or the controller of the API group it names.

A pod is also listed, finalizers or not, when its deletion waits for the kubelet of its
node longer than --pod-grace-margin after its grace period ended: its node is gone,
NotReady, or its kubelet does not finish stopping it. Such a pod holds its namespace.
Its AGE counts from the end of the grace period (its deletionTimestamp), and -o
json|yaml says which node it waits for ("waitsFor": {"node": NAME}). A pod whose grace
period is not over is never listed.

Only metadata is listed, in pages of --chunk-size, --concurrency types at a time, and
spec.nodeName of each pod listed for its kubelet (one GET each; one list of its
namespace's pods when a namespace holds more than 20). With
-o wide, json or yaml, each object also carries its cause, as "kubectl finalize doctor"
diagnoses it: the whole cluster is then read, whatever -n, -l, --older-than, --finalizer
and TYPE narrow, so that the cause is the one the doctor gives.

If a resource type cannot be discovered or listed (an unavailable APIService, a type
you may not list), the scan goes on, warns on stderr, lists it under "incomplete" in
-o json|yaml, and exits with status 3: a partial scan never looks clean.

Each "incomplete" entry has a reason:

  DiscoveryFailed               the group version could not be discovered, most often an
                                aggregated API whose APIService is unavailable
                                (kubectl get apiservices; kubectl finalize doctor names it).
  Forbidden                     you may not list the type: run as someone who may, or
                                accept that its stuck objects are not shown.
  ListFailed                    listing failed otherwise (a timeout, a server error);
                                the message says how. Run the scan again.
  ConversionWebhookUnavailable  a CRD's conversion webhook fails (its service is missing,
                                has no ready endpoints, or its TLS is not trusted), so its
                                objects stored at one version cannot be listed at the
                                version the scan lists. The same failure stops the
                                namespace controller in every namespace being deleted
                                whose list of the type fails. The message names the CRD
                                and why its webhook fails: restore the webhook;
                                kubectl finalize doctor says what else can be done safely.
  ClusterUnreachable            with several contexts: a whole cluster could not be read.

With --context given more than once, --all-contexts or --context-selector, the clusters
of those kubeconfig contexts are scanned, --cluster-concurrency at a time, each within
--cluster-timeout. Every object then names its cluster: a CLUSTER column, a "cluster"
field, and -o name lines of CONTEXT, a tab, and the name. A cluster that cannot be read
is listed under "incomplete" with its context, the others are still printed, and the
scan exits with status 3.`

const example = `  # Every stuck object in the cluster
  kubectl finalize scan

  # Stuck objects in one namespace, with deletion time, UID and cause
  kubectl finalize scan -n team-a -o wide

  # Custom resources of one type, terminating for more than an hour
  kubectl finalize scan databases.db.example.com --older-than 1h

  # Objects held by any Crossplane finalizer, as JSON
  kubectl finalize scan --finalizer '*.crossplane.io' -o json

  # Pods whose deletion has waited for their kubelet for more than 10 minutes
  kubectl finalize scan pods --pod-grace-margin 10m

  # Names only, one per line
  kubectl finalize scan configmaps,secrets -o name

  # Which clusters have something stuck?
  kubectl finalize scan --all-contexts

  # Two clusters, each given 30 seconds
  kubectl finalize scan --context prod-eu --context prod-us --cluster-timeout 30s`

// Flag names.
const (
	flagOlderThan     = "older-than"
	flagFinalizer     = "finalizer"
	flagSelector      = "selector"
	flagAllNamespaces = "all-namespaces"
	// FlagPodGraceMargin is shared with doctor.
	FlagPodGraceMargin = "pod-grace-margin"
)

// PodGraceMarginUsage is the help of --pod-grace-margin, shared with doctor.
const PodGraceMarginUsage = "List a pod whose deletion still waits for its kubelet this long after its grace period ended (its deletionTimestamp), finalizers or not."

// Options are the options of the scan command.
type Options struct {
	PrintFlags    *util.PrintFlags
	ListFlags     util.ListFlags
	FleetFlags    util.FleetFlags
	OlderThan     time.Duration
	Finalizers    []string
	Selector      string
	AllNamespaces bool
	// PodGraceMargin is --pod-grace-margin.
	PodGraceMargin time.Duration

	clients    *client.Clients
	resources  []schema.GroupResource
	namespace  string
	finalizers glob.Set
	// clusters, when more than one, are the contexts a fleet run reads through factory,
	// with the type arguments resolved against each.
	clusters []string
	factory  util.Factory
	typeArgs []string

	genericiooptions.IOStreams
}

// NewOptions returns the options with their defaults.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{PrintFlags: util.NewTablePrintFlags(), ListFlags: util.NewListFlags(), FleetFlags: util.NewFleetFlags(),
		PodGraceMargin: scan.DefaultPodGraceMargin, IOStreams: streams}
}

// NewCmdScan returns the scan command.
func NewCmdScan(f util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := util.NewCommand(f, NewOptions(streams), &cobra.Command{
		Use:               "scan [TYPE[.VERSION][.GROUP]...] [flags]",
		Short:             "List every object stuck in Terminating, with age and finalizer owners",
		Long:              long,
		Example:           example,
		ValidArgsFunction: util.ResourceTypeCompletion(f),
	})
	_ = cmd.RegisterFlagCompletionFunc("finalizer", util.FinalizerCompletion(f))
	return cmd
}

// AddFlags binds the flags to cmd.
func (o *Options) AddFlags(cmd *cobra.Command) {
	o.PrintFlags.AddFlags(cmd)
	fs := cmd.Flags()
	fs.DurationVar(&o.OlderThan, flagOlderThan, o.OlderThan, "Only list objects that have been terminating for at least this long (e.g. 30m, 2h).")
	fs.StringSliceVar(&o.Finalizers, flagFinalizer, o.Finalizers, "Only list objects with a finalizer matching one of these names or globs ('*' matches any text, '/' included). Repeatable.")
	fs.StringVarP(&o.Selector, flagSelector, "l", o.Selector, "Selector (label query) to filter on, supports '=', '==', '!=', 'in', 'notin'.(e.g. -l key1=value1,key2=value2). Matching objects must satisfy all of the specified label constraints.")
	fs.DurationVar(&o.PodGraceMargin, FlagPodGraceMargin, o.PodGraceMargin, PodGraceMarginUsage)
	fs.BoolVarP(&o.AllNamespaces, flagAllNamespaces, "A", o.AllNamespaces, "If true, scan the whole cluster. This is the default unless --namespace is given.")
	o.ListFlags.AddFlags(cmd)
	o.FleetFlags.AddFlags(cmd)
}

// Complete resolves the clusters, the clients, the type arguments and the namespace.
func (o *Options) Complete(f util.Factory, _ *cobra.Command, args []string) error {
	ns, explicit, err := f.Namespace()
	if err != nil {
		return err
	}
	if explicit {
		o.namespace = ns
	}
	if o.finalizers, err = glob.CompileSet(o.Finalizers); err != nil {
		return util.UsageErrorf(nil, "invalid --%s: %v", flagFinalizer, err)
	}
	if f, o.clusters, err = o.FleetFlags.Resolve(f); err != nil {
		return err
	}
	if len(o.clusters) > 1 {
		// Each cluster is read on its own in Run: one that cannot be reached must not
		// keep the others from being reported.
		o.factory, o.typeArgs = f, args
		return nil
	}
	if o.clients, err = f.Clients(); err != nil {
		return err
	}
	o.resources, err = resolveTypes(f, args)
	return err
}

// resolveTypes resolves kubectl-style type arguments against f's cluster.
func resolveTypes(f util.Factory, args []string) ([]schema.GroupResource, error) {
	if len(args) == 0 {
		return nil, nil
	}
	mapper, err := f.RESTMapper()
	if err != nil {
		return nil, err
	}
	var out []schema.GroupResource
	for _, arg := range args {
		for _, typ := range strings.Split(arg, ",") {
			if typ == "" {
				continue
			}
			gr, err := kube.ResolveType(mapper, typ)
			if err != nil {
				return nil, util.UsageError(err)
			}
			out = append(out, gr)
		}
	}
	return out, nil
}

// Validate rejects bad flag values and combinations.
func (o *Options) Validate() error {
	return util.FirstError(o.PrintFlags.Validate(), o.validateFilters(), o.FleetFlags.Validate(), o.ListFlags.Validate())
}

// validateFilters rejects filters that cannot match.
func (o *Options) validateFilters() error {
	switch {
	case o.AllNamespaces && o.namespace != "":
		return util.UsageErrorf(nil, "--namespace and --all-namespaces cannot be used together")
	case o.OlderThan < 0:
		return util.UsageErrorf(nil, "--%s must not be negative, got %s", flagOlderThan, o.OlderThan)
	case o.PodGraceMargin <= 0:
		return util.UsageErrorf(nil, "--%s must be positive, got %s", FlagPodGraceMargin, o.PodGraceMargin)
	}
	return nil
}

// Run scans and prints.
func (o *Options) Run(ctx context.Context) error {
	if len(o.clusters) > 1 {
		return o.runFleet(ctx)
	}
	opts, done := o.ListFlags.ScanOptions(o.ErrOut)
	list, warnings, err := o.scan(ctx, o.clients, o.resources, opts)
	done()
	if err != nil {
		return err
	}
	return o.show(list, warnings)
}

// scan reads one cluster.
func (o *Options) scan(ctx context.Context, clients *client.Clients, resources []schema.GroupResource, opts scan.Options) (*finalizev1alpha1.StuckObjectList, []string, error) {
	opts.Resources, opts.Namespace, opts.LabelSelector, opts.OlderThan, opts.Finalizers = resources, o.namespace, o.Selector, o.OlderThan, o.finalizers
	opts.PodGraceMargin = o.PodGraceMargin
	// Ages (terminatingSeconds, --older-than) are the API server's clock's.
	clk := plan.NewServerClock(ctx, clients.Kube)
	opts.Clock = clk
	var warnings []string
	if err := clk.Err(); err != nil {
		warnings = append(warnings, fmt.Sprintf("%v: ages are measured by this machine's clock, which may be off", err))
	}
	if o.PrintFlags.Default() || o.PrintFlags.Name() {
		res, err := pipeline.Scan(ctx, clients, opts)
		if err != nil {
			return nil, nil, err
		}
		return res.List(), warnings, nil
	}
	// Wide and machine-readable output carry each object's cause.
	rep, err := pipeline.Diagnose(ctx, clients, opts, doctor.Options{})
	if err != nil {
		return nil, nil, err
	}
	return rep.List(), append(warnings, rep.Warnings...), nil
}

// runFleet reads every cluster, a few at a time, and prints one list where each object
// names its cluster. A cluster that cannot be read is reported incomplete (exit 3), and
// the others are still printed.
func (o *Options) runFleet(ctx context.Context) error {
	results, warnings := util.RunFleet(ctx, o.factory, o.clusters, &o.FleetFlags, o.ErrOut, "scanning",
		func(ctx context.Context, f util.Factory, clients *client.Clients) (*finalizev1alpha1.StuckObjectList, []string, error) {
			resources, err := resolveTypes(f, o.typeArgs)
			if err != nil {
				return nil, nil, err
			}
			return o.scan(ctx, clients, resources, o.ListFlags.Options())
		})
	list, err := fleet.MergeLists(results)
	if err != nil {
		return err
	}
	return o.show(list, warnings)
}

// show prints the warnings and the list, then says what could not be read.
func (o *Options) show(list *finalizev1alpha1.StuckObjectList, warnings []string) error {
	return util.PrintResult(o.ErrOut, warnings, list.Incomplete, func() error { return o.print(list) })
}

func (o *Options) print(list *finalizev1alpha1.StuckObjectList) error {
	switch {
	case o.PrintFlags.Table() || o.PrintFlags.Name():
		if len(list.Items) == 0 {
			where := "in the cluster"
			switch {
			case len(o.clusters) > 1 && o.namespace != "":
				where = fmt.Sprintf("in namespace %s of %d clusters", o.namespace, len(o.clusters))
			case len(o.clusters) > 1:
				where = fmt.Sprintf("in %d clusters", len(o.clusters))
			case o.namespace != "":
				where = fmt.Sprintf("in namespace %s", o.namespace)
			}
			fmt.Fprintf(o.ErrOut, "No stuck objects found %s.\n", where)
			return nil
		}
		if o.PrintFlags.Name() {
			return printer.StuckNames(o.Out, list)
		}
		return printer.StuckTable(o.Out, list, printer.StuckTableOptions{Wide: o.PrintFlags.Wide(), NoHeaders: o.PrintFlags.NoHeaders, Cluster: len(o.clusters) > 1})
	default:
		return o.PrintFlags.PrintObject(list, o.Out)
	}
}
