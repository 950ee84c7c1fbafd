// Command kubectl-finalize is the kubectl plugin behind `kubectl finalize`.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
)

// gcPercent is the collector's GOGC when the environment does not set one. Most of what
// the plugin holds lives for the whole run (the scan's stuck objects, a diagnosis, a
// plan), so Go's default of 100, which lets the heap grow to twice what the last
// collection found live, spends most of the peak on garbage. At 10,000 stuck objects, 50
// takes the peak of doctor and reconcile down by 9 to 11 MB (one set of three runs
// against another; a run's anon moves by about 4 MB), for time that did not show against
// run-to-run noise (docs/performance.md, "GOGC"). GOGC in the environment, off included,
// wins.
const gcPercent = 50

// setGCPercent sets the collector's GOGC to gcPercent, unless the environment (looked up
// by lookup) sets GOGC. An empty GOGC is unset, as the runtime reads it.
func setGCPercent(lookup func(string) (string, bool)) {
	if v, set := lookup("GOGC"); !set || v == "" {
		debug.SetGCPercent(gcPercent)
	}
}

func main() {
	setGCPercent(os.LookupEnv)
	// client-go logs some errors it also returns (discovery of an unreachable server);
	// the command reports each error once, so those logs only show with -v.
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, kv ...any) {
		klog.V(1).ErrorS(err, msg, kv...)
	}}
	// Everything the process writes passes the redactor: a secret it has read (a
	// credential, a Secret's values) is shown nowhere, whatever repeats it.
	streams, flush := util.RedactStreams(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	util.LogTo(streams.ErrOut)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := cmd.NewCmdFinalize(streams)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	err := root.ExecuteContext(ctx)
	stop()
	util.PrintError(streams.ErrOut, err)
	klog.Flush()
	flush()
	os.Exit(util.ExitCode(err))
}
