package scan

import (
	"bytes"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
)

// Index is what the doctor needs to know about objects that are not stuck, gathered while
// they are listed anyway, so that diagnosing never lists the whole cluster a second time.
// It grows with the number of objects, never with their size.
type Index struct {
	// Dependents maps the uid of each stuck object to the objects whose ownerReferences
	// name it: what a foreground deletion waits for, what an orphaning must release.
	Dependents map[types.UID][]Dependent
	// Workloads are the Deployments, StatefulSets and DaemonSets of the cluster, by name:
	// where a controller that owns a finalizer may run.
	Workloads []Workload
	// Counts is how many objects of each type exist (the instances a CRD waits for).
	Counts map[schema.GroupResource]int64
	// NamespaceLabels holds the labels of every namespace, for webhook selectors.
	NamespaceLabels map[string]map[string]string
	// Content is what each namespace being deleted still holds.
	Content map[string]*NamespaceContent
}

func newIndex() *Index {
	return &Index{
		Dependents: map[types.UID][]Dependent{}, Counts: map[schema.GroupResource]int64{},
		NamespaceLabels: map[string]map[string]string{}, Content: map[string]*NamespaceContent{},
	}
}

// Seen is an object the index saw.
type Seen struct {
	kube.Ref
	// Deleting objects have a deletionTimestamp.
	Deleting bool
}

// Dependent is an object that names an owner.
type Dependent struct {
	Seen
	// BlockOwnerDeletion dependents hold a foreground deletion of their owner.
	BlockOwnerDeletion bool
}

// NamespaceContent is what a namespace being deleted still holds.
type NamespaceContent struct {
	Count  int64
	ByType map[string]int64
	// Sample names some of the objects, at most maxContentSample, those being deleted
	// first.
	Sample []Seen
	// Deleting counts the objects that are being deleted (pods waiting for their
	// kubelet); the others are not deleted yet.
	Deleting int64
	// Pending are objects not deleted yet that carry finalizers, at most maxPending of
	// PendingCount: while the namespace controller waits for the namespace's pods to go
	// (ordered namespace deletion, Kubernetes 1.33 and later), the rest is not deleted,
	// and these are the objects that may stick next.
	Pending      []*kube.Object
	PendingCount int64
}

// maxContentSample bounds the objects of a namespace the index names; maxPending the
// objects with finalizers not deleted yet it keeps, metadata only.
const (
	maxContentSample = 10
	maxPending       = 100
)

// maxPendingPerType bounds the objects not deleted yet one type's listing keeps across
// every namespace being deleted (thousands of namespaces wedged by one unavailable
// APIService must not keep thousands of objects each).
const maxPendingPerType = 1000

// pendingWorthKeeping: at least one finalizer is not Kubernetes' own (pvc-protection and
// the like go with the objects they guard): only those may stick for want of a remover.
func pendingWorthKeeping(finalizers []string) bool {
	for _, f := range finalizers {
		if !owner.IsSystem(f) {
			return true
		}
	}
	return false
}

// slimForPending keeps of an object's metadata what names it and what tells who wrote and
// who removes its finalizers: every managedFields entry of a manager that has one that
// holds finalizers or status (whether a manager's writes are a controller's is read from
// all of its entries: owner.Reconciles).
func slimForPending(meta *metav1.ObjectMeta) *metav1.ObjectMeta {
	slim := &metav1.ObjectMeta{Namespace: meta.Namespace, Name: meta.Name, UID: meta.UID, Finalizers: meta.Finalizers}
	var managers []string
	for _, e := range meta.ManagedFields {
		if e.Subresource == "status" || (e.FieldsV1 != nil && bytes.Contains(e.FieldsV1.GetRawBytes(), []byte(`"f:finalizers"`))) {
			if !slices.Contains(managers, e.Manager) {
				managers = append(managers, e.Manager)
			}
		}
	}
	for _, e := range meta.ManagedFields {
		if slices.Contains(managers, e.Manager) {
			slim.ManagedFields = append(slim.ManagedFields, e)
		}
	}
	return slim
}

// addPending keeps o among the objects not deleted yet that carry finalizers.
func (c *NamespaceContent) addPending(o *kube.Object) {
	c.PendingCount++
	if len(c.Pending) < maxPending {
		c.Pending = append(c.Pending, o)
	}
}

func (c *NamespaceContent) add(ref Seen) {
	c.Count++
	c.ByType[ref.Resource.String()]++
	if ref.Deleting {
		c.Deleting++
	}
	c.sample(ref)
}

// sample keeps ref among the named objects: objects being deleted hold up the rest, so
// they are named before the others.
func (c *NamespaceContent) sample(ref Seen) {
	if len(c.Sample) < maxContentSample {
		c.Sample = append(c.Sample, ref)
		return
	}
	if !ref.Deleting {
		return
	}
	for i := len(c.Sample) - 1; i >= 0; i-- {
		if !c.Sample[i].Deleting {
			c.Sample[i] = ref
			return
		}
	}
}

func (c *NamespaceContent) merge(o *NamespaceContent) {
	c.Count += o.Count
	c.Deleting += o.Deleting
	c.PendingCount += o.PendingCount
	for _, p := range o.Pending {
		if len(c.Pending) < maxPending {
			c.Pending = append(c.Pending, p)
		}
	}
	for t, n := range o.ByType {
		c.ByType[t] += n
	}
	for _, ref := range o.Sample {
		c.sample(ref)
	}
}

// Workload is a Deployment, StatefulSet or DaemonSet.
type Workload struct {
	Kind      string
	Namespace string
	Name      string
	// AppName is the app.kubernetes.io/name label, often the controller's name.
	AppName string
}

var workloadKinds = map[schema.GroupResource]string{
	{Group: "apps", Resource: "deployments"}:  "Deployment",
	{Group: "apps", Resource: "statefulsets"}: "StatefulSet",
	{Group: "apps", Resource: "daemonsets"}:   "DaemonSet",
}

// indexer collects the index of one resource type.
type indexer struct {
	owners    map[types.UID][]Dependent
	workloads []Workload
	nsLabels  map[string]map[string]string
	// terminating are the namespaces being deleted, known before other types are listed.
	terminating map[string]bool
	// shared keeps once what the pending objects have in common.
	shared  *kube.Shared
	content map[string]*NamespaceContent
	// deleting are the namespaces with a deletionTimestamp seen by this indexer.
	deleting []string
	// pending counts the objects not deleted yet this type keeps (maxPendingPerType).
	pending int
}

func newIndexer(terminating map[string]bool, shared *kube.Shared) *indexer {
	return &indexer{shared: shared,
		owners: map[types.UID][]Dependent{}, nsLabels: map[string]map[string]string{},
		terminating: terminating, content: map[string]*NamespaceContent{},
	}
}

func (ix *indexer) observe(r kube.Resource, meta *metav1.ObjectMeta, ns *corev1.Namespace) {
	if ix == nil {
		return
	}
	self := Seen{Ref: kube.Ref{Resource: r, Namespace: meta.Namespace, Name: meta.Name, UID: meta.UID}, Deleting: meta.DeletionTimestamp != nil}
	for i := range meta.OwnerReferences {
		ref := &meta.OwnerReferences[i]
		ix.owners[ref.UID] = append(ix.owners[ref.UID], Dependent{
			Seen:               self,
			BlockOwnerDeletion: ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion,
		})
	}
	if meta.Namespace != "" && ix.terminating[meta.Namespace] {
		c := ix.content[meta.Namespace]
		if c == nil {
			c = &NamespaceContent{ByType: map[string]int64{}}
			ix.content[meta.Namespace] = c
		}
		c.add(self)
		if meta.DeletionTimestamp == nil && pendingWorthKeeping(meta.Finalizers) && ix.pending < maxPendingPerType {
			ix.pending++
			c.addPending(ix.shared.NewObject(r, slimForPending(meta), nil))
		}
	}
	if kind, ok := workloadKinds[r.GroupResource()]; ok {
		ix.workloads = append(ix.workloads, Workload{Kind: kind, Namespace: meta.Namespace, Name: meta.Name, AppName: meta.Labels["app.kubernetes.io/name"]})
	}
	if ns != nil && len(ns.Labels) > 0 {
		ix.nsLabels[ns.Name] = ns.Labels
	}
	if ns != nil && ns.DeletionTimestamp != nil {
		ix.deleting = append(ix.deleting, ns.Name)
	}
}

// merge adds one type's index into the result's.
func (idx *Index) merge(r kube.Resource, seen int64, ix *indexer) {
	idx.Counts[r.GroupResource()] += seen
	for uid, deps := range ix.owners {
		idx.Dependents[uid] = append(idx.Dependents[uid], deps...)
	}
	idx.Workloads = append(idx.Workloads, ix.workloads...)
	for ns, l := range ix.nsLabels {
		idx.NamespaceLabels[ns] = l
	}
	for ns, c := range ix.content {
		if idx.Content[ns] == nil {
			idx.Content[ns] = &NamespaceContent{ByType: map[string]int64{}}
		}
		idx.Content[ns].merge(c)
	}
}

// keepStuckOwners drops dependents of objects that are not stuck: only those explain
// anything.
func (idx *Index) keepStuckOwners(objs []*kube.Object) {
	stuck := make(map[types.UID]bool, len(objs))
	for _, o := range objs {
		stuck[o.Meta.UID] = true
	}
	for uid := range idx.Dependents {
		if !stuck[uid] {
			delete(idx.Dependents, uid)
		}
	}
}
