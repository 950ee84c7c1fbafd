// Package policy is the `kubectl finalize policy` command group.
package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	"github.com/spf13/cobra"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/preset"
)

// NewCmdPolicy returns the policy command group.
func NewCmdPolicy(f util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy SUBCOMMAND",
		Short: "Check policies of unattended cleanup",
		Long: `Policies say which finalizers "remove --policy" and "reconcile" may remove, and which
provider verifies first that what each one guards is gone (docs/policy.md).`,
		Args: util.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(NewCmdCheck(f, streams), NewCmdPresets(f, streams))
	return cmd
}

const checkLong = `Check policy files: decode each strictly (an unknown field is an error) and validate it
as a whole, reporting every problem with its rule and field path.

Exit status: 0 every file is valid (warnings are printed on stderr); 2 a file is invalid.`

const checkExample = `  # Check a policy before a CronJob uses it
  kubectl finalize policy check policy.yaml

  # Check every policy of a folder
  kubectl finalize policy check policies/*.yaml`

// CheckOptions are the options of `policy check`.
type CheckOptions struct {
	files []string
	genericiooptions.IOStreams
}

// NewCmdCheck returns `policy check`.
func NewCmdCheck(f util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return util.NewCommand(f, &CheckOptions{IOStreams: streams}, &cobra.Command{
		Use:     "check FILE...",
		Short:   "Validate policy files and report every problem with its rule and field",
		Long:    checkLong,
		Example: checkExample,
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
		},
	})
}

// AddFlags binds no flags: check takes files only.
func (o *CheckOptions) AddFlags(*cobra.Command) {}

// Complete takes the files.
func (o *CheckOptions) Complete(_ util.Factory, _ *cobra.Command, args []string) error {
	o.files = args
	return nil
}

// Validate asks for at least one file.
func (o *CheckOptions) Validate() error {
	if len(o.files) == 0 {
		return util.UsageErrorf(nil, "name at least one policy file")
	}
	return nil
}

// Run checks each file.
func (o *CheckOptions) Run(context.Context) error {
	var invalid []error
	for _, file := range o.files {
		p, err := policy.Load(file)
		var inv *policy.InvalidError
		switch {
		case errors.As(err, &inv):
			util.PrintWarnings(o.ErrOut, inv.Warnings)
			invalid = append(invalid, err)
		case err != nil:
			invalid = append(invalid, fmt.Errorf("%s: %w", file, err))
		default:
			util.PrintWarnings(o.ErrOut, p.Warnings)
			fmt.Fprintf(o.Out, "%s: valid (%s)\n", file, words.Count(len(p.Rules), "rule"))
		}
	}
	return util.UsageError(utilerrors.NewAggregate(invalid))
}

const presetsLong = `List the built-in presets: for each, the finalizers it handles, where its operator keeps
the identity of the external resource (usable as {identity.NAME} in a rule's templates
and passed to exec providers), the settings that retain the resource (verdict Retained,
which removes only where the rule sets allowRetained: true) or hold its operator (paused,
read-only: never verified), the field managers of its operator (an identity value in an
annotation or status is trusted only when they alone wrote it; a rule names others with
operatorManagers), and what a person must know. docs/presets.md has a complete policy for
each.`

// PresetsOptions are the options of `policy presets`.
type PresetsOptions struct {
	PrintFlags *util.PrintFlags
	genericiooptions.IOStreams
}

// NewCmdPresets returns `policy presets`.
func NewCmdPresets(f util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return util.NewCommand(f, &PresetsOptions{PrintFlags: util.NewResultPrintFlags("Output format: a table (default), or one of (json, yaml).", "json", "yaml"), IOStreams: streams}, &cobra.Command{
		Use:     "presets",
		Short:   "List the built-in presets: finalizers, identity fields, retain signals, warnings",
		Long:    presetsLong,
		Example: "  # What each preset knows\n  kubectl finalize policy presets",
		Args:    util.NoArgs,
	})
}

// AddFlags binds the output flag.
func (o *PresetsOptions) AddFlags(cmd *cobra.Command) { o.PrintFlags.AddFlags(cmd) }

// Complete has nothing to resolve.
func (o *PresetsOptions) Complete(util.Factory, *cobra.Command, []string) error { return nil }

// Validate checks the output format.
func (o *PresetsOptions) Validate() error { return o.PrintFlags.Validate() }

// presetInfo is one preset as -o json|yaml prints it.
type presetInfo struct {
	Name       string            `json:"name"`
	Operator   string            `json:"operator"`
	Finalizers []string          `json:"finalizers"`
	Identity   map[string]string `json:"identity"`
	Retained   []string          `json:"retainedWhen,omitempty"`
	Held       []string          `json:"heldWhen,omitempty"`
	// OperatorManagers are the field managers an identity value must have been written
	// by to be trusted.
	OperatorManagers []string `json:"operatorManagers,omitempty"`
	Warnings         []string `json:"warnings,omitempty"`
}

// Run lists the presets.
func (o *PresetsOptions) Run(context.Context) error {
	var infos []presetInfo
	for _, p := range preset.All() {
		info := presetInfo{Name: p.Name, Operator: p.Operator, Finalizers: p.Finalizers, Identity: map[string]string{}, OperatorManagers: p.Managers, Warnings: p.Warnings}
		for _, id := range p.AllIdentity() {
			info.Identity[id.Name] = id.From
		}
		for _, s := range p.Retain {
			info.Retained = append(info.Retained, s.Description)
		}
		for _, s := range p.Hold {
			info.Held = append(info.Held, s.Description)
		}
		infos = append(infos, info)
	}
	if !o.PrintFlags.Default() {
		b, err := json.Marshal(infos)
		if err != nil {
			return err
		}
		if o.PrintFlags.JSON() {
			var out bytes.Buffer
			_ = json.Indent(&out, b, "", "    ")
			_, err = fmt.Fprintln(o.Out, out.String())
			return err
		}
		y, err := yaml.JSONToYAML(b)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(y)
		return err
	}
	for i, info := range infos {
		if i > 0 {
			fmt.Fprintln(o.Out)
		}
		fmt.Fprintf(o.Out, "%s: %s\n", info.Name, info.Operator)
		fmt.Fprintf(o.Out, "  finalizers:   %s\n", strings.Join(info.Finalizers, ", "))
		for _, id := range preset.All()[i].AllIdentity() {
			fmt.Fprintf(o.Out, "  identity:     {identity.%s} = %s\n", id.Name, id.From)
		}
		for _, r := range info.Retained {
			fmt.Fprintf(o.Out, "  retained when %s\n", r)
		}
		for _, h := range info.Held {
			fmt.Fprintf(o.Out, "  held when     %s\n", h)
		}
		fmt.Fprintf(o.Out, "  operator:     field managers %s\n", strings.Join(info.OperatorManagers, ", "))
		for _, w := range info.Warnings {
			fmt.Fprintf(o.Out, "  warning:      %s\n", w)
		}
	}
	return nil
}
