package scan

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// A pod's deletion waits for its kubelet: the API server sets its deletionTimestamp to
// the time of the delete plus the grace period, and only the kubelet, once it stopped the
// containers and released the volumes, deletes the pod for good (DELETE with grace period
// 0). A pod whose kubelet will not answer (its node gone, NotReady, or not finishing) stays
// without any finalizer. The scan lists it once its deletionTimestamp is more than
// Options.PodGraceMargin in the past.
//
// The metadata list says when (deletionTimestamp) and whether the kubelet still has to
// answer (deletionGracePeriodSeconds > 0: the kubelet's final delete sets it to 0, so a
// pod with finalizers whose kubelet finished shows 0), not which node: spec.nodeName is
// read with one GET of each such pod, or, when a namespace holds more than
// maxPodGetsPerNamespace of them, with one paged list of the pods of that namespace. Both
// happen only for pods that are overdue: a cluster without any costs nothing more.

// maxPodGetsPerNamespace is how many overdue pods of one namespace are read one by one;
// beyond it, the namespace's pods are listed instead.
const maxPodGetsPerNamespace = 20

// PodWithinMargin says whether a pod being deleted still has time to stop by itself:
// its grace period is not over, or ended less than margin ago. The scan does not list
// such a pod for its kubelet (only for its finalizers, as any object), and
// `doctor TYPE/NAME` says so of it.
func PodWithinMargin(meta *metav1.ObjectMeta, now time.Time, margin time.Duration) bool {
	d := kube.PodDeletionAt(meta, now, margin)
	return d == kube.PodInGrace || d == kube.PodWaiting
}

// listPod decides whether a pod is listed: a pod whose grace period is not over never is,
// an overdue pod always is (with WaitsFor set), and any other with finalizers is, as any
// object. pending collects the overdue pods, whose nodes are read once the type is listed.
func (tr *typeResult) listPod(r kube.Resource, meta *metav1.ObjectMeta, opts Options, now time.Time) {
	margin := opts.PodGraceMargin
	if margin <= 0 {
		margin = DefaultPodGraceMargin
	}
	d := kube.PodDeletionAt(meta, now, margin)
	switch {
	case d == kube.PodNotDeleting || d == kube.PodInGrace:
		return
	case d != kube.PodOverdue && !stuck(meta, nil):
		return
	case !keep(meta, nil, opts, now):
		return
	}
	o := opts.shared.NewObject(r, meta, nil)
	tr.objects = append(tr.objects, o)
	if d == kube.PodOverdue {
		o.WaitsFor = &finalizev1alpha1.WaitsFor{}
		tr.pending = append(tr.pending, o)
	}
}

// podNodes fills in the node each pending pod waits for, keeps the pods as read for the
// doctor, and drops those that are gone (or re-created) since they were listed.
func (s *Scanner) podNodes(ctx context.Context, opts Options, tr *typeResult) error {
	if len(tr.pending) == 0 {
		return nil
	}
	started := time.Now()
	byNS := map[string][]*kube.Object{}
	for _, o := range tr.pending {
		byNS[o.Meta.Namespace] = append(byNS[o.Meta.Namespace], o)
	}
	nodes := make(map[*kube.Object]*corev1.Pod, len(tr.pending))
	var g errgroup.Group
	g.SetLimit(max(opts.Concurrency, 1))
	results := make(chan map[*kube.Object]*corev1.Pod, len(byNS))
	for ns, objs := range byNS {
		g.Go(func() error {
			found, err := s.readPods(ctx, ns, objs, opts)
			if err != nil {
				return err
			}
			results <- found
			return nil
		})
	}
	err := g.Wait()
	close(results)
	if err != nil {
		return err
	}
	for found := range results {
		for o, p := range found {
			nodes[o] = p
		}
	}
	gone := map[*kube.Object]bool{}
	for _, o := range tr.pending {
		p := nodes[o]
		switch {
		case p == nil || p.UID != o.Meta.UID || p.DeletionTimestamp == nil:
			gone[o] = true
		case p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0 && len(o.Meta.Finalizers) == 0:
			gone[o] = true // the kubelet just finished; the pod is going
		case p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0:
			o.WaitsFor = nil // the kubelet just finished; its finalizers remain
		default:
			o.WaitsFor.Node = p.Spec.NodeName
			if tr.pods == nil {
				tr.pods = map[types.UID]*corev1.Pod{}
			}
			tr.pods[p.UID] = p
		}
	}
	if len(gone) > 0 {
		kept := tr.objects[:0]
		for _, o := range tr.objects {
			if !gone[o] {
				kept = append(kept, o)
			}
		}
		tr.objects = kept
	}
	klog.V(2).InfoS("Nodes of overdue pods read", "pods", len(tr.pending), "namespaces", len(byNS), "gone", len(gone), "duration", time.Since(started))
	tr.pending = nil
	return nil
}

// readPods reads the pods objs of namespace ns: one by one, or by listing the namespace
// when there are many. A pod that is gone is absent from the result.
func (s *Scanner) readPods(ctx context.Context, ns string, objs []*kube.Object, opts Options) (map[*kube.Object]*corev1.Pod, error) {
	out := map[*kube.Object]*corev1.Pod{}
	pods := s.Kube.CoreV1().Pods(ns)
	if len(objs) <= maxPodGetsPerNamespace {
		for _, o := range objs {
			p, err := pods.Get(ctx, o.Meta.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return nil, fmt.Errorf("reading the node of pod %s/%s: %w", ns, o.Meta.Name, err)
			}
			p.ManagedFields = nil
			out[o] = p
		}
		return out, nil
	}
	byUID := map[string]*kube.Object{}
	for _, o := range objs {
		byUID[string(o.Meta.UID)] = o
	}
	lo := metav1.ListOptions{Limit: opts.ChunkSize, LabelSelector: opts.LabelSelector}
	for {
		page, err := pods.List(ctx, lo)
		if err != nil {
			return nil, fmt.Errorf("listing the pods of namespace %s for their nodes: %w", ns, err)
		}
		for i := range page.Items {
			p := &page.Items[i]
			if o, ok := byUID[string(p.UID)]; ok {
				kept := p.DeepCopy() // the page is dropped, the few pods kept
				kept.ManagedFields = nil
				out[o] = kept
			}
		}
		if page.Continue == "" {
			return out, nil
		}
		lo.Continue = page.Continue
	}
}
