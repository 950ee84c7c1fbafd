package kube

import (
	"fmt"
	"runtime"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// massMeta is one of the stuck objects of the bench's mass-stuck shape
// (test/bench/massstuck_test.go): one of 20 operators' finalizers, written under that
// operator's field manager, with its labels and annotations.
func massMeta(i int) *metav1.ObjectMeta {
	op := i % 20
	ts := metav1.Now()
	fields := fmt.Sprintf(`{"f:data":{".":{},"f:config":{}},"f:metadata":{"f:annotations":{".":{},"f:instance":{},"f:op%02d.example.com/last-applied-generation":{}},"f:finalizers":{".":{},"v:\"op%02d.example.com/cleanup\"":{}},"f:labels":{".":{},"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/managed-by":{}}}}`, op, op)
	return &metav1.ObjectMeta{
		Name: fmt.Sprintf("mass-%06d", i), Namespace: fmt.Sprintf("bench-%04d", i%5), UID: types.UID(fmt.Sprintf("6d0c3c3e-1f7b-4a0e-9d55-%012d", i)),
		ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: ts, DeletionTimestamp: &ts, DeletionGracePeriodSeconds: new(int64),
		Finalizers: []string{fmt.Sprintf("op%02d.example.com/cleanup", op)},
		Labels:     map[string]string{"app.kubernetes.io/managed-by": fmt.Sprintf("operator-%02d", op), "app.kubernetes.io/instance": fmt.Sprintf("tenant-%d", i%50)},
		Annotations: map[string]string{fmt.Sprintf("op%02d.example.com/last-applied-generation", op): fmt.Sprint(i % 7),
			"instance": fmt.Sprintf("slow-mass-%06d", i)},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: fmt.Sprintf("operator-%02d", op), Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "v1", Time: &ts, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}},
	}
}

// BenchmarkKeptPerStuckObject reports the heap a stuck object of the mass-stuck shape
// keeps once its list page is gone (#36: the goal is 2 KB per stuck object in all, the
// diagnosis included).
func BenchmarkKeptPerStuckObject(b *testing.B) {
	const n = 10000
	metas := make([]*metav1.ObjectMeta, n)
	for i := range metas {
		metas[i] = massMeta(i)
	}
	var kept []*Object
	for b.Loop() {
		kept = make([]*Object, 0, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := NewShared()
		for _, m := range metas {
			kept = append(kept, s.NewObject(Resource{}, m, nil))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B-kept/object")
	}
	runtime.KeepAlive(kept)
}
