package scan

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
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
		ix := newIndexer(map[string]bool{"team-a": true}, nil)
		for i := range 80 {
			ix.observe(widgets, &metav1.ObjectMeta{Namespace: "team-a", Name: fmt.Sprintf("w-%d-%d", part, i), Finalizers: []string{"example.com/cleanup"},
				Annotations: map[string]string{"big": "x"}, ManagedFields: []metav1.ManagedFieldsEntry{
					{Manager: "kubectl", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)},
					{Manager: "widget-operator", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{"v:\"example.com/cleanup\"":{}}}}`)},
					{Manager: "widget-operator", Subresource: "status", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)}}}, nil)
		}
		ix.observe(widgets, &metav1.ObjectMeta{Namespace: "team-a", Name: fmt.Sprintf("plain-%d", part)}, nil)
		// Kubernetes' own finalizers go with what they guard: not kept.
		ix.observe(widgets, &metav1.ObjectMeta{Namespace: "team-a", Name: fmt.Sprintf("claim-%d", part), Finalizers: []string{"kubernetes.io/pvc-protection"}}, nil)
		ix.observe(widgets, &metav1.ObjectMeta{Namespace: "team-a", Name: fmt.Sprintf("deleting-%d", part), Finalizers: []string{"example.com/cleanup"}, DeletionTimestamp: &now}, nil)
		ix.observe(widgets, &metav1.ObjectMeta{Namespace: "team-b", Name: fmt.Sprintf("elsewhere-%d", part), Finalizers: []string{"example.com/cleanup"}}, nil)
		idx.merge(widgets, 84, ix)
	}
	c := idx.Content["team-a"]
	if c == nil || c.Count != 166 || c.Deleting != 2 || c.PendingCount != 160 || len(c.Pending) != maxPending {
		t.Fatalf("content %+v: want 166 objects, 2 deleting, 160 pending of which %d kept", c, maxPending)
	}
	// Kept slim: what names it, and who wrote its finalizers and status.
	if p := c.Pending[0]; p.Meta.Name != "w-0-0" || len(p.Finalizers) != 1 || p.Finalizers[0].Name != "example.com/cleanup" ||
		len(p.Meta.ManagedFields) != 2 || p.Meta.Annotations != nil {
		t.Errorf("first pending %+v", p.Meta)
	}
	if idx.Content["team-b"] != nil {
		t.Errorf("a namespace not being deleted has content: %+v", idx.Content["team-b"])
	}
}

// Of a pending object, every entry of a manager that wrote its finalizers is kept: one
// that applied its spec too is no controller (owner.Reconciles), whatever entry says so.
func TestAPendingObjectKeepsEveryEntryOfItsFinalizersWriters(t *testing.T) {
	meta := &metav1.ObjectMeta{Name: "w", Finalizers: []string{"example.com/cleanup"}, ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "argocd", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{"v:\"example.com/cleanup\"":{}}}}`)},
		{Manager: "argocd", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)},
		{Manager: "kubectl", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)}}}
	slim := slimForPending(meta)
	if len(slim.ManagedFields) != 2 || owner.Reconciles(slim.ManagedFields, "argocd") != owner.Reconciles(meta.ManagedFields, "argocd") {
		t.Errorf("kept %+v: Reconciles %v, of all the entries %v", slim.ManagedFields, owner.Reconciles(slim.ManagedFields, "argocd"), owner.Reconciles(meta.ManagedFields, "argocd"))
	}
}
