package printer

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/printer -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test ./pkg/printer -update if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func fixture() *finalizev1alpha1.StuckObjectList {
	deleted := metav1.NewTime(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
	return &finalizev1alpha1.StuckObjectList{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubectl-finalize.github.io/v1alpha1", Kind: "StuckObjectList"},
		Items: []finalizev1alpha1.StuckObject{
			{
				Target:             finalizev1alpha1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Resource: "namespaces", Name: "team-a", UID: "0f1c2d3e-0000-4000-8000-000000000001"},
				DeletionTimestamp:  deleted,
				TerminatingSeconds: 93784,
				Finalizers:         []finalizev1alpha1.Finalizer{{Name: "kubernetes", Field: "spec.finalizers", Owner: "namespace controller (kube-controller-manager)", OwnerSource: "catalog", System: true}},
				Cause:              &finalizev1alpha1.Cause{Reason: "NamespaceContentRemaining", Message: "1 object remains"},
			},
			{
				Target:            finalizev1alpha1.ObjectReference{APIVersion: "db.example.com/v1", Kind: "Database", Resource: "databases", Namespace: "team-a", Name: "orders", UID: "0f1c2d3e-0000-4000-8000-000000000002"},
				DeletionTimestamp: deleted, TerminatingSeconds: 93780,
				Finalizers: []finalizev1alpha1.Finalizer{
					{Name: "db.example.com/finalizer", Field: "metadata.finalizers", Owner: "database-operator", OwnerSource: "managedFields", AddedBy: "database-operator"},
					{Name: "backup.example.com/snapshot", Field: "metadata.finalizers", Owner: "backup.example.com", OwnerSource: "apiGroup", AddedBy: "kubectl-client-side-apply"},
				},
			},
			{
				Target:            finalizev1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments", Namespace: "web", Name: "frontend", UID: "0f1c2d3e-0000-4000-8000-000000000003"},
				DeletionTimestamp: metav1.NewTime(deleted.Add(26 * time.Hour)), TerminatingSeconds: 125,
				Finalizers: []finalizev1alpha1.Finalizer{
					{Name: "foregroundDeletion", Field: "metadata.finalizers", Owner: "garbage collector (kube-controller-manager)", OwnerSource: "catalog", System: true},
					{Name: "example.com/unknown", Field: "metadata.finalizers", OwnerSource: "unknown"},
				},
			},
		},
		Incomplete: []finalizev1alpha1.IncompleteResource{},
	}
}

// TestAPodWaitsForItsKubelet: a pod whose grace period is over shows <none> for
// finalizers and the kubelet of its node as the one it waits for, before its finalizers'
// owners when it has some.
func TestAPodWaitsForItsKubelet(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
	list := &finalizev1alpha1.StuckObjectList{Items: []finalizev1alpha1.StuckObject{
		{Target: finalizev1alpha1.ObjectReference{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: "shop", Name: "db-0"},
			DeletionTimestamp: deleted, TerminatingSeconds: 600, Finalizers: []finalizev1alpha1.Finalizer{}, WaitsFor: &finalizev1alpha1.WaitsFor{Node: "worker-3"}},
		{Target: finalizev1alpha1.ObjectReference{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: "shop", Name: "web-1"},
			DeletionTimestamp: deleted, TerminatingSeconds: 300, WaitsFor: &finalizev1alpha1.WaitsFor{Node: "worker-4"},
			Finalizers: []finalizev1alpha1.Finalizer{{Name: "example.com/drain", Field: "metadata.finalizers", Owner: "drainer", OwnerSource: "managedFields"}}},
	}}
	var buf bytes.Buffer
	if err := StuckTable(&buf, list, StuckTableOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "stuck-table-pods.golden", buf.Bytes())
}

func TestStuckTable(t *testing.T) {
	for name, opts := range map[string]StuckTableOptions{
		"stuck-table.golden":            {},
		"stuck-table-wide.golden":       {Wide: true},
		"stuck-table-no-headers.golden": {NoHeaders: true},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := StuckTable(&buf, fixture(), opts); err != nil {
				t.Fatal(err)
			}
			golden(t, name, buf.Bytes())
		})
	}
}

func TestStuckNames(t *testing.T) {
	var buf bytes.Buffer
	if err := StuckNames(&buf, fixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "stuck-names.golden", buf.Bytes())
}
