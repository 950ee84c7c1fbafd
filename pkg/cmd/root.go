// Package cmd builds the kubectl-finalize command tree. It is the cobra layer only: each
// command lives in its own package as Options with Complete, Validate and Run, and calls
// domain packages that never see cobra.
package cmd

import (
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/completion"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/doctor"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/preflight"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/rbac"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/reconcile"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/remove"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/scan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/version"
	pkgversion "github.com/kubectl-finalize/kubectl-finalize/pkg/version"
)

const long = `Find objects stuck in Terminating, explain why, and remove only the finalizers
whose purpose is verifiably done.

A finalizer protects something outside the object: a cloud database, a load balancer,
a volume. Removing it blindly can leave that behind. kubectl finalize finds every object
that is being deleted and still carries finalizers, names who is expected to remove each
one, diagnoses why it has not, and removes a finalizer only with a guarded, audited patch.

Exit status:
  0  done
  1  runtime error (the API server is unreachable, a removal failed)
  2  invalid invocation, flags or policy
  3  finished, but some resource types could not be discovered or listed
  4  reconcile refused to act: the planned removals exceed --max-removals
  5  preflight found that the deletion would leave objects stuck`

// NewCmdFinalize returns the root command.
func NewCmdFinalize(streams genericiooptions.IOStreams) *cobra.Command {
	f := util.NewFactory()
	// --version prints what "version" prints, as cobra's --version did: before anything
	// else, whatever arguments and other flags come with it; -v stays klog's verbosity.
	// The command prints it, not cobra: cobra's --version in a format of its own is a
	// text/template, and the standard text/template costs the executable the linker's
	// dead code elimination (template_printer.go in pkg/cmd/util).
	var printVersion bool
	cmd := &cobra.Command{
		Use:           "kubectl-finalize",
		Short:         "Find objects stuck in Terminating and remove verified finalizers",
		Long:          long,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if printVersion {
				return nil
			}
			return util.NoArgs(cmd, args)
		},
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl finalize"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if printVersion {
				_, err := fmt.Fprintf(streams.Out, "kubectl-finalize %s\n", pkgversion.Get().Version)
				return err
			}
			return cmd.Help()
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return util.UsageErrorf(c, "%v", err)
	})
	cmd.Flags().BoolVar(&printVersion, "version", false, "Print the version of kubectl-finalize and exit.")
	f.AddFlags(cmd.PersistentFlags())
	addKlogFlags(cmd.PersistentFlags())
	// kubectl's --profile and --profile-output; as kubectl's, the profile is written when
	// the command succeeds.
	prof := &profiling{}
	prof.addFlags(cmd.PersistentFlags())
	cmd.PersistentPreRunE = func(*cobra.Command, []string) error {
		if printVersion {
			return nil
		}
		if err := prof.start(); err != nil {
			return util.UsageError(err)
		}
		return nil
	}
	cmd.PersistentPostRunE = func(*cobra.Command, []string) error {
		if printVersion {
			return nil
		}
		return prof.stop()
	}
	util.RegisterConfigFlagCompletion(cmd, f)

	cmd.AddCommand(
		scan.NewCmdScan(f, streams),
		doctor.NewCmdDoctor(f, streams),
		remove.NewCmdRemove(f, streams),
		reconcile.NewCmdReconcile(f, streams),
		policy.NewCmdPolicy(f, streams),
		rbac.NewCmdRBAC(f, streams),
		preflight.NewCmdPreflight(f, streams),
		version.NewCmdVersion(f, streams),
		completion.NewCmdCompletion(f, streams),
	)
	cmd.CompletionOptions.DisableDefaultCmd = true
	return cmd
}

// addKlogFlags exposes klog's -v only: the other klog flags are for daemons.
func addKlogFlags(fs *pflag.FlagSet) {
	gofs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gofs)
	gofs.VisitAll(func(gf *flag.Flag) {
		pf := pflag.PFlagFromGoFlag(gf)
		if pf.Name != "v" {
			pf.Hidden = true
		} else {
			pf.Usage = "Number for the log level verbosity: 1 discovery problems, 2 phase timings, 4 requests, 6 and up payloads."
		}
		pf.Name = strings.ReplaceAll(pf.Name, "_", "-")
		fs.AddFlag(pf)
	})
}
