package remove

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// verifierFunc is a Verifier for planner and executor unit tests.
type verifierFunc func(VerifyRequest) Verification

func (f verifierFunc) Verify(_ context.Context, req VerifyRequest) Verification { return f(req) }

func pinnedAction(rv string) Action {
	return Action{
		Target:       Target{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1", Finalizer: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers, ResourceVersion: rv},
		Finalizer:    finalizev1alpha1.Finalizer{Name: "db.example.com/finalizer"},
		Verification: Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictGone, Evidence: "404", ResourceVersion: rv},
		Verified:     true,
	}
}

func patchesOf(c *metadatafake.FakeMetadataClient) []string {
	var out []string
	for _, a := range c.Actions() {
		if p, ok := a.(clienttesting.PatchActionImpl); ok {
			out = append(out, string(p.GetPatch()))
		}
	}
	return out
}

// TestAChangedObjectIsVerifiedAgainBeforeTheWrite: the object changed after it was
// verified; it is verified again, fresh, and the write is pinned to the new version.
func TestAChangedObjectIsVerifiedAgainBeforeTheWrite(t *testing.T) {
	for _, tt := range []struct {
		name    string
		answer  Verification
		patches int
		err     string
	}{
		{"still gone", Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictGone, ResourceVersion: "8"}, 1, ""},
		{"present now", Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictPresent, Evidence: "200 OK", ResourceVersion: "8"}, 0, "not verified any more: Present: 200 OK"},
		{"no longer matched", Verification{}, 0, "no rule matches it any more"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = metav1.AddMetaToScheme(scheme)
			obj := fakeObject("1", "db.example.com/finalizer")
			obj.ResourceVersion = "8"
			client := metadatafake.NewSimpleMetadataClient(scheme, obj)
			var asked []bool
			ex := &Executor{Remover: &Remover{Metadata: client}, Auditor: &Auditor{Kube: kubefake.NewClientset(), Log: &strings.Builder{}, User: "tester"},
				Verifier: verifierFunc(func(req VerifyRequest) Verification {
					asked = append(asked, req.Fresh)
					return tt.answer
				})}
			_, err := ex.Execute(context.Background(), []Action{pinnedAction("7")})
			if len(asked) != 1 || !asked[0] {
				t.Errorf("verified again %v times (fresh: %v), want once, fresh", len(asked), asked)
			}
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("error %v, want %q", err, tt.err)
			}
			patches := patchesOf(client)
			if len(patches) != tt.patches {
				t.Fatalf("patches %q, want %d", patches, tt.patches)
			}
			if tt.patches == 1 && !strings.Contains(patches[0], `{"op":"test","path":"/metadata/resourceVersion","value":"8"}`) {
				t.Errorf("the write is not pinned to the version verified again: %s", patches[0])
			}
		})
	}
}

func TestAPinnedWriteWithoutAVerifierIsRefused(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	obj := fakeObject("1", "db.example.com/finalizer")
	obj.ResourceVersion = "8"
	client := metadatafake.NewSimpleMetadataClient(scheme, obj)
	_, err := (&Remover{Metadata: client}).Remove(context.Background(), pinnedAction("7").Target, DryRunNone)
	if !errors.Is(err, ErrNotReverified) || len(patchesOf(client)) != 0 {
		t.Errorf("got %v and patches %q", err, patchesOf(client))
	}
	// Unchanged: the patch tests the version verified.
	obj.ResourceVersion = "7"
	client = metadatafake.NewSimpleMetadataClient(scheme, obj)
	if _, err := (&Remover{Metadata: client}).Remove(context.Background(), pinnedAction("7").Target, DryRunNone); err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"test","path":"/metadata/uid","value":"uid-1"},{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"test","path":"/metadata/finalizers/0","value":"db.example.com/finalizer"},{"op":"remove","path":"/metadata/finalizers/0"}]`
	if p := patchesOf(client); len(p) != 1 || p[0] != want {
		t.Errorf("patch %q\nwant %s", p, want)
	}
}
