package printer

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// TestRootCausesAtScale: 30 objects of one dead operator say its sentence once and list
// the objects compactly, by namespace.
func TestRootCausesAtScale(t *testing.T) {
	d := &finalizev1alpha1.Diagnosis{}
	root := finalizev1alpha1.RootCause{Reason: "ControllerInactive", Subject: finalizev1alpha1.Subject{Kind: "Controller", Name: "db-operator"},
		Message: "db-operator is not removing its finalizers", NextStep: "bring db-operator back so it finishes its cleanup"}
	for i := range 30 {
		ns := "team-a"
		if i >= 12 {
			ns = "team-b"
		}
		ref := finalizev1alpha1.ObjectReference{APIVersion: "db.example.com/v1", Kind: "Database", Resource: "databases", Namespace: ns,
			Name: fmt.Sprintf("db-%02d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))}
		d.Items = append(d.Items, finalizev1alpha1.StuckObject{Target: ref, TerminatingSeconds: int64(3600 * (30 - i)),
			Cause: &finalizev1alpha1.Cause{Reason: "ControllerInactive", Message: "db-operator has written nothing since the deletion began"}})
		root.Objects = append(root.Objects, ref)
	}
	nsRef := finalizev1alpha1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Resource: "namespaces", Name: "team-b", UID: "uid-ns"}
	d.Items = append(d.Items, finalizev1alpha1.StuckObject{Target: nsRef, TerminatingSeconds: 60,
		Cause: &finalizev1alpha1.Cause{Reason: "NamespaceFinalizersRemaining", Message: "content has finalizers"}})
	root.Objects = append(root.Objects, nsRef)
	d.RootCauses = []finalizev1alpha1.RootCause{root}
	var buf bytes.Buffer
	if err := RootCauses(&buf, d); err != nil {
		t.Fatal(err)
	}
	golden(t, "root-causes-at-scale.golden", buf.Bytes())
	if n := strings.Count(buf.String(), "has written nothing"); n != 1 {
		t.Errorf("the cause is said %d times", n)
	}
}

func TestRemovals(t *testing.T) {
	target := finalizev1alpha1.ObjectReference{APIVersion: "db.example.com/v1", Kind: "Database", Resource: "databases", Namespace: "prod", Name: "orders"}
	removals := []finalizev1alpha1.Removal{
		{Target: target, Finalizer: "db.example.com/finalizer", Owner: "db-operator", Cause: "ControllerInactive", Rule: "dbs", Verdict: "Gone", Evidence: "GET https://dbapi/v1/instances/i-1: 404 Not Found", Result: "Removed"},
		{Target: target, Finalizer: "b.example.com/x", Rule: "dbs", Verdict: "Present", Evidence: "GET https://dbapi/v1/instances/i-2: 200 OK", Result: "Kept"},
		{Target: target, Finalizer: "c.example.com/y", Owner: "c-operator", Reason: "INC-1", Result: "Failed", Error: "a webhook refused"},
		{Target: target, Finalizer: "d.example.com/z", Rule: "dbs", Verdict: "Present", Evidence: "200 OK", Reason: "INC-2", Result: "WouldRemove"},
	}
	var buf bytes.Buffer
	if err := Removals(&buf, removals, RemovalTableOptions{Results: true}); err != nil {
		t.Fatal(err)
	}
	golden(t, "removals.golden", buf.Bytes())
}

// TestTheHeadlineCountsClusterScopedObjects: stuck objects without a namespace are not
// counted "in 0 namespaces" (#38).
func TestTheHeadlineCountsClusterScopedObjects(t *testing.T) {
	obj := func(ns, name string) finalizev1alpha1.StuckObject {
		return finalizev1alpha1.StuckObject{Target: finalizev1alpha1.ObjectReference{APIVersion: "kubernetes.crossplane.io/v1alpha2", Kind: "Object", Resource: "objects",
			Namespace: ns, Name: name, UID: types.UID(ns + name)}, Cause: &finalizev1alpha1.Cause{Reason: "Unknown", Message: "m"}}
	}
	for _, tc := range []struct {
		items []finalizev1alpha1.StuckObject
		want  string
	}{
		{[]finalizev1alpha1.StuckObject{obj("", "a"), obj("", "b")}, "2 stuck objects, all cluster-scoped, explained by 0 root causes.\n"},
		{[]finalizev1alpha1.StuckObject{obj("", "a"), obj("team-a", "b"), obj("team-b", "c")}, "3 stuck objects in 2 namespaces and 1 cluster-scoped, explained by 0 root causes.\n"},
		{[]finalizev1alpha1.StuckObject{obj("team-a", "b")}, "1 stuck object in 1 namespace, explained by 0 root causes.\n"},
	} {
		var buf bytes.Buffer
		if err := RootCauses(&buf, &finalizev1alpha1.Diagnosis{Items: tc.items}); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := strings.Cut(buf.String(), "\n"); got+"\n" != tc.want {
			t.Errorf("headline %q, want %q", got, tc.want)
		}
	}
}
