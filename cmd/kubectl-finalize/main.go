// Command kubectl-finalize is the kubectl plugin behind `kubectl finalize`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	err := cmd.NewCmdFinalize(streams).ExecuteContext(ctx)
	stop()
	util.PrintError(streams.ErrOut, err)
	os.Exit(util.ExitCode(err))
}
