package util

import (
	"github.com/spf13/cobra"
)

// NoArgs rejects positional arguments as an invalid invocation (exit code 2).
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		return UsageErrorf(cmd, "unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return UsageErrorf(cmd, "unexpected argument %q", args[0])
}
