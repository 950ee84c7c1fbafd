// Command kubectl-finalize is the kubectl plugin behind `kubectl finalize`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
)

func main() {
	// client-go logs some errors it also returns (discovery of an unreachable server);
	// the command reports each error once, so those logs only show with -v.
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, kv ...any) {
		klog.V(1).ErrorS(err, msg, kv...)
	}}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	err := cmd.NewCmdFinalize(streams).ExecuteContext(ctx)
	stop()
	util.PrintError(streams.ErrOut, err)
	os.Exit(util.ExitCode(err))
}
