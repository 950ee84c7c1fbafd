package kube

import (
	"strings"
	"testing"

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
