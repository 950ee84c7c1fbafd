package reconcile

import (
	"testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// TestAKeptFinalizerIsReportedInFull: the report's row of a finalizer the pass keeps
// names its field, its owner and the object's cause, as the row of a removed one does
// (a Kept row once printed OWNER <unknown> for an owner the scan knew).
func TestAKeptFinalizerIsReportedInFull(t *testing.T) {
	p := &plan.Plan{Refusals: []plan.Refusal{{
		Removal: finalizev1alpha1.Removal{Target: finalizev1alpha1.ObjectReference{Name: "billing"}, Finalizer: "db.example.com/finalizer",
			Field: finalizev1alpha1.FieldMetadataFinalizers, Owner: "db-operator", Cause: finalizev1alpha1.ReasonControllerInactive,
			Kind: finalizev1alpha1.RefusalUnverified, Message: "rule dbs: the provider answered Present"},
		Verification: plan.Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictPresent, Evidence: "200 OK"},
	}}}
	got := refusals(p)
	if len(got) != 1 {
		t.Fatalf("want one row, got %+v", got)
	}
	r := got[0]
	if r.Result != finalizev1alpha1.ResultKept || r.Field != finalizev1alpha1.FieldMetadataFinalizers || r.Owner != "db-operator" ||
		r.Cause != finalizev1alpha1.ReasonControllerInactive || r.Rule != "dbs" || r.Verdict != finalizev1alpha1.VerdictPresent {
		t.Errorf("the kept row is %+v", r)
	}
}
