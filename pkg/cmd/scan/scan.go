// Package scan is the `kubectl finalize scan` command.
package scan

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/printer"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

const long = `List every object that is being deleted and still carries finalizers.

Every listable resource type of the cluster is scanned: built-in types, custom resources
and aggregated APIs, namespaced and cluster-scoped. The whole cluster is scanned unless
-n is given; then the namespace itself and the objects in it are. Objects are sorted
longest-terminating first. AGE is how long an object has been terminating; OWNER is who
is expected to remove each finalizer: a known controller, the field manager that added
it, or the controller of the API group it names.

Only metadata is listed, in pages of --chunk-size, --concurrency types at a time. With
-o wide, json or yaml, each object also carries its cause, as "kubectl finalize doctor"
diagnoses it (a few more reads).

If a resource type cannot be discovered or listed (an unavailable APIService, a type
you may not list), the scan goes on, warns on stderr, lists it under "incomplete" in
-o json|yaml, and exits with status 3: a partial scan never looks clean.`

const example = `  # Every stuck object in the cluster
  kubectl finalize scan

  # Stuck objects in one namespace, with deletion time, UID and cause
  kubectl finalize scan -n team-a -o wide

  # Custom resources of one type, terminating for more than an hour
  kubectl finalize scan databases.db.example.com --older-than 1h

  # Objects held by any Crossplane finalizer, as JSON
  kubectl finalize scan --finalizer '*.crossplane.io' -o json

  # Names only, one per line
  kubectl finalize scan configmaps,secrets -o name`

// Flag names.
const (
	flagOlderThan     = "older-than"
	flagFinalizer     = "finalizer"
	flagSelector      = "selector"
	flagAllNamespaces = "all-namespaces"
	flagConcurrency   = "concurrency"
	flagChunkSize     = "chunk-size"
)

// Options are the options of the scan command.
type Options struct {
	PrintFlags    *util.PrintFlags
	OlderThan     time.Duration
	Finalizers    []string
	Selector      string
	AllNamespaces bool
	Concurrency   int
	ChunkSize     int64

	factory    *util.Factory
	args       []string
	resources  []schema.GroupResource
	namespace  string
	finalizers glob.Set

	genericiooptions.IOStreams
}

// NewOptions returns the options with their defaults.
func NewOptions(f *util.Factory, streams genericiooptions.IOStreams) *Options {
	return &Options{
		PrintFlags:  util.NewPrintFlags(),
		Concurrency: scan.DefaultConcurrency,
		ChunkSize:   scan.DefaultChunkSize,
		factory:     f,
		IOStreams:   streams,
	}
}

// NewCmdScan returns the scan command.
func NewCmdScan(f *util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(f, streams)
	cmd := &cobra.Command{
		Use:                   "scan [TYPE[.VERSION][.GROUP]...] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "List every object stuck in Terminating, with age and finalizer owners",
		Long:                  long,
		Example:               example,
		ValidArgsFunction:     util.ResourceTypeCompletion(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(cmd); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	o.AddFlags(cmd)
	return cmd
}

// AddFlags binds the flags to cmd.
func (o *Options) AddFlags(cmd *cobra.Command) {
	o.PrintFlags.AddFlags(cmd)
	fs := cmd.Flags()
	fs.DurationVar(&o.OlderThan, flagOlderThan, o.OlderThan, "Only list objects that have been terminating for at least this long (e.g. 30m, 2h).")
	fs.StringSliceVar(&o.Finalizers, flagFinalizer, o.Finalizers, "Only list objects with a finalizer matching one of these names or globs ('*' matches any text, '/' included). Repeatable.")
	fs.StringVarP(&o.Selector, flagSelector, "l", o.Selector, "Selector (label query) to filter on, supports '=', '==', '!=', 'in', 'notin'.(e.g. -l key1=value1,key2=value2). Matching objects must satisfy all of the specified label constraints.")
	fs.BoolVarP(&o.AllNamespaces, flagAllNamespaces, "A", o.AllNamespaces, "If true, scan the whole cluster. This is the default unless --namespace is given.")
	fs.IntVar(&o.Concurrency, flagConcurrency, o.Concurrency, "How many resource types to list at the same time.")
	fs.Int64Var(&o.ChunkSize, flagChunkSize, o.ChunkSize, "Return large lists in chunks rather than all at once. Pass 0 to disable.")
}

// Complete resolves the type arguments and the namespace.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	o.args = args
	ns, explicit, err := o.factory.Namespace()
	if err != nil {
		return err
	}
	if explicit {
		o.namespace = ns
	}
	if o.finalizers, err = glob.CompileSet(o.Finalizers); err != nil {
		return util.UsageErrorf(cmd, "invalid --%s: %v", flagFinalizer, err)
	}
	if len(args) == 0 {
		return nil
	}
	mapper, err := o.factory.RESTMapper()
	if err != nil {
		return err
	}
	for _, arg := range args {
		for _, typ := range strings.Split(arg, ",") {
			if typ == "" {
				continue
			}
			gr, err := util.ResolveType(mapper, typ)
			if err != nil {
				return util.UsageError(err)
			}
			o.resources = append(o.resources, gr)
		}
	}
	return nil
}

// Validate rejects bad flag values and combinations.
func (o *Options) Validate(cmd *cobra.Command) error {
	if err := o.PrintFlags.Validate(cmd); err != nil {
		return err
	}
	switch {
	case o.AllNamespaces && o.namespace != "":
		return util.UsageErrorf(cmd, "--namespace and --all-namespaces cannot be used together")
	case o.OlderThan < 0:
		return util.UsageErrorf(cmd, "--%s must not be negative, got %s", flagOlderThan, o.OlderThan)
	case o.Concurrency < 1:
		return util.UsageErrorf(cmd, "--%s must be at least 1, got %d", flagConcurrency, o.Concurrency)
	case o.ChunkSize < 0:
		return util.UsageErrorf(cmd, "--%s must not be negative, got %d", flagChunkSize, o.ChunkSize)
	}
	return nil
}

// Run scans and prints.
func (o *Options) Run(cmd *cobra.Command) error {
	opts := scan.Options{
		Resources:     o.resources,
		Namespace:     o.namespace,
		LabelSelector: o.Selector,
		OlderThan:     o.OlderThan,
		Finalizers:    o.finalizers,
		Concurrency:   o.Concurrency,
		ChunkSize:     o.ChunkSize,
	}
	var list *finalizev1alpha1.StuckObjectList
	if o.PrintFlags.OutputFormat == "" || o.PrintFlags.Name() {
		res, err := util.Scan(cmd.Context(), o.factory, o.ErrOut, opts)
		if err != nil {
			return err
		}
		list = res.List()
	} else {
		// Wide and machine-readable output carry each object's cause.
		rep, err := util.Diagnose(cmd.Context(), o.factory, o.ErrOut, opts)
		if err != nil {
			return err
		}
		list = rep.List()
	}
	if err := o.print(list); err != nil {
		return err
	}
	return util.IncompleteWarning(o.ErrOut, list.Incomplete)
}

func (o *Options) print(list *finalizev1alpha1.StuckObjectList) error {
	switch {
	case o.PrintFlags.Table() || o.PrintFlags.Name():
		if len(list.Items) == 0 {
			where := "in the cluster"
			if o.namespace != "" {
				where = fmt.Sprintf("in namespace %s", o.namespace)
			}
			fmt.Fprintf(o.ErrOut, "No stuck objects found %s.\n", where)
			return nil
		}
		if o.PrintFlags.Name() {
			return printer.StuckNames(o.Out, list)
		}
		return printer.StuckTable(o.Out, list, printer.StuckTableOptions{Wide: o.PrintFlags.Wide(), NoHeaders: o.PrintFlags.NoHeaders})
	default:
		return o.PrintFlags.PrintObject(list, o.Out)
	}
}
