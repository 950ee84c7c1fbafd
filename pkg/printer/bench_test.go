package printer

import (
	"fmt"
	"io"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// BenchmarkStuckTable renders 10,000 stuck objects, as a table and wide, without
// tablewriter's cache of cell widths (as the commands print) and with it (its default,
// 8,192 widths), side by side.
func BenchmarkStuckTable(b *testing.B) {
	base := fixture()
	list := &finalizev1alpha1.StuckObjectList{TypeMeta: base.TypeMeta}
	for i := range 10_000 {
		o := base.Items[i%len(base.Items)]
		o.Target.Name = fmt.Sprintf("%s-%05d", o.Target.Name, i)
		o.TerminatingSeconds += int64(i)
		list.Items = append(list.Items, o)
	}
	defer twwidth.SetCacheCapacity(0)
	for _, cache := range []struct {
		name     string
		capacity int
	}{{"no-width-cache", 0}, {"width-cache", 8192}} {
		for _, f := range []struct {
			name string
			opts StuckTableOptions
		}{{"table", StuckTableOptions{}}, {"wide", StuckTableOptions{Wide: true}}} {
			b.Run(cache.name+"/"+f.name, func(b *testing.B) {
				twwidth.SetCacheCapacity(cache.capacity)
				b.ReportAllocs()
				for b.Loop() {
					if err := StuckTable(io.Discard, list, f.opts); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
