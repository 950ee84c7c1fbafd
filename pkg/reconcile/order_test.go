package reconcile

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// TestTheReportKeepsTheScansOrder: the order is taken from the scan before its objects
// are let go (#36), and orders the report as the scan did: by object, then by the
// finalizer's place on it; a row of no finalizer (a pod's force deletion) goes with the
// first, in the order the plan made them, as does a row of an object the scan did not
// hold, with the first object's first finalizer, as before.
func TestTheReportKeepsTheScansOrder(t *testing.T) {
	obj := func(uid string, fins ...string) *kube.Object {
		o := &kube.Object{Meta: metav1.ObjectMeta{UID: types.UID(uid)}}
		for _, f := range fins {
			o.Finalizers = append(o.Finalizers, finalizev1alpha1.Finalizer{Name: f})
		}
		return o
	}
	res := &scan.Result{Objects: []*kube.Object{obj("old", "x", "y", "z"), obj("pod", "p"), obj("new", "y", "x")}}
	row := func(uid, fin string) finalizev1alpha1.Removal {
		return finalizev1alpha1.Removal{Target: finalizev1alpha1.ObjectReference{UID: types.UID(uid)}, Finalizer: fin}
	}
	rows := []finalizev1alpha1.Removal{row("new", "x"), row("pod", "p"), row("old", "z"), row("new", "y"), row("pod", ""), row("old", "x"), row("unknown", "q"), row("old", "y")}
	before := slices.Clone(rows)
	oldSortActions(before, res)
	o := orderOf(res)
	res.Objects = nil // the order does not need them
	o.sort(rows)
	if fmt.Sprint(rows) != fmt.Sprint(before) {
		t.Errorf("the order is not the one before #36:\n%v\n%v", rows, before)
	}
	var got []string
	for _, r := range rows {
		got = append(got, string(r.Target.UID)+"/"+r.Finalizer)
	}
	want := []string{"old/x", "unknown/q", "old/y", "old/z", "pod/p", "pod/", "new/y", "new/x"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// oldSortActions is sortActions as it was before #36, verbatim: the order the report
// must keep.
func oldSortActions(actions []finalizev1alpha1.Removal, res *scan.Result) {
	pos := map[string]int{}
	fin := map[string]int{}
	for i, o := range res.Objects {
		pos[string(o.Meta.UID)] = i
		for j, f := range o.Finalizers {
			fin[string(o.Meta.UID)+"\x00"+f.Name] = j
		}
	}
	sort.SliceStable(actions, func(i, j int) bool {
		a, b := &actions[i], &actions[j]
		if pa, pb := pos[string(a.Target.UID)], pos[string(b.Target.UID)]; pa != pb {
			return pa < pb
		}
		return fin[string(a.Target.UID)+"\x00"+a.Finalizer] < fin[string(b.Target.UID)+"\x00"+b.Finalizer]
	})
}

// TestAFinalizerNamedTwiceKeepsTheReportsOrder: a namespace whose metadata.finalizers
// hold "kubernetes" besides its spec.finalizers' (the API server takes the standard name
// there), or an object whose metadata.finalizers name one finalizer twice, has one name
// at two places in kube.Object.Finalizers. The old order placed such a name at its last
// place; order.sort at its first, so the report's rows come out in another order.
func TestAFinalizerNamedTwiceKeepsTheReportsOrder(t *testing.T) {
	ns := &kube.Object{Meta: metav1.ObjectMeta{UID: types.UID("ns-uid")}, Finalizers: []finalizev1alpha1.Finalizer{
		{Name: "kubernetes", Field: finalizev1alpha1.FieldMetadataFinalizers},
		{Name: "example.com/cleanup", Field: finalizev1alpha1.FieldMetadataFinalizers},
		{Name: "kubernetes", Field: finalizev1alpha1.FieldSpecFinalizers},
	}}
	res := &scan.Result{Objects: []*kube.Object{ns}}
	row := func(fin string) finalizev1alpha1.Removal {
		return finalizev1alpha1.Removal{Target: finalizev1alpha1.ObjectReference{UID: "ns-uid"}, Finalizer: fin}
	}
	// The plan's rows: the verified removal first, the refused system finalizer after it
	// (reconcile appends refusals after the actions).
	rows := func() []finalizev1alpha1.Removal {
		return []finalizev1alpha1.Removal{row("example.com/cleanup"), row("kubernetes"), row("kubernetes")}
	}
	want, got := rows(), rows()
	oldSortActions(want, res)
	orderOf(res).sort(got)
	if fmt.Sprint(rowFinalizers(got)) != fmt.Sprint(rowFinalizers(want)) {
		t.Errorf("the report's order changed: got %v, before #36 %v", rowFinalizers(got), rowFinalizers(want))
	}
}

func rowFinalizers(rows []finalizev1alpha1.Removal) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Finalizer)
	}
	return out
}
