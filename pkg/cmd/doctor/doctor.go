// Package doctor is the `kubectl finalize doctor` command.
package doctor

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/printer"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

const long = `Explain why objects are stuck in Terminating, and the next safe step.

Without an argument, every stuck object of the cluster (or of the namespace given with
-n) is diagnosed, and the diagnoses are grouped by root cause: one unavailable
APIService that holds forty objects is said once, with the objects it holds.

With TYPE/NAME, the doctor explains that one object as a tree: its finalizers and who
owns them, why each is still there, and below it everything it waits for, down to the
root causes. For a namespace, that is its whole remaining content.

Causes (the reason names are stable, for scripts): APIServiceUnavailable,
NamespaceContentRemaining, NamespaceFinalizersRemaining, PodsUsingClaim,
ClaimStillBound, DependentsRemaining, InstancesRemaining, ControllerInactive,
ControllerFailing, WebhookBlocking, Progressing (the controller is at work: stuck is not
proven yet), Unknown.

The doctor reads the scan's metadata and a few objects more (APIServices, webhook
configurations and their endpoints, pods of namespaces with stuck claims, warning
events, controllers' workloads). It changes nothing.`

const example = `  # Every stuck object, grouped by root cause
  kubectl finalize doctor

  # Why is this namespace still terminating?
  kubectl finalize doctor namespace/team-a

  # One custom resource, as JSON
  kubectl finalize doctor databases.db.example.com/orders -n team-a -o json`

// Options are the options of the doctor command.
type Options struct {
	PrintFlags *util.PrintFlags

	factory   *util.Factory
	namespace string
	explicit  bool
	target    *targetRef

	genericiooptions.IOStreams
}

// targetRef is the object `doctor TYPE/NAME` asks about.
type targetRef struct {
	Resource  schema.GroupVersionResource
	Namespace string
	Name      string
}

// NewOptions returns the options with their defaults.
func NewOptions(f *util.Factory, streams genericiooptions.IOStreams) *Options {
	return &Options{PrintFlags: util.NewPrintFlags(), factory: f, IOStreams: streams}
}

// NewCmdDoctor returns the doctor command.
func NewCmdDoctor(f *util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(f, streams)
	cmd := &cobra.Command{
		Use:                   "doctor [TYPE/NAME | TYPE NAME] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Explain why objects are stuck, grouped by root cause, and the next safe step",
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
	o.PrintFlags.AddFlags(cmd)
	return cmd
}

// Complete resolves the target and the namespace.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	var err error
	if o.namespace, o.explicit, err = o.factory.Namespace(); err != nil {
		return err
	}
	var typ, name string
	switch len(args) {
	case 0:
		return nil
	case 1:
		var ok bool
		if typ, name, ok = strings.Cut(args[0], "/"); !ok || typ == "" || name == "" {
			return util.UsageErrorf(cmd, "%q is not TYPE/NAME; to diagnose every stuck object, give no argument", args[0])
		}
	case 2:
		typ, name = args[0], args[1]
	default:
		return util.UsageErrorf(cmd, "doctor takes one object: TYPE/NAME or TYPE NAME")
	}
	mapper, err := o.factory.RESTMapper()
	if err != nil {
		return err
	}
	r, err := util.ResolveResource(mapper, typ)
	if err != nil {
		return util.UsageError(err)
	}
	o.target = &targetRef{Resource: r.GroupVersionResource, Name: name}
	if r.Namespaced {
		o.target.Namespace = o.namespace
	}
	return nil
}

// Validate rejects output formats the doctor has no use for.
func (o *Options) Validate(cmd *cobra.Command) error {
	if o.PrintFlags.Wide() || o.PrintFlags.Name() {
		return util.UsageErrorf(cmd, "--output %s is not supported by doctor: use the default, json, yaml, jsonpath or go-template", o.PrintFlags.OutputFormat)
	}
	return o.PrintFlags.Validate(cmd)
}

// Run diagnoses and prints.
func (o *Options) Run(cmd *cobra.Command) error {
	opts := scan.Options{}
	switch {
	case o.target == nil && o.explicit:
		opts.Namespace = o.namespace
	case o.target != nil && o.target.Resource.Group == "" && o.target.Resource.Resource == "namespaces":
		// A namespace and its content.
		opts.Namespace = o.target.Name
	case o.target != nil && o.target.Namespace != "":
		// Namespaced owners only have dependents in their own namespace.
		opts.Namespace = o.target.Namespace
	}
	rep, err := util.Diagnose(cmd.Context(), o.factory, o.ErrOut, opts)
	if err != nil {
		return err
	}
	var target *scan.Object
	if o.target != nil {
		for _, obj := range rep.Result.Objects {
			if obj.Resource.GroupResource() == o.target.Resource.GroupResource() && obj.Meta.Namespace == o.target.Namespace && obj.Meta.Name == o.target.Name {
				target = obj
			}
		}
		if target == nil {
			return o.notStuck(cmd)
		}
	}
	d := rep.Diagnosis(target)
	switch {
	case !o.PrintFlags.Table():
		err = o.PrintFlags.PrintObject(d, o.Out)
	case target != nil:
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

// notStuck explains a target that the scan did not find stuck.
func (o *Options) notStuck(cmd *cobra.Command) error {
	mc, err := o.factory.MetadataClient()
	if err != nil {
		return err
	}
	r := mc.Resource(o.target.Resource)
	var meta *metav1.PartialObjectMetadata
	if o.target.Namespace != "" {
		meta, err = r.Namespace(o.target.Namespace).Get(cmd.Context(), o.target.Name, metav1.GetOptions{})
	} else {
		meta, err = r.Get(cmd.Context(), o.target.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", o.describe(), err)
	}
	msg := "is not being deleted"
	switch {
	case meta.DeletionTimestamp != nil && len(meta.Finalizers) == 0:
		msg = "is being deleted and has no finalizers left: it goes shortly"
	case meta.DeletionTimestamp != nil:
		msg = "is being deleted, but was filtered out"
	}
	_, err = fmt.Fprintf(o.Out, "%s %s.\n", o.describe(), msg)
	return err
}

func (o *Options) describe() string {
	ref := finalizev1alpha1.ObjectReference{APIVersion: o.target.Resource.GroupVersion().String(), Resource: o.target.Resource.Resource, Namespace: o.target.Namespace, Name: o.target.Name}
	return printer.ObjectName(ref)
}
