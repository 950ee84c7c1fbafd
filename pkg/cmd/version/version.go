// Package version is the `kubectl finalize version` command.
package version

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/version"
)

// Options are the options of the version command.
type Options struct {
	Output string
	genericiooptions.IOStreams
}

// NewCmdVersion returns the version command.
func NewCmdVersion(f util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return util.NewCommand(f, &Options{IOStreams: streams}, &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl-finalize",
		Args:  util.NoArgs,
	})
}

// AddFlags binds the flags to cmd.
func (o *Options) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.Output, "output", "o", o.Output, "One of 'yaml' or 'json'.")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
}

// Complete has nothing to resolve: the version needs no cluster.
func (o *Options) Complete(util.Factory, *cobra.Command, []string) error { return nil }

// Validate rejects an unknown output format.
func (o *Options) Validate() error {
	switch o.Output {
	case "", "json", "yaml":
		return nil
	}
	return util.UsageErrorf(nil, "--output must be 'yaml' or 'json'")
}

// Run prints the version.
func (o *Options) Run(context.Context) error {
	info := version.Get()
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(info, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.Out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(info)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(b)
		return err
	}
	_, err := fmt.Fprintf(o.Out, "kubectl-finalize %s\n", info.Version)
	return err
}
