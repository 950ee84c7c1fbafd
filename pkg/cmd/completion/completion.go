// Package completion is the `kubectl finalize completion SHELL` command.
package completion

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-finalize/kubectl-finalize/completion"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
)

const long = `Print a shell completion script.

For "kubectl finalize <TAB>" (kubectl 1.26 or newer), kubectl runs an executable named
kubectl_complete-finalize from your PATH; "completion kubectl" prints it. For the
kubectl-finalize binary itself, use bash, zsh, fish or powershell.`

const example = `  # Complete "kubectl finalize ..." in every shell kubectl completes
  kubectl finalize completion kubectl > ~/.local/bin/kubectl_complete-finalize
  chmod +x ~/.local/bin/kubectl_complete-finalize

  # Complete "kubectl-finalize ..." in bash
  source <(kubectl-finalize completion bash)`

var shells = []string{"bash", "zsh", "fish", "powershell", "kubectl"}

// Options are the options of the completion command.
type Options struct {
	shell string
	root  *cobra.Command
	genericiooptions.IOStreams
}

// NewCmdCompletion returns the completion command.
func NewCmdCompletion(f util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return util.NewCommand(f, &Options{IOStreams: streams}, &cobra.Command{
		Use:       "completion SHELL",
		Short:     "Print a shell completion script (bash, zsh, fish, powershell, kubectl)",
		Long:      long,
		Example:   example,
		ValidArgs: shells,
	})
}

// AddFlags binds no flags.
func (o *Options) AddFlags(*cobra.Command) {}

// Complete takes the shell and the command tree to complete.
func (o *Options) Complete(_ util.Factory, cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return util.UsageErrorf(nil, "exactly one shell is required: one of %v", shells)
	}
	o.shell, o.root = args[0], cmd.Root()
	return nil
}

// Validate rejects an unknown shell.
func (o *Options) Validate() error {
	if !slices.Contains(shells, o.shell) {
		return util.UsageErrorf(nil, "unsupported shell %q: must be one of %v", o.shell, shells)
	}
	return nil
}

// Run prints the script.
func (o *Options) Run(context.Context) error {
	switch o.shell {
	case "bash":
		return o.root.GenBashCompletionV2(o.Out, true)
	case "zsh":
		return o.root.GenZshCompletion(o.Out)
	case "fish":
		return o.root.GenFishCompletion(o.Out, true)
	case "powershell":
		return o.root.GenPowerShellCompletionWithDesc(o.Out)
	}
	_, err := fmt.Fprint(o.Out, completion.KubectlPluginScript)
	return err
}
