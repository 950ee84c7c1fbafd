package owner

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// managedFields is what an object touched by several managers carries: a controller
// that wrote a large spec, kubectl, the status writer, and the one that added the
// finalizer last.
func managedFields(specFields int) []metav1.ManagedFieldsEntry {
	var spec strings.Builder
	spec.WriteString(`{"f:metadata":{"f:labels":{".":{},"f:app":{}},"f:annotations":{".":{},"f:note":{}}},"f:spec":{`)
	for i := range specFields {
		if i > 0 {
			spec.WriteString(",")
		}
		fmt.Fprintf(&spec, `"f:field%04d":{".":{},"f:value":{},"f:items":{}}`, i)
	}
	spec.WriteString(`}}`)
	entry := func(manager, raw string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(raw)}
	}
	return []metav1.ManagedFieldsEntry{
		entry("kubectl-client-side-apply", spec.String()),
		entry("kube-controller-manager", `{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"1\"}":{}}}}`),
		entry("database-operator", `{"f:status":{".":{},"f:phase":{},"f:conditions":{}}}`),
		entry("database-operator", `{"f:metadata":{"f:finalizers":{".":{},"v:\"db.example.com/finalizer\"":{}}}}`),
	}
}

// BenchmarkWriters finds who wrote a finalizer in managedFields, with a small spec and a
// large one (1,000 fields, about 40 KB of fieldsV1).
func BenchmarkWriters(b *testing.B) {
	for _, n := range []int{10, 1000} {
		mf := managedFields(n)
		b.Run(fmt.Sprintf("spec-fields-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if w := Writers(mf, "metadata.finalizers", "db.example.com/finalizer"); len(w) != 1 {
					b.Fatal(w)
				}
			}
		})
	}
}

// BenchmarkResolve names the owner of a finalizer the catalogue knows, and of one only
// managedFields tell.
func BenchmarkResolve(b *testing.B) {
	r := NewResolver(Builtin(), []string{"db.example.com", "apps", "batch", "networking.k8s.io"})
	meta := &metav1.ObjectMeta{ManagedFields: managedFields(10)}
	for _, name := range []string{"kubernetes.io/pvc-protection", "db.example.com/finalizer"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if f := r.Resolve(meta, "metadata.finalizers", name); f.Owner == "" {
					b.Fatal(f)
				}
			}
		})
	}
}

// BenchmarkLookup looks finalizers up in the built-in catalogue: an exact name, a
// pattern, and a miss.
func BenchmarkLookup(b *testing.B) {
	c := Builtin()
	for _, name := range []string{"kubernetes.io/pvc-protection", "finalizer.managedresource.crossplane.io", "example.com/unknown"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.Lookup(name)
			}
		})
	}
}
