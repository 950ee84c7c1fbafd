package kube

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What a stuck object keeps of an entry's fields: the names of its top-level fields and
// of spec's, and the finalizers whole (#36). What it answers is FuzzSlimFields's.
func TestSlimFields(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{"f:data":{".":{},"f:config":{}},"f:metadata":{"f:annotations":{".":{},"f:a":{}},"f:finalizers":{".":{},"v:\"op.example.com/cleanup\"":{}},"f:labels":{"f:b":{}}}}`,
			`{"f:data":{},"f:metadata":{"f:finalizers":{".":{},"v:\"op.example.com/cleanup\"":{}}}}`},
		{`{"f:spec":{".":{},"f:finalizers":{"v:\"kubernetes\"":{}},"f:replicas":{}},"f:status":{"f:phase":{}}}`,
			`{"f:spec":{".":{},"f:finalizers":{"v:\"kubernetes\"":{}},"f:replicas":{}},"f:status":{}}`},
		{`{"f:metadata":null}`, `{"f:metadata":null}`},
		{` { "f:metadata" : { "f:labels" : { } } } `, `{"f:metadata":{}}`},
		{`{"f:metadata":`, `{"f:metadata":`},
		{`{"f:\u006detadata":{"f:finalizers":{"v:\"x\"":{}},"f:labels":{}}}`, `{"f:metadata":{"f:finalizers":{"v:\"x\"":{}}}}`},
		// Deeper than a decoder reads: kept as it is, to be found malformed where read.
		{`{"f:metadata":{"f:labels":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}}`,
			`{"f:metadata":{"f:labels":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}}`},
	} {
		if got := string(SlimFields([]byte(tc.raw))); got != tc.want {
			t.Errorf("SlimFields(%s) = %s, want %s", tc.raw, got, tc.want)
		}
	}
}

// A stuck object keeps no annotations, and shares the strings thousands repeat.
func TestNewObjectKeepsWhatIsRead(t *testing.T) {
	ts := metav1.Now()
	meta := &metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u", DeletionTimestamp: &ts, Finalizers: []string{"x.example.com/f"},
		Labels: map[string]string{"app": "db"}, Annotations: map[string]string{"big": "y"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "ou"}},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "op", Operation: metav1.ManagedFieldsOperationUpdate, Time: &ts,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{"v:\"x.example.com/f\"":{}},"f:labels":{"f:app":{}}}}`)}}}
	o := NewObject(Resource{}, meta, nil)
	m := &o.Meta
	if m.Annotations != nil || m.Labels["app"] != "db" || len(m.OwnerReferences) != 1 || m.Finalizers[0] != "x.example.com/f" || !m.DeletionTimestamp.Equal(&ts) {
		t.Errorf("kept %+v", m)
	}
	if got := m.ManagedFields[0].FieldsV1.GetRawString(); got != `{"f:metadata":{"f:finalizers":{"v:\"x.example.com/f\"":{}}}}` || m.ManagedFields[0].Manager != "op" {
		t.Errorf("managedFields kept %+v (%s)", m.ManagedFields[0], got)
	}
	meta.Labels["app"], meta.Finalizers[0] = "changed", "changed"
	if m.Labels["app"] != "db" || m.Finalizers[0] != "x.example.com/f" {
		t.Error("the kept metadata shares the list's")
	}
}

// Objects made through one Shared keep what they repeat once, and keep exactly what
// they would alone.
func TestSharedKeepsRepeatsOnce(t *testing.T) {
	s := NewShared()
	var kept []*Object
	for i := range 200 {
		m := massMeta(i)
		o := s.NewObject(Resource{}, m, nil)
		if alone := NewObject(Resource{}, m, nil); !equality.Semantic.DeepEqual(o.Meta, alone.Meta) {
			t.Fatalf("shared %+v, alone %+v", o.Meta, alone.Meta)
		}
		kept = append(kept, o)
	}
	a, b, c := &kept[0].Meta, &kept[100].Meta, &kept[1].Meta // 0 and 100: one operator, one tenant
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("one label set is kept twice")
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() == reflect.ValueOf(c.Labels).UnsafePointer() {
		t.Error("two label sets share one map")
	}
	if a.ManagedFields[0].FieldsV1 != b.ManagedFields[0].FieldsV1 || a.ManagedFields[0].FieldsV1 == c.ManagedFields[0].FieldsV1 {
		t.Error("fields are not shared by what they hold")
	}
	// Keys and values that run together are different sets.
	x := s.NewObject(Resource{}, &metav1.ObjectMeta{Labels: map[string]string{"a": "bc"}}, nil)
	y := s.NewObject(Resource{}, &metav1.ObjectMeta{Labels: map[string]string{"ab": "c"}}, nil)
	if x.Meta.Labels["a"] != "bc" || y.Meta.Labels["ab"] != "c" || len(y.Meta.Labels) != 1 {
		t.Errorf("labels %v and %v", x.Meta.Labels, y.Meta.Labels)
	}
}
