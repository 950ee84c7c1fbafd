package kube

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsPods reports whether r is the core pods resource.
func (r Resource) IsPods() bool { return r.Group == "" && r.Resource == "pods" }

// PodDeletion is what a pod's metadata says of its deletion at a time: the one rule of
// when a pod is overdue, which the scan lists pods by, the doctor explains them by and
// a force deletion is planned and checked again by.
//
// A pod's deletion waits for its kubelet: the API server sets its deletionTimestamp to
// the time of the delete plus the grace period, and deletionGracePeriodSeconds to that
// period; the kubelet, once it stopped the containers, deletes the pod with grace period
// 0, which is what a pod held only by finalizers shows.
type PodDeletion int

const (
	// PodNotDeleting is a pod without a deletionTimestamp.
	PodNotDeleting PodDeletion = iota
	// PodInGrace is a pod whose grace period is not over: it may still stop on its own.
	PodInGrace
	// PodKubeletDone is a pod that waits for no kubelet (a grace period of 0, the kubelet's
	// final delete or a force deletion, or none at all, which the API server never
	// leaves on a pod it deletes gracefully): only finalizers hold the pod.
	PodKubeletDone
	// PodWaiting is a pod whose grace period is over and whose kubelet has not finished,
	// within the margin.
	PodWaiting
	// PodOverdue is a pod whose grace period has been over for margin or more, and whose
	// kubelet has not finished.
	PodOverdue
)

// PodDeletionAt says what meta, a pod's, says of its deletion at now, by the API
// server's clock, given the margin a kubelet is granted past its grace period.
func PodDeletionAt(meta *metav1.ObjectMeta, now time.Time, margin time.Duration) PodDeletion {
	switch {
	case meta.DeletionTimestamp == nil:
		return PodNotDeleting
	case now.Before(meta.DeletionTimestamp.Time):
		return PodInGrace
	case meta.DeletionGracePeriodSeconds == nil || *meta.DeletionGracePeriodSeconds == 0:
		return PodKubeletDone
	case now.Sub(meta.DeletionTimestamp.Time) < margin:
		return PodWaiting
	default:
		return PodOverdue
	}
}
