package util

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/fleet"
)

// RunFleet reads every cluster through a factory and clients of its own, as ff bounds
// them, with a progress line on errOut that counts clusters done (on a terminal only). It
// returns what each cluster gave, and every cluster's warnings, each prefixed with its
// context.
func RunFleet[T any](ctx context.Context, f Factory, clusters []string, ff *FleetFlags, errOut io.Writer, verb string,
	read func(ctx context.Context, f Factory, clients *client.Clients) (T, []string, error)) ([]fleet.Result[T], []string) {
	progress := newProgress(errOut)
	defer progress.Done()
	opts := fleet.Options{Concurrency: ff.Concurrency, Timeout: ff.Timeout, OnDone: func(done, total int, _ string) {
		progress.Update(fmt.Sprintf("%s: %d/%d clusters done", verb, done, total), done == total)
	}}
	var mu sync.Mutex
	var warnings []string
	results := fleet.Run(ctx, clusters, opts, func(ctx context.Context, cluster string) (T, error) {
		cf := f.(Fleet).ForContext(cluster)
		clients, err := cf.Clients()
		if err != nil {
			var zero T
			return zero, err
		}
		v, w, err := read(ctx, cf, clients)
		mu.Lock()
		defer mu.Unlock()
		for _, msg := range w {
			warnings = append(warnings, fmt.Sprintf("context %s: %s", cluster, msg))
		}
		return v, err
	})
	return results, warnings
}
