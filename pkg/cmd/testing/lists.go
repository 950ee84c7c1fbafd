package testing

import (
	"context"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// ListRecorder is a metadata client that remembers the options of every list.
type ListRecorder struct {
	metadata.Interface
	mu    sync.Mutex
	lists []metav1.ListOptions
}

// Lists are the options of every list sent so far.
func (r *ListRecorder) Lists() []metav1.ListOptions {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lists)
}

// Limits are the page sizes of every list sent so far.
func (r *ListRecorder) Limits() []int64 {
	var out []int64
	for _, l := range r.Lists() {
		out = append(out, l.Limit)
	}
	return out
}

// Resource implements metadata.Interface.
func (r *ListRecorder) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	g := r.Interface.Resource(gvr)
	return &recordingResource{recording: recording{ResourceInterface: g, r: r}, getter: g}
}

// recording records the lists of one resource, in one namespace or all.
type recording struct {
	metadata.ResourceInterface
	r *ListRecorder
}

func (c *recording) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	c.r.mu.Lock()
	c.r.lists = append(c.r.lists, opts)
	c.r.mu.Unlock()
	return c.ResourceInterface.List(ctx, opts)
}

// recordingResource records the lists of one resource, across namespaces and in each.
type recordingResource struct {
	recording
	getter metadata.Getter
}

func (c *recordingResource) Namespace(ns string) metadata.ResourceInterface {
	return &recording{ResourceInterface: c.getter.Namespace(ns), r: c.r}
}
