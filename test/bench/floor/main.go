// Command floor is the listing floor of the cluster benchmark: the least a program can do
// to find the stuck objects of a cluster. It discovers the preferred version of every
// listable type, fetches their metadata in pages as the scan does (same page size, same
// concurrency, same client rate limits), counts the objects that are terminating and hold
// a finalizer, and prints the count. It keeps nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"
)

// The plugin's defaults.
const (
	chunkSize   = 500
	concurrency = 8
	qps         = 100
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to the kubeconfig file")
	rate := flag.Float64("qps", qps, "client-side rate limit, as the plugin's --qps (burst twice that); negative turns it off")
	flag.Parse()
	n, err := count(context.Background(), *kubeconfig, float32(*rate))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(n)
}

func count(ctx context.Context, kubeconfig string, rate float32) (int64, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return 0, err
	}
	cfg.QPS, cfg.Burst = rate, int(2*rate)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	lists, _ := discovery.ServerPreferredResources(dc) // a group that fails adds nothing to the floor
	var stuck atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			res := md.Resource(gv.WithResource(r.Name))
			g.Go(func() error {
				// An expired continue token (the list outlived etcd's compaction) starts
				// the type over, as the scan does; any other failure fails the floor.
				for attempt := 1; ; attempt++ {
					n, err := pages(ctx, res)
					switch {
					case err == nil:
						stuck.Add(n)
						return nil
					case apierrors.IsResourceExpired(err) && attempt < 3:
						continue
					case apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
						return nil // served in discovery, not listable: adds nothing
					}
					return fmt.Errorf("listing %s: %w", gv.WithResource(r.Name), err)
				}
			})
		}
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return stuck.Load(), nil
}

// pages lists every page of res and counts the stuck objects.
func pages(ctx context.Context, res metadata.ResourceInterface) (int64, error) {
	var n int64
	opts := metav1.ListOptions{Limit: chunkSize}
	for {
		page, err := res.List(ctx, opts)
		if err != nil {
			return 0, err
		}
		for i := range page.Items {
			if page.Items[i].DeletionTimestamp != nil && len(page.Items[i].Finalizers) > 0 {
				n++
			}
		}
		if page.Continue == "" {
			return n, nil
		}
		opts.Continue = page.Continue
	}
}
