package testing

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// StuckConfigMap is a configmap deleted some time ago that still has finalizers.
func StuckConfigMap(ns, name string, deletedAgo time.Duration, finalizers ...string) *corev1.ConfigMap {
	ts := metav1.NewTime(time.Now().Add(-deletedAgo).Truncate(time.Second))
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
		ResourceVersion: "1", DeletionTimestamp: &ts, Finalizers: finalizers}}
}

// Namespace is a live namespace.
func Namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
}
