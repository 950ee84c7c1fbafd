package scan

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// A namespace being deleted keeps, of what it still holds, the objects not deleted yet
// that carry finalizers (ordered namespace deletion: they wait behind the pods), at most
// maxPending of them, counting the rest; objects being deleted, or without finalizers,
// are not among them, and the types' indexes add up.
func TestTheObjectsWaitingBehindThePods(t *testing.T) {
	widgets := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}
	now := metav1.Now()
	idx := newIndex()
	for part := range 2 {
		ix := newIndexer(map[string]bool{"team-a": true})
		for i := range 80 {
			ix.observe(widgets, &metav1.ObjectMeta{Namespace: "team-a", Name: fmt.Sprintf("w-%d-%d", part, i), Finalizers: []string{"example.com/cleanup"}}, nil)
		}
		ix.observe(widgets, &metav1.ObjectMeta{Namespace: "team-a", Name: fmt.Sprintf("plain-%d", part)}, nil)
		ix.observe(widgets, &metav1.ObjectMeta{Namespace: "team-a", Name: fmt.Sprintf("deleting-%d", part), Finalizers: []string{"example.com/cleanup"}, DeletionTimestamp: &now}, nil)
		ix.observe(widgets, &metav1.ObjectMeta{Namespace: "team-b", Name: fmt.Sprintf("elsewhere-%d", part), Finalizers: []string{"example.com/cleanup"}}, nil)
		idx.merge(widgets, 83, ix)
	}
	c := idx.Content["team-a"]
	if c == nil || c.Count != 164 || c.Deleting != 2 || c.PendingCount != 160 || len(c.Pending) != maxPending {
		t.Fatalf("content %+v: want 164 objects, 2 deleting, 160 pending of which %d kept", c, maxPending)
	}
	if p := c.Pending[0]; p.Meta.Name != "w-0-0" || len(p.Finalizers) != 1 || p.Finalizers[0].Name != "example.com/cleanup" {
		t.Errorf("first pending %+v", p)
	}
	if idx.Content["team-b"] != nil {
		t.Errorf("a namespace not being deleted has content: %+v", idx.Content["team-b"])
	}
}
