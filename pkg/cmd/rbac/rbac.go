// Package rbac is the `kubectl finalize rbac` command.
package rbac

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/reconcile"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

const long = `Print the least-privilege RBAC that a reconcile pass of a policy needs, as YAML to
apply: a ClusterRole, a Role in each namespace the rules restrict a type to, and with
--service-account their bindings.

The roles may get and list the types the pass scans, patch only the types its rules act
on, update namespaces/finalize only when a rule may remove a namespace's own finalizer,
create events (the audit), selfsubjectreviews and selfsubjectaccessreviews (who it is,
and what it may do, before it writes). A type whose every rule names its namespaces
literally is granted in a Role in each of those namespaces, and nowhere else (secrets
included); a type a rule without namespaces (or with a glob) matches, or a cluster-scoped
type, is granted in the ClusterRole, with a warning naming the rule. With
--leader-elect-namespace it adds a Role for the Lease. It never grants delete, and it
reads secrets only when a rule names them, or names no resources at all (then it warns).
Each role's annotation kubectl-finalize.github.io/grants says what each of its rules is
for.

The types are resolved the way a pass resolves them, against the cluster's discovery: a
rule resource written as a singular, a Kind or a short name is granted as its plural
(one that could be two types is refused, exit 2), rule resources that are globs become
the types the cluster serves now (a type installed later that a glob matches needs the
command run again), and the resource of a kubernetes provider, written as a plural, a
singular, a Kind or a short name, becomes the type it names (one the cluster does not
serve is refused). A preset that reads the namespace's annotations gets get on
namespaces.

With -o helm-values it prints the same grants as values of the chart
(docs/deploy/helm/kubectl-finalize): rbac.clusterRules and rbac.clusterGrants, and
rbac.roles, a Role in each namespace. The chart names them after its release, binds them
to its own ServiceAccount, and adds the Lease's Role itself, so --service-account,
--name and --leader-elect-namespace do not apply.`

const example = `  # The RBAC of a CronJob running as kubectl-finalize/kubectl-finalize
  kubectl finalize rbac --policy policy.yaml --service-account kubectl-finalize/kubectl-finalize | kubectl apply -f -

  # With the Lease of a Deployment with --leader-elect
  kubectl finalize rbac --policy policy.yaml --service-account ops/kubectl-finalize --leader-elect-namespace ops

  # The same grants as values of the Helm chart
  kubectl finalize rbac --policy policy.yaml -o helm-values > rbac-values.yaml
  helm install kubectl-finalize oci://ghcr.io/kubectl-finalize/charts/kubectl-finalize \
    --namespace kubectl-finalize --set-file policy.content=policy.yaml -f rbac-values.yaml`

// Options are the options of the rbac command.
type Options struct {
	PolicyFile           string
	ServiceAccount       string
	Name                 string
	LeaderElectNamespace string
	// Output is yaml (the roles and bindings to apply) or helm-values.
	Output string

	policy  *policy.Policy
	saNS    string
	saName  string
	factory util.Factory

	genericiooptions.IOStreams
}

// NewOptions returns the options with their defaults.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{Name: defaultName, Output: outputYAML, IOStreams: streams}
}

const (
	defaultName      = "kubectl-finalize"
	outputYAML       = "yaml"
	outputHelmValues = "helm-values"
)

// NewCmdRBAC returns the rbac command.
func NewCmdRBAC(f util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return util.NewCommand(f, NewOptions(streams), &cobra.Command{
		Use:     "rbac --policy FILE [--service-account NAMESPACE/NAME] [flags]",
		Short:   "Print the least-privilege RBAC a reconcile pass of a policy needs",
		Long:    long,
		Example: example,
		Args:    util.NoArgs,
	})
}

// AddFlags binds the flags to cmd.
func (o *Options) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&o.PolicyFile, "policy", o.PolicyFile, "The policy the passes follow (required).")
	fs.StringVar(&o.ServiceAccount, "service-account", o.ServiceAccount, "The ServiceAccount the passes run as, NAMESPACE/NAME: adds the bindings.")
	fs.StringVar(&o.Name, "name", o.Name, "The name of the ClusterRole and its bindings.")
	fs.StringVar(&o.LeaderElectNamespace, "leader-elect-namespace", o.LeaderElectNamespace, "If set, add a Role (and binding) for the leader election Lease in this namespace.")
	fs.StringVarP(&o.Output, "output", "o", o.Output, "Output format. One of: (yaml, helm-values). helm-values prints the grants as values of the Helm chart.")
	_ = cmd.MarkFlagFilename("policy", "yaml", "yml", "json")
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

// Validate checks the name and the output format, and that nothing the chart decides
// itself is asked of helm-values.
func (o *Options) Validate() error {
	if o.Name == "" {
		return util.UsageErrorf(nil, "--name must not be empty")
	}
	switch o.Output {
	case outputYAML:
	case outputHelmValues:
		for flag, set := range map[string]bool{"--service-account": o.ServiceAccount != "", "--leader-elect-namespace": o.LeaderElectNamespace != "", "--name": o.Name != defaultName} {
			if set {
				return util.UsageErrorf(nil, "%s does not apply to -o helm-values: the chart names the roles after its release, binds them to its own ServiceAccount and adds the Lease's Role itself", flag)
			}
		}
	default:
		return util.UsageErrorf(nil, "unable to match a printer suitable for the output format %q, allowed formats are: %s,%s", o.Output, outputYAML, outputHelmValues)
	}
	return nil
}

// Run prints the RBAC.
func (o *Options) Run(context.Context) error {
	objs, warnings, err := reconcile.RBAC(o.policy, reconcile.RBACOptions{
		Name: o.Name, ServiceAccountNamespace: o.saNS, ServiceAccountName: o.saName,
		LeaderElectNamespace: o.LeaderElectNamespace, Discover: o.discover, Mapper: o.mapper,
	})
	var unresolved *reconcile.UnresolvedError
	if errors.As(err, &unresolved) {
		return util.UsageError(fmt.Errorf("%s: %w", o.PolicyFile, err))
	}
	if err != nil {
		return err
	}
	util.PrintWarnings(o.ErrOut, warnings)
	if o.Output == outputHelmValues {
		return o.printValues(objs)
	}
	fmt.Fprintf(o.Out, "# What kubectl finalize reconcile --policy %s needs: generated by kubectl finalize rbac.\n", filepath.Base(o.PolicyFile))
	p := &printers.YAMLPrinter{}
	for _, obj := range objs {
		if err := p.PrintObj(obj, o.Out); err != nil {
			return err
		}
	}
	return nil
}

// chartValues are the chart's rbac values: the grants of the roles, without names,
// labels or bindings, which the chart makes for its release.
type chartValues struct {
	RBAC chartRBAC `json:"rbac"`
}

type chartRBAC struct {
	ClusterRules  []rbacv1.PolicyRule `json:"clusterRules"`
	ClusterGrants string              `json:"clusterGrants,omitempty"`
	Roles         []chartRole         `json:"roles"`
}

// chartRole is a Role the chart names after its release, with NameSuffix.
type chartRole struct {
	NameSuffix string              `json:"nameSuffix,omitempty"`
	Namespace  string              `json:"namespace"`
	Rules      []rbacv1.PolicyRule `json:"rules"`
	Grants     string              `json:"grants,omitempty"`
}

// printValues prints the roles of objs as the chart's values.
func (o *Options) printValues(objs []runtime.Object) error {
	v := chartValues{RBAC: chartRBAC{Roles: []chartRole{}}}
	for _, obj := range objs {
		switch r := obj.(type) {
		case *rbacv1.ClusterRole:
			v.RBAC.ClusterRules, v.RBAC.ClusterGrants = r.Rules, r.Annotations[reconcile.GrantsAnnotation]
		case *rbacv1.Role:
			suffix, ok := strings.CutPrefix(r.Name, o.Name)
			if !ok {
				return fmt.Errorf("the Role %s/%s is not named after %s", r.Namespace, r.Name, o.Name)
			}
			v.RBAC.Roles = append(v.RBAC.Roles, chartRole{NameSuffix: suffix, Namespace: r.Namespace, Rules: r.Rules, Grants: r.Annotations[reconcile.GrantsAnnotation]})
		}
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "# Values of the kubectl-finalize chart: the RBAC that kubectl finalize reconcile --policy %s needs.\n"+
		"# Generated by kubectl finalize rbac -o helm-values, against the cluster the chart is installed in.\n", filepath.Base(o.PolicyFile))
	_, err = o.Out.Write(out)
	return err
}

// discover lists the types the cluster serves, the way a pass's scan does: the globs of
// the rules' resources are resolved against it.
func (o *Options) discover() ([]scan.Type, []finalizev1alpha1.IncompleteResource, error) {
	c, err := o.factory.Clients()
	if err != nil {
		return nil, nil, err
	}
	return scan.DiscoverTypes(c.Discovery)
}

// mapper is the cluster's RESTMapper, which the kubernetes providers resolve their
// resource with. The cluster is reached first, so that an unreachable one is not
// reported as a type it does not serve.
func (o *Options) mapper() (meta.RESTMapper, error) {
	c, err := o.factory.Clients()
	if err != nil {
		return nil, err
	}
	if _, err := c.Discovery.ServerGroups(); err != nil {
		return nil, err
	}
	return o.factory.RESTMapper()
}
