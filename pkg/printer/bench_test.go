package printer

import (
	"fmt"
	"io"
	"testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// BenchmarkStuckTable renders 10,000 stuck objects, as a table and wide.
func BenchmarkStuckTable(b *testing.B) {
	base := fixture()
	list := &finalizev1alpha1.StuckObjectList{TypeMeta: base.TypeMeta}
	for i := range 10_000 {
		o := base.Items[i%len(base.Items)]
		o.Target.Name = fmt.Sprintf("%s-%05d", o.Target.Name, i)
		o.TerminatingSeconds += int64(i)
		list.Items = append(list.Items, o)
	}
	for name, opts := range map[string]StuckTableOptions{"table": {}, "wide": {Wide: true}} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := StuckTable(io.Discard, list, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
