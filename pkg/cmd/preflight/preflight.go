// Package preflight is the `kubectl finalize preflight` command.
package preflight

import (
	"context"
	"fmt"
	"io"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/preflight"
)

var long = `Predict, before a deletion, what it would leave stuck in Terminating, why, and a safe
order. Nothing is deleted or changed.

The deletion is the objects named (a namespace, a CRD, an operator's Deployment,
StatefulSet or DaemonSet, an APIService, a webhook configuration, or any other object),
or with --helm-release those Helm's uninstall deletes, read from the release's record in
the cluster; and what their deletion deletes: a namespace's content, a CRD's instances,
and the dependents the garbage collector deletes once all their owners are gone.

` + hazards() + `

The hazards are printed grouped by what causes them, each with the objects it would
strand and a safe order. When the deletion is safe, stdout stays empty and one line on
stderr says so.

Exit status: 0 nothing would be left stuck; 5 something would (a hazard is found, even
when the prediction is incomplete too); 3 nothing was found, but a type could not be
listed, so the prediction is incomplete; 2 invalid invocation; 1 runtime error (a named
object does not exist, the release cannot be read).`

const example = `  # What would deleting this namespace leave stuck?
  kubectl finalize preflight namespace/team-a

  # Uninstalling an operator: its Deployment, or its whole Helm release
  kubectl finalize preflight deployment/db-operator -n operators
  kubectl finalize preflight --helm-release db-operator -n operators

  # A CRD, as JSON for a CI gate (exit status 5 when something would be stranded)
  kubectl finalize preflight crd/databases.db.example.com -o json`

// hazards lists the reasons of preflight's hazards, those that block everyone first.
func hazards() string {
	var terms []util.Term
	for _, r := range preflight.Reasons() {
		terms = append(terms, util.Term{Name: r.Name, Meaning: r.Help})
	}
	return util.TermList("Hazards, those that block everyone first (the reason names are stable, for scripts):", terms)
}

const flagHelmRelease = "helm-release"

// Options are the options of the preflight command.
type Options struct {
	PrintFlags  *util.PrintFlags
	ListFlags   util.ListFlags
	HelmRelease string

	clients   *client.Clients
	mapper    meta.RESTMapper
	namespace string
	targets   []preflight.Target

	genericiooptions.IOStreams
}

// NewOptions returns the options with their defaults.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{PrintFlags: util.NewTablePrintFlags(), ListFlags: util.NewListFlags(), IOStreams: streams}
}

// NewCmdPreflight returns the preflight command.
func NewCmdPreflight(f util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return util.NewCommand(f, NewOptions(streams), &cobra.Command{
		Use:               "preflight (TYPE/NAME... | TYPE NAME... | --helm-release NAME) [flags]",
		Short:             "Predict what a deletion would leave stuck, and a safe order, before deleting",
		Long:              long,
		Example:           example,
		ValidArgsFunction: util.ResourceTypeCompletion(f),
	})
}

// AddFlags binds the flags to cmd.
func (o *Options) AddFlags(cmd *cobra.Command) {
	o.PrintFlags.AddFlags(cmd)
	cmd.Flags().StringVar(&o.HelmRelease, flagHelmRelease, o.HelmRelease,
		"Check the uninstall of this Helm release of the namespace (-n): the objects of its latest revision's manifest, read from its record in the cluster (a Secret of type helm.sh/release.v1, or a ConfigMap with HELM_DRIVER=configmap), except those the manifest annotates helm.sh/resource-policy.")
	o.ListFlags.AddFlags(cmd)
}

// Complete resolves the clients, the namespace and the objects named.
func (o *Options) Complete(f util.Factory, _ *cobra.Command, args []string) error {
	var err error
	if o.namespace, _, err = f.Namespace(); err != nil {
		return err
	}
	if len(args) == 0 && o.HelmRelease == "" {
		return util.UsageErrorf(nil, "name the objects to delete (TYPE/NAME... or TYPE NAME...) or a release (--%s NAME -n NAMESPACE)", flagHelmRelease)
	}
	var objs []util.ObjectArg
	if len(args) > 0 {
		if objs, err = util.ParseObjectArgs(args); err != nil {
			return err
		}
	}
	if o.clients, err = f.Clients(); err != nil {
		return err
	}
	if o.mapper, err = f.RESTMapper(); err != nil {
		return err
	}
	resolved, err := util.ResolveObjects(o.mapper, o.namespace, objs)
	if err != nil {
		return err
	}
	for _, r := range resolved {
		o.targets = append(o.targets, preflight.Target{Ref: kube.Ref{Resource: r.Resource, Namespace: r.Namespace, Name: r.Name}})
	}
	return nil
}

// Validate rejects output formats preflight has no use for.
func (o *Options) Validate() error {
	if o.PrintFlags.Wide() {
		return util.UsageErrorf(nil, "--output wide is not supported by preflight: use the default, name, json, yaml, jsonpath or go-template")
	}
	return util.FirstError(o.PrintFlags.Validate(), o.ListFlags.Validate())
}

// Run predicts and prints.
func (o *Options) Run(ctx context.Context) error {
	opts, done := o.ListFlags.ScanOptions(o.ErrOut)
	po := preflight.Options{Targets: o.targets, Mapper: o.mapper, Scan: opts}
	if o.HelmRelease != "" {
		po.Release = &preflight.Release{Namespace: o.namespace, Name: o.HelmRelease}
	}
	res, err := (&preflight.Preflight{Clients: o.clients}).Run(ctx, po)
	done()
	if err != nil {
		return err
	}
	util.PrintWarnings(o.ErrOut, res.Warnings)
	rep := res.Report
	switch {
	case o.PrintFlags.Name():
		err = preflight.Names(o.Out, rep)
	case !o.PrintFlags.Table():
		err = o.PrintFlags.PrintObject(rep, o.Out)
	default:
		err = preflight.Print(o.Out, rep)
	}
	if err != nil {
		return err
	}
	incompleteWarning(o.ErrOut, rep.Incomplete)
	d := preflight.Deletion(rep)
	switch {
	case len(rep.Hazards) > 0:
		if !o.PrintFlags.Table() {
			fmt.Fprintf(o.ErrOut, "%s would leave %s stuck, for %d reasons (exit status 5).\n", d, words.Count(preflight.Stranded(rep), "object"), len(rep.Hazards))
		}
		return util.StrandedError(fmt.Sprintf("%s would leave objects stuck", d))
	case len(rep.Incomplete) > 0:
		fmt.Fprintf(o.ErrOut, "No hazard found in what could be read, but %s (%s in all) may still leave objects stuck.\n", d, words.Count(rep.Deleted, "object"))
		return util.PredictionIncompleteError()
	}
	fmt.Fprintf(o.ErrOut, "Safe: %s deletes %s in all and would leave nothing stuck.\n", d, words.Count(rep.Deleted, "object"))
	return nil
}

// incompleteWarning says what could not be read.
func incompleteWarning(w io.Writer, incomplete []finalizev1alpha1.IncompleteResource) {
	if len(incomplete) == 0 {
		return
	}
	fmt.Fprintf(w, "Warning: the prediction is incomplete; hazards in these types may be missed:\n")
	for _, in := range incomplete {
		what := in.GroupVersion
		if in.Resource != "" {
			what = schema.FromAPIVersionAndKind(in.GroupVersion, "").GroupVersion().WithResource(in.Resource).GroupResource().String()
		}
		fmt.Fprintf(w, "  %s: %s: %s\n", what, in.Reason, in.Message)
	}
}
