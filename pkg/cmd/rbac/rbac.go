// Package rbac is the `kubectl finalize rbac` command.
package rbac

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/discovery"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/reconcile"
)

const long = `Print the least-privilege RBAC that a reconcile pass of a policy needs, as YAML to
apply: a ClusterRole, and with --service-account its ClusterRoleBinding.

The role may get and list the types the pass scans, patch only the types its rules act
on, update namespaces/finalize only when a rule may remove a namespace's own finalizer,
create events (the audit), selfsubjectreviews and selfsubjectaccessreviews (who it is,
and what it may do, before it writes). With --leader-elect-namespace it adds a Role for
the Lease. It never grants delete, and it reads secrets only when a rule names them, or
names no resources at all (then it warns).

Rule resources that are globs are resolved against the cluster's discovery.`

const example = `  # The RBAC of a CronJob running as kubectl-finalize/kubectl-finalize
  kubectl finalize rbac --policy policy.yaml --service-account kubectl-finalize/kubectl-finalize | kubectl apply -f -

  # With the Lease of a Deployment with --leader-elect
  kubectl finalize rbac --policy policy.yaml --service-account ops/kubectl-finalize --leader-elect-namespace ops`

// Options are the options of the rbac command.
type Options struct {
	PolicyFile           string
	ServiceAccount       string
	Name                 string
	LeaderElectNamespace string

	policy  *policy.Policy
	saNS    string
	saName  string
	factory util.Factory

	genericiooptions.IOStreams
}

// NewCmdRBAC returns the rbac command.
func NewCmdRBAC(f util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{Name: "kubectl-finalize", IOStreams: streams}
	cmd := &cobra.Command{
		Use:                   "rbac --policy FILE [--service-account NAMESPACE/NAME] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Print the least-privilege RBAC a reconcile pass of a policy needs",
		Long:                  long,
		Example:               example,
		Args:                  util.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return util.RunCommand(cmd, f, args, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.PolicyFile, "policy", o.PolicyFile, "The policy the passes follow (required).")
	fs.StringVar(&o.ServiceAccount, "service-account", o.ServiceAccount, "The ServiceAccount the passes run as, NAMESPACE/NAME: adds the bindings.")
	fs.StringVar(&o.Name, "name", o.Name, "The name of the ClusterRole and its bindings.")
	fs.StringVar(&o.LeaderElectNamespace, "leader-elect-namespace", o.LeaderElectNamespace, "If set, add a Role (and binding) for the leader election Lease in this namespace.")
	_ = cmd.MarkFlagFilename("policy", "yaml", "yml", "json")
	return cmd
}

// Complete loads the policy.
func (o *Options) Complete(f util.Factory, _ *cobra.Command, _ []string) error {
	o.factory = f
	if o.PolicyFile == "" {
		return util.UsageErrorf(nil, "--policy is required")
	}
	var err error
	if o.policy, err = policy.Load(o.PolicyFile); err != nil {
		return util.UsageError(err)
	}
	if o.ServiceAccount != "" {
		var ok bool
		if o.saNS, o.saName, ok = strings.Cut(o.ServiceAccount, "/"); !ok || o.saNS == "" || o.saName == "" {
			return util.UsageErrorf(nil, "--service-account must be NAMESPACE/NAME, got %q", o.ServiceAccount)
		}
	}
	return nil
}

// Validate has nothing left to check.
func (o *Options) Validate() error {
	if o.Name == "" {
		return util.UsageErrorf(nil, "--name must not be empty")
	}
	return nil
}

// Run prints the RBAC.
func (o *Options) Run(context.Context) error {
	objs, warnings, err := reconcile.RBAC(o.policy, reconcile.RBACOptions{
		Name: o.Name, ServiceAccountNamespace: o.saNS, ServiceAccountName: o.saName,
		LeaderElectNamespace: o.LeaderElectNamespace, Resolve: o.resolve,
	})
	if err != nil {
		return err
	}
	util.PrintWarnings(o.ErrOut, warnings)
	fmt.Fprintf(o.Out, "# The RBAC of kubectl finalize reconcile --policy %s\n", o.PolicyFile)
	p := &printers.YAMLPrinter{}
	for _, obj := range objs {
		if err := p.PrintObj(obj, o.Out); err != nil {
			return err
		}
	}
	return nil
}

// resolve expands a glob of resource.group names with the cluster's discovery.
func (o *Options) resolve(pattern string) ([]schema.GroupResource, error) {
	g, err := glob.Compile(pattern)
	if err != nil {
		return nil, err
	}
	c, err := o.factory.Clients()
	if err != nil {
		return nil, err
	}
	lists, err := discovery.ServerPreferredResources(c.Discovery)
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("resolving %q against the cluster: %w", pattern, err)
	}
	var out []schema.GroupResource
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			gr := gv.WithResource(r.Name).GroupResource()
			if !strings.Contains(r.Name, "/") && g.Match(gr.String()) {
				out = append(out, gr)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("resources %q matches no type the cluster serves", pattern)
	}
	return out, nil
}
