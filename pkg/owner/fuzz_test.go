package owner

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// FuzzWriters parses arbitrary managedFields and checks that the fast path (entries that
// cannot hold the key are skipped before parsing) finds exactly the writers a full parse
// of every entry finds.
func FuzzWriters(f *testing.F) {
	f.Add(`{"f:metadata":{"f:finalizers":{".":{},"v:\"db.example.com/finalizer\"":{}}}}`, "db.example.com/finalizer")
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\"a\\u002fb\"":{}}}}`, "a/b")
	// The same name written with escapes a plain name does not need.
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\"a\u002fb\"":{}}}}`, "a/b")
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\"a\/b\"":{}}}}`, "a/b")
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\u0022a/b\u0022":{}}}}`, "a/b")
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

// FuzzSlimFields: a stuck object keeps each managedFields entry's fields slimmed
// (kube.SlimFields, #36). Every question the diagnosis asks of them (who wrote a
// finalizer; whether a manager's writes are a controller's) is answered as by the
// fields the API server sent.
func FuzzSlimFields(f *testing.F) {
	f.Add(`{"f:data":{".":{},"f:config":{}},"f:metadata":{"f:annotations":{".":{},"f:a":{}},"f:finalizers":{".":{},"v:\"x\"":{}},"f:labels":{"f:b":{}}}}`, "x")
	f.Add(`{"f:spec":{".":{},"f:finalizers":{"v:\"kubernetes\"":{}}}}`, "kubernetes")
	f.Add(`{"f:spec":{"f:finalizers":{"v:\"kubernetes\"":{}},"f:replicas":{}},"f:status":{"f:phase":{}}}`, "kubernetes")
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\"x\"":{}}},"f:metadata":{}}`, "x")
	f.Add(`{"f:\u006detadata":{"f:finalizers":{"v:\"x\"":{}}}}`, "x")
	f.Add(`{"f:metadata":null,"f:spec":5}`, "x")
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\"<&>\"":{}}}}`, "<&>")
	f.Add(`{"f:metadata":`, "x")
	f.Add(`null`, "x")
	f.Add(`[]`, "x")
	f.Fuzz(func(t *testing.T, raw, name string) {
		entry := func(fields []byte) []metav1.ManagedFieldsEntry {
			return []metav1.ManagedFieldsEntry{{Manager: "fuzzed", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(fields))}}
		}
		full, slim := entry([]byte(raw)), entry(kube.SlimFields([]byte(raw)))
		for _, field := range []string{"metadata.finalizers", "spec.finalizers"} {
			if got, want := Writers(slim, field, name), Writers(full, field, name); !slices.Equal(got, want) {
				t.Errorf("Writers(%s, %q) of %q slimmed to %q: %v, want %v", field, name, raw, slim[0].FieldsV1.GetRawString(), got, want)
			}
		}
		if got, want := Reconciles(slim, "fuzzed"), Reconciles(full, "fuzzed"); got != want {
			t.Errorf("Reconciles of %q slimmed to %q: %v, want %v", raw, slim[0].FieldsV1.GetRawString(), got, want)
		}
	})
}

// FuzzControllerWrites: the walk of an entry's bytes (controllerWrites) answers as the
// decoder does, whatever the bytes.
func FuzzControllerWrites(f *testing.F) {
	f.Add(`{"f:metadata":{"f:finalizers":{"v:\"x\"":{}}}}`)
	f.Add(`{"f:spec":{".":{},"f:finalizers":{}},"f:status":{}}`)
	f.Add(`{"f:spec":{"f:replicas":{}},"f:spec":{"f:finalizers":{}}}`)
	f.Add(`{"f:spec":null}`)
	f.Add(`{"f:status":{},"f:spec":5}`)
	f.Add(`{"f:\u0073tatus":{}}`)
	f.Add(`{"f:data":{}}x`)
	f.Add(`null`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, raw string) {
		status, content, ok := controllerWrites([]byte(raw))
		wantStatus, wantContent, wantOK := controllerWritesDecoded([]byte(raw))
		if ok != wantOK || (ok && (status != wantStatus || (!status && content != wantContent))) {
			t.Errorf("controllerWrites(%q) = %v %v %v, the decoder says %v %v %v", raw, status, content, ok, wantStatus, wantContent, wantOK)
		}
	})
}
