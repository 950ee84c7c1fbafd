package util

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
)

// Command is a command's options in kubectl's pattern: Complete resolves arguments and
// clients, Validate rejects bad flag values and combinations, Run does the work. Only
// Complete sees cobra, so Validate and Run can be tested without it.
type Command interface {
	Complete(f Factory, cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runCommand completes, validates and runs c as cmd. An invalid invocation that Complete
// or Validate report points to the command's help.
func runCommand(cmd *cobra.Command, f Factory, args []string, c Command) error {
	if err := c.Complete(f, cmd, args); err != nil {
		return withHelp(cmd, err)
	}
	if err := c.Validate(); err != nil {
		return withHelp(cmd, err)
	}
	return c.Run(cmd.Context())
}

// withHelp names cmd in a usage error made without it.
func withHelp(cmd *cobra.Command, err error) error {
	var ec *exitCodeError
	if errors.As(err, &ec) && ec.help && ec.command == "" {
		ec.command = cmd.CommandPath()
	}
	return err
}

// Options is a command's options: a Command with its flags.
type Options interface {
	Command
	AddFlags(cmd *cobra.Command)
}

// NewCommand makes cmd complete, validate and run o, with o's flags bound to it.
func NewCommand(f Factory, o Options, cmd *cobra.Command) *cobra.Command {
	cmd.DisableFlagsInUseLine = true
	cmd.RunE = func(c *cobra.Command, args []string) error {
		return runCommand(c, f, args, o)
	}
	o.AddFlags(cmd)
	return cmd
}
