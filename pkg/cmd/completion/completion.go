// Package completion is the `kubectl finalize completion SHELL` command.
package completion

import (
	"fmt"
	"io"

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

// NewCmdCompletion returns the completion command.
func NewCmdCompletion(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:       "completion SHELL",
		Short:     "Print a shell completion script (bash, zsh, fish, powershell, kubectl)",
		Long:      long,
		Example:   example,
		ValidArgs: shells,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return util.UsageErrorf(cmd, "exactly one shell is required: one of %v", shells)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, args[0], streams.Out)
		},
	}
}

func run(cmd *cobra.Command, shell string, out io.Writer) error {
	root := cmd.Root()
	switch shell {
	case "bash":
		return root.GenBashCompletionV2(out, true)
	case "zsh":
		return root.GenZshCompletion(out)
	case "fish":
		return root.GenFishCompletion(out, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(out)
	case "kubectl":
		_, err := fmt.Fprint(out, completion.KubectlPluginScript)
		return err
	}
	return util.UsageErrorf(cmd, "unsupported shell %q: must be one of %v", shell, shells)
}
