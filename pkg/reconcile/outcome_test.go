package reconcile

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
)

// TestARuleThatCannotVerifyFailsThePass: exit 1, naming each rule and its cause, with
// everything else that failed; never above the breaker, always above an incomplete scan.
func TestARuleThatCannotVerifyFailsThePass(t *testing.T) {
	cannot := finalizev1alpha1.RuleStatus{Rule: "dbs", CannotVerify: "header Authorization: environment variable DB_TOKEN is empty"}
	tests := []struct {
		name string
		rep  finalizev1alpha1.ReconcileReport
		code Outcome
		why  string
	}{
		{"one rule", finalizev1alpha1.ReconcileReport{Rules: []finalizev1alpha1.RuleStatus{cannot}}, OutcomeFailed,
			"rule dbs cannot verify: header Authorization: environment variable DB_TOKEN is empty"},
		{"with a broken rule and a failed removal", finalizev1alpha1.ReconcileReport{
			Rules:   []finalizev1alpha1.RuleStatus{{Rule: "typo", Broken: true}, cannot},
			Summary: map[finalizev1alpha1.RemovalResult]int{finalizev1alpha1.ResultFailed: 2}}, OutcomeFailed,
			"2 of the removals failed; rule typo is broken: its provider called a live object gone, so nothing was removed under it; " +
				"rule dbs cannot verify: header Authorization: environment variable DB_TOKEN is empty"},
		{"above an incomplete scan", finalizev1alpha1.ReconcileReport{Rules: []finalizev1alpha1.RuleStatus{cannot},
			Incomplete: []finalizev1alpha1.IncompleteResource{{GroupVersion: "metrics.k8s.io/v1beta1"}}}, OutcomeFailed,
			"rule dbs cannot verify: header Authorization: environment variable DB_TOKEN is empty"},
		{"below the breaker", finalizev1alpha1.ReconcileReport{Rules: []finalizev1alpha1.RuleStatus{cannot}, Breaker: &finalizev1alpha1.Breaker{Planned: 30, MaxRemovals: 20}}, OutcomeBreaker,
			"the breaker tripped: the pass planned 30 removals, more than the 20 allowed; nothing was removed"},
		{"the breaker of force deletions", finalizev1alpha1.ReconcileReport{Breaker: &finalizev1alpha1.Breaker{Planned: 7, MaxRemovals: 20, PlannedForceDeletions: 6, MaxForceDeletions: 5}}, OutcomeBreaker,
			"the breaker tripped: the pass planned 6 force deletions of pods, more than the 5 allowed (maxForceDeletions); nothing was removed"},
		{"a rule that was merely not trusted", finalizev1alpha1.ReconcileReport{Rules: []finalizev1alpha1.RuleStatus{{Rule: "young", Distrust: "no live object carries ..."}}}, OutcomeOK, ""},
	}
	for _, tt := range tests {
		if code, why := OutcomeOf(&tt.rep); code != tt.code || why != tt.why {
			t.Errorf("%s: %s %q; want %s %q", tt.name, code, why, tt.code, tt.why)
		}
	}
}

// TestTheMetricsSayARuleCannotVerify: the gauge follows the last pass, so an alert clears
// once the credential is fixed.
func TestTheMetricsSayARuleCannotVerify(t *testing.T) {
	p, errs, _ := policy.Compile(&finalizev1alpha1.Policy{Rules: []finalizev1alpha1.Rule{{Name: "dbs", Finalizers: []string{"db.example.com/finalizer"},
		Verify: finalizev1alpha1.Verify{HTTP: &finalizev1alpha1.HTTPProvider{URL: "https://db.example.com/{.metadata.name}"}}}}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	m := NewMetrics(p)
	gauge := func() float64 { return testutil.ToFloat64(m.cannotVerify.WithLabelValues("dbs")) }
	if g := gauge(); g != 0 {
		t.Fatalf("before any pass: %v", g)
	}
	m.Observe(&finalizev1alpha1.ReconcileReport{Rules: []finalizev1alpha1.RuleStatus{{Rule: "dbs", CannotVerify: "header Authorization: environment variable DB_TOKEN is empty"}}}, nil)
	if g := gauge(); g != 1 {
		t.Errorf("after a pass that could not verify: %v, want 1", g)
	}
	m.Observe(&finalizev1alpha1.ReconcileReport{Rules: []finalizev1alpha1.RuleStatus{{Rule: "dbs"}}}, nil)
	if g := gauge(); g != 0 {
		t.Errorf("after a pass that could: %v, want 0", g)
	}
}
