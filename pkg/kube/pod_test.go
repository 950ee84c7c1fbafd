package kube

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPodDeletionAt: the one rule of when a pod is overdue, at the edges the scan, the
// doctor and a force deletion once each decided by a rule of their own.
func TestPodDeletionAt(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	const margin = time.Minute
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	tests := []struct {
		name  string
		ts    *metav1.Time
		grace *int64
		want  PodDeletion
	}{
		{"not deleted", nil, nil, PodNotDeleting},
		{"in its grace period", at(time.Second), ptr.To[int64](30), PodInGrace},
		{"grace 0 but the timestamp ahead: the timestamp decides", at(time.Second), ptr.To[int64](0), PodInGrace},
		{"the kubelet finished", at(-time.Hour), ptr.To[int64](0), PodKubeletDone},
		{"no grace period at all: no kubelet is waited for, so no force deletion", at(-time.Hour), nil, PodKubeletDone},
		{"grace over, within the margin", at(-margin + time.Second), ptr.To[int64](30), PodWaiting},
		{"grace over by exactly the margin", at(-margin), ptr.To[int64](30), PodOverdue},
		{"grace over long ago", at(-time.Hour), ptr.To[int64](30), PodOverdue},
	}
	for _, tt := range tests {
		meta := &metav1.ObjectMeta{DeletionTimestamp: tt.ts, DeletionGracePeriodSeconds: tt.grace}
		if got := PodDeletionAt(meta, now, margin); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
