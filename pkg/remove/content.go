package remove

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"

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
		mu      sync.Mutex
		found   []string
		unread  []string
		wg      sync.WaitGroup
		workers = make(chan struct{}, contentConcurrency)
	)
	for _, in := range failed {
		unread = append(unread, fmt.Sprintf("%s (discovery failed: %s)", in.GroupVersion, in.Message))
	}
	for _, r := range types {
		if !r.Namespaced {
			continue
		}
		wg.Add(1)
		workers <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-workers }()
			list, err := c.Metadata.Resource(r.GroupVersionResource).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: 1})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				unread = append(unread, fmt.Sprintf("%s (%v)", r, err))
			case len(list.Items) > 0:
				more := ""
				if list.Continue != "" {
					more = ", ..."
				}
				found = append(found, fmt.Sprintf("%s/%s%s", r, list.Items[0].Name, more))
			}
		}()
	}
	wg.Wait()
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
