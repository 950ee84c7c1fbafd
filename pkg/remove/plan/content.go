package plan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// contentConcurrency bounds the lists of one namespace's content in flight.
const contentConcurrency = 8

// ContentReader reads what a namespace holds afresh, for a namespace a scan did not
// index: every namespaced type is listed in it, one object at most.
type ContentReader struct {
	Discovery discovery.DiscoveryInterface
	Metadata  metadata.Interface
}

// Holds says why the namespace may still hold objects: the objects found (one per type
// at most), or what could not be discovered or listed. It returns "" only when every
// namespaced type was listed in the namespace and none had an object.
func (c *ContentReader) Holds(ctx context.Context, namespace string) string {
	types, failed, err := scan.Discover(c.Discovery)
	if err != nil {
		return fmt.Sprintf("what namespace %s holds could not be read: %v", namespace, err)
	}
	var (
		mu     sync.Mutex
		found  []string
		unread []string
		g      errgroup.Group
	)
	g.SetLimit(contentConcurrency)
	for _, in := range failed {
		unread = append(unread, fmt.Sprintf("%s (discovery failed: %s)", in.GroupVersion, in.Message))
	}
	for _, r := range types {
		if !r.Namespaced {
			continue
		}
		g.Go(func() error {
			name, err := c.first(ctx, r, namespace)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				unread = append(unread, fmt.Sprintf("%s (%v)", r, err))
			case name != "":
				found = append(found, fmt.Sprintf("%s/%s", r, name))
			}
			return nil // a type that cannot be listed is unread, and the others are listed still
		})
	}
	_ = g.Wait()
	slices.Sort(found)
	slices.Sort(unread)
	switch {
	case len(found) > 0:
		return fmt.Sprintf("the namespace still holds objects, read afresh because the scan did not index it (%s)", strings.Join(found, ", "))
	case len(unread) > 0:
		return fmt.Sprintf("the namespace may still hold objects: the scan did not index it, and reading it afresh could not list %s", strings.Join(unread, ", "))
	}
	return ""
}

// maxEmptyPages bounds how many empty pages with a continue token are read on.
const maxEmptyPages = 20

// first names one object of type r in the namespace, or is "" when the type has none.
// An empty page that carries a continue token proves nothing (the API server may
// answer one when a page's objects were filtered out): the list is read on, and a type
// that keeps answering so is unread, never empty.
func (c *ContentReader) first(ctx context.Context, r kube.Resource, namespace string) (string, error) {
	opts := metav1.ListOptions{Limit: 1}
	for range maxEmptyPages {
		list, err := c.Metadata.Resource(r.GroupVersionResource).Namespace(namespace).List(ctx, opts)
		switch {
		case err != nil:
			return "", err
		case len(list.Items) > 0:
			return list.Items[0].Name, nil
		case list.Continue == "":
			return "", nil
		}
		opts.Continue = list.Continue
	}
	return "", fmt.Errorf("%d empty pages, each with a continue token", maxEmptyPages)
}
