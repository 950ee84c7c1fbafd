// Package fleet reads many clusters at once: each through its kubeconfig context, a few
// at a time, each within a timeout of its own, and merges what they say into one list
// or one diagnosis where every item names its cluster. A cluster that cannot be read is
// an incomplete entry naming its context; the others are still reported.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// Defaults of a fleet run.
const (
	DefaultConcurrency = 4
	DefaultTimeout     = 5 * time.Minute
)

// Options bound a fleet run.
type Options struct {
	// Concurrency is how many clusters are read at once.
	Concurrency int
	// Timeout bounds the reading of each cluster.
	Timeout time.Duration
	// OnDone, if set, is called each time a cluster is done (one call at a time): how
	// many are, of how many.
	OnDone func(done, total int, cluster string)
}

// Result is what one cluster gave: a value, or the error that kept it from giving one.
type Result[T any] struct {
	Cluster string
	Value   T
	Err     error
	Took    time.Duration
}

// Run calls read for every cluster, opts.Concurrency at a time, each with a context
// that ends after opts.Timeout, and returns the results in the order of clusters.
func Run[T any](ctx context.Context, clusters []string, opts Options, read func(ctx context.Context, cluster string) (T, error)) []Result[T] {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	results := make([]Result[T], len(clusters))
	var (
		g    errgroup.Group
		mu   sync.Mutex
		done int
	)
	g.SetLimit(opts.Concurrency)
	for i, cluster := range clusters {
		g.Go(func() error {
			cctx, cancel := context.WithTimeout(ctx, opts.Timeout)
			defer cancel()
			start := time.Now()
			// Not every read takes a context (discovery does not): the timeout ends the
			// wait, and a read still in flight is left to its own timeouts.
			answer := make(chan Result[T], 1)
			go func() {
				v, err := read(cctx, cluster)
				answer <- Result[T]{Cluster: cluster, Value: v, Err: err}
			}()
			var r Result[T]
			select {
			case r = <-answer:
			case <-cctx.Done():
				r = Result[T]{Cluster: cluster, Err: cctx.Err()}
			}
			if r.Err != nil && cctx.Err() != nil && ctx.Err() == nil {
				r.Err = fmt.Errorf("no answer within %s (--cluster-timeout)", opts.Timeout)
			}
			r.Took = time.Since(start)
			results[i] = r
			mu.Lock()
			done++
			if opts.OnDone != nil {
				opts.OnDone(done, len(clusters), cluster)
			}
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait() // each cluster's error is in its result
	return results
}

// unreadable is the incomplete entry of a cluster that could not be read.
func unreadable(cluster string, err error) finalizev1alpha1.IncompleteResource {
	return finalizev1alpha1.IncompleteResource{Cluster: cluster, Reason: finalizev1alpha1.ReasonClusterUnreachable, Message: err.Error()}
}

// ErrNoCluster means no cluster could be read at all.
var ErrNoCluster = errors.New("no cluster could be read")

// failures are the clusters whose read failed, as incomplete entries, and an error when
// every one failed.
func failures[T any](results []Result[T]) ([]finalizev1alpha1.IncompleteResource, error) {
	var out []finalizev1alpha1.IncompleteResource
	var msgs []string
	for _, r := range results {
		if r.Err != nil {
			out = append(out, unreadable(r.Cluster, r.Err))
			msgs = append(msgs, fmt.Sprintf("context %s: %v", r.Cluster, r.Err))
		}
	}
	if len(results) > 0 && len(out) == len(results) {
		return out, fmt.Errorf("%w: %s", ErrNoCluster, strings.Join(msgs, "; "))
	}
	return out, nil
}

// MergeLists merges the stuck objects of every cluster: longest-terminating first, then
// by cluster, each item and incomplete entry naming its cluster. Clusters that could not
// be read are incomplete entries; only when none could be read is it an error.
func MergeLists(results []Result[*finalizev1alpha1.StuckObjectList]) (*finalizev1alpha1.StuckObjectList, error) {
	out := &finalizev1alpha1.StuckObjectList{TypeMeta: typeMeta("StuckObjectList"), Items: []finalizev1alpha1.StuckObject{}, Incomplete: []finalizev1alpha1.IncompleteResource{}}
	unreachable, err := failures(results)
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		for _, it := range r.Value.Items {
			it.Cluster = r.Cluster
			out.Items = append(out.Items, it)
		}
		for _, in := range r.Value.Incomplete {
			in.Cluster = r.Cluster
			out.Incomplete = append(out.Incomplete, in)
		}
	}
	out.Incomplete = append(append([]finalizev1alpha1.IncompleteResource{}, unreachable...), out.Incomplete...)
	sortItems(out.Items)
	return out, nil
}

// sortItems orders items longest-terminating first, then by cluster, keeping each
// cluster's own order otherwise.
func sortItems(items []finalizev1alpha1.StuckObject) {
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].TerminatingSeconds != items[j].TerminatingSeconds {
			return items[i].TerminatingSeconds > items[j].TerminatingSeconds
		}
		return items[i].Cluster < items[j].Cluster
	})
}

// MergeDiagnoses merges the diagnoses of every cluster: items, root causes and
// incomplete entries naming their cluster, root causes grouped by cluster, and the root
// causes found in more than one cluster said once with their clusters.
func MergeDiagnoses(results []Result[*finalizev1alpha1.Diagnosis]) (*finalizev1alpha1.Diagnosis, error) {
	out := &finalizev1alpha1.Diagnosis{TypeMeta: typeMeta("Diagnosis"), RootCauses: []finalizev1alpha1.RootCause{},
		Items: []finalizev1alpha1.StuckObject{}, Incomplete: []finalizev1alpha1.IncompleteResource{}}
	unreachable, err := failures(results)
	if err != nil {
		return nil, err
	}
	type key struct {
		reason  string
		subject finalizev1alpha1.Subject
	}
	repeated := map[key]*finalizev1alpha1.RepeatedCause{}
	var order []key
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		d := r.Value
		for _, it := range d.Items {
			it.Cluster = r.Cluster
			out.Items = append(out.Items, it)
		}
		for _, rc := range d.RootCauses {
			rc.Cluster = r.Cluster
			out.RootCauses = append(out.RootCauses, rc)
			k := key{rc.Reason, rc.Subject}
			rep, ok := repeated[k]
			if !ok {
				rep = &finalizev1alpha1.RepeatedCause{Reason: rc.Reason, Subject: rc.Subject, NextStep: rc.NextStep}
				repeated[k] = rep
				order = append(order, k)
			}
			if !slices.Contains(rep.Clusters, r.Cluster) {
				rep.Clusters = append(rep.Clusters, r.Cluster)
			}
			rep.Objects += len(rc.Objects)
		}
		for _, in := range d.Incomplete {
			in.Cluster = r.Cluster
			out.Incomplete = append(out.Incomplete, in)
		}
	}
	out.Incomplete = append(append([]finalizev1alpha1.IncompleteResource{}, unreachable...), out.Incomplete...)
	sortItems(out.Items)
	for _, k := range order {
		if rep := repeated[k]; len(rep.Clusters) > 1 {
			sort.Strings(rep.Clusters)
			out.AcrossClusters = append(out.AcrossClusters, *rep)
		}
	}
	// The widest first: the same cause in most clusters, then most objects.
	sort.SliceStable(out.AcrossClusters, func(i, j int) bool {
		a, b := out.AcrossClusters[i], out.AcrossClusters[j]
		if len(a.Clusters) != len(b.Clusters) {
			return len(a.Clusters) > len(b.Clusters)
		}
		return a.Objects > b.Objects
	})
	return out, nil
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: finalizev1alpha1.SchemeGroupVersion.String(), Kind: kind}
}
