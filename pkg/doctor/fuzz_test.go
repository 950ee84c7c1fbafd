package doctor

import (
	"slices"
	"strings"
	"testing"
)

// FuzzGroupVersionsIn reads arbitrary namespace-condition messages: it never panics, and
// returns sorted, distinct group/versions of non-core groups only.
func FuzzGroupVersionsIn(f *testing.F) {
	for _, m := range []string{
		"Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1",
		"Discovery failed for some groups, 2 failing: unable to retrieve the complete list of server APIs: a.example.com/v1: the server is currently unable to handle the request, b.example.com/v2: x",
		"", "v1/x", "apps/v1", "a./b", "..../v1",
	} {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		gvs := groupVersionsIn(msg)
		if !slices.IsSorted(gvs) || len(slices.Compact(slices.Clone(gvs))) != len(gvs) {
			t.Fatalf("%q: %v is not sorted and distinct", msg, gvs)
		}
		for _, gv := range gvs {
			group, version, ok := strings.Cut(gv, "/")
			if !ok || !strings.Contains(group, ".") || version == "" {
				t.Fatalf("%q: %q is not a group/version of a non-core group", msg, gv)
			}
		}
	})
}
