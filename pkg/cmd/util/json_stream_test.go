package util

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// -o json streams a list's items, and writes what kubectl's JSON printer writes, byte
// for byte: one item, many, none, with the characters encoding/json escapes, and with the
// fields before and after the items (#36).
func TestStreamedJSONIsKubectlsJSON(t *testing.T) {
	item := func(i int) finalizev1alpha1.StuckObject {
		return finalizev1alpha1.StuckObject{
			Target:             finalizev1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "ns<&>", Name: fmt.Sprintf("cm-%d\u2028é", i)},
			DeletionTimestamp:  metav1.NewTime(time.Date(2026, 11, 28, 4, 0, i, 0, time.UTC)),
			TerminatingSeconds: int64(i),
			Finalizers:         []finalizev1alpha1.Finalizer{{Name: "example.com/<cleanup>", Field: finalizev1alpha1.FieldMetadataFinalizers}},
			Cause:              &finalizev1alpha1.Cause{Reason: finalizev1alpha1.ReasonUnknown, Message: "a \"quoted\"\nmessage\t", NextStep: "kubectl get cm -o yaml"},
		}
	}
	items := func(n int) []finalizev1alpha1.StuckObject {
		var out []finalizev1alpha1.StuckObject
		for i := range n {
			out = append(out, item(i))
		}
		return out
	}
	removals := func(n int) []finalizev1alpha1.Removal {
		var out []finalizev1alpha1.Removal
		for i := range n {
			out = append(out, finalizev1alpha1.Removal{Target: item(i).Target, Finalizer: "example.com/<cleanup>", Rule: "actions",
				Verdict: finalizev1alpha1.VerdictGone, Evidence: "\"actions\": []", Result: finalizev1alpha1.ResultWouldRemove})
		}
		return out
	}
	incomplete := []finalizev1alpha1.IncompleteResource{{GroupVersion: "example.com/v1", Resource: "items", Reason: finalizev1alpha1.ReasonListFailed, Message: "forbidden"}}
	for _, tc := range []struct {
		name string
		obj  runtime.Object
	}{
		{"no items", &finalizev1alpha1.StuckObjectList{TypeMeta: metav1.TypeMeta{APIVersion: "finalize.kubectl.io/v1alpha1", Kind: "StuckObjectList"}}},
		{"empty items", &finalizev1alpha1.StuckObjectList{TypeMeta: metav1.TypeMeta{APIVersion: "finalize.kubectl.io/v1alpha1", Kind: "StuckObjectList"}, Items: []finalizev1alpha1.StuckObject{}}},
		{"one item", &finalizev1alpha1.StuckObjectList{TypeMeta: metav1.TypeMeta{APIVersion: "finalize.kubectl.io/v1alpha1", Kind: "StuckObjectList"}, Items: items(1)}},
		{"many items and what follows", &finalizev1alpha1.StuckObjectList{TypeMeta: metav1.TypeMeta{APIVersion: "finalize.kubectl.io/v1alpha1", Kind: "StuckObjectList"}, Items: items(50), Incomplete: incomplete}},
		{"a diagnosis", &finalizev1alpha1.Diagnosis{TypeMeta: metav1.TypeMeta{APIVersion: "finalize.kubectl.io/v1alpha1", Kind: "Diagnosis"},
			RootCauses: []finalizev1alpha1.RootCause{{Reason: finalizev1alpha1.ReasonUnknown, Message: "items", Objects: []finalizev1alpha1.ObjectReference{item(1).Target}}},
			Items:      items(3), Incomplete: incomplete}},
		{"a reconcile pass", &finalizev1alpha1.ReconcileReport{TypeMeta: metav1.TypeMeta{APIVersion: "finalize.kubectl.io/v1alpha1", Kind: "ReconcileReport"},
			Policy: "p.yaml", Actions: removals(20), Summary: map[finalizev1alpha1.RemovalResult]int{finalizev1alpha1.ResultWouldRemove: 20},
			Rules: []finalizev1alpha1.RuleStatus{{Rule: "actions"}}, Incomplete: incomplete}},
		{"a pass that did nothing", &finalizev1alpha1.ReconcileReport{TypeMeta: metav1.TypeMeta{APIVersion: "finalize.kubectl.io/v1alpha1", Kind: "ReconcileReport"},
			Actions: []finalizev1alpha1.Removal{}, Summary: map[finalizev1alpha1.RemovalResult]int{}}},
		{"a plan and its refusals", &finalizev1alpha1.RemovalPlan{TypeMeta: metav1.TypeMeta{APIVersion: "finalize.kubectl.io/v1alpha1", Kind: "RemovalPlan"},
			DryRun: "client", Actions: removals(3), Refusals: removals(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got bytes.Buffer
			if err := (&printers.JSONPrinter{}).PrintObj(tc.obj, &want); err != nil {
				t.Fatal(err)
			}
			if err := (&jsonPrinter{}).PrintObj(tc.obj, &got); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("streamed:\n%s\nkubectl's:\n%s", got.String(), want.String())
			}
		})
	}
}
