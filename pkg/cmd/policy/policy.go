// Package policy is the `kubectl finalize policy` command group.
package policy

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
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
	cmd.AddCommand(NewCmdCheck(f, streams))
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
			fmt.Fprintf(o.Out, "%s: valid (%s)\n", file, plural(len(p.Rules), "rule"))
		}
	}
	return util.UsageError(utilerrors.NewAggregate(invalid))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
