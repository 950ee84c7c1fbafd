package owner

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzWriters parses arbitrary managedFields and checks that the fast path (entries that
// cannot hold the key are skipped before parsing) finds exactly the writers a full parse
// of every entry finds.
func FuzzWriters(f *testing.F) {
	f.Add(`{"f:metadata":{"f:finalizers":{".":{},"v:\"db.example.com/finalizer\"":{}}}}`, "db.example.com/finalizer")
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\"a\\u002fb\"":{}}}}`, "a/b")
	f.Add(`{"f:spec":{"f:finalizers":{"v:\"kubernetes\"":{}}}}`, "kubernetes")
	f.Add(`{"f:metadata":`, "x")
	f.Add(`{"f:metadata":{"f:labels":{"f:v:\"x\"":{}},"f:finalizers":{"v:\"x\"":{}}}}`, "x")
	// What the walk of the encoded bytes (holdsEncoded) must answer as a decoder does.
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\"x\"":tru}}}`, "x")
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\"x\"":{}}}}x`, "x")
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\"x\"":{}}},"f:metadata":{}}`, "x")
	f.Add(`{"f:metadata":{},"f:metadata":{"f:finalizers":{"v:\"x\"":{}}}}`, "x")
	f.Add(`{"f:\u006detadata":{"f:finalizers":{"v:\"x\"":{}}}}`, "x")
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\"x\"":[1,-0.5e+3,"\u00e9",null,false]}}}`, "x")
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\"x\"":01}}}`, "x")
	f.Fuzz(func(t *testing.T, raw, name string) {
		entries := []metav1.ManagedFieldsEntry{
			{Manager: "fuzzed", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(raw)},
		}
		for _, field := range []string{"metadata.finalizers", "spec.finalizers"} {
			got := Writers(entries, field, name)
			value, err := json.Marshal(name)
			if err != nil {
				return
			}
			var want []string
			if holds([]byte(raw), pathOf(field), "v:"+string(value)) {
				want = []string{"fuzzed"}
			}
			if !slices.Equal(got, want) {
				t.Errorf("Writers(%q, %s, %q) = %v, a full parse says %v", raw, field, name, got, want)
			}
		}
	})
}

func pathOf(field string) []string {
	var path []string
	for _, p := range strings.Split(field, ".") {
		path = append(path, "f:"+p)
	}
	return path
}
