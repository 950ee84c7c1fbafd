package remove

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

func TestPlanWithAVerifier(t *testing.T) {
	ts := metav1.NewTime(time.Now().Add(-time.Hour))
	db := &kube.Object{Resource: configmaps, Meta: metav1.ObjectMeta{Namespace: "a", Name: "db", UID: types.UID("uid-db"), DeletionTimestamp: &ts},
		Finalizers: []finalizev1alpha1.Finalizer{{Name: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers}, {Name: "orphan", Field: finalizev1alpha1.FieldMetadataFinalizers, System: true}}}
	res := &scan.Result{Objects: []*kube.Object{db}, Index: &scan.Index{}}
	gone := Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictGone, Evidence: "GET /v1/i-1: 404 Not Found", ResourceVersion: "7"}
	tests := []struct {
		name       string
		answer     Verification
		finalizer  string
		opts       Options
		wantKind   finalizev1alpha1.RefusalKind
		wantWhy    string
		wantForced bool
	}{
		{"gone is verified and pinned", gone, "db.example.com/finalizer", Options{}, "", "", false},
		{"present is refused with the evidence", Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictPresent, Evidence: "GET /v1/i-1: 200 OK"}, "db.example.com/finalizer", Options{},
			finalizev1alpha1.RefusalUnverified, "rule dbs: the provider answered Present: GET /v1/i-1: 200 OK", false},
		{"present can be forced, with the verdict kept", Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictPresent, Evidence: "200 OK"}, "db.example.com/finalizer",
			Options{ForceUnverified: true, Reason: "INC-9"}, "", "", true},
		{"a distrusted gone is refused", Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictGone, Distrust: "the provider is broken"}, "db.example.com/finalizer", Options{},
			finalizev1alpha1.RefusalUnverified, "rule dbs cannot be trusted: the provider is broken", false},
		{"too young", Verification{Rule: "dbs", TooYoung: true, Evidence: "terminating for 60s"}, "db.example.com/finalizer", Options{},
			finalizev1alpha1.RefusalTooYoung, "rule dbs does not verify it yet: terminating for 60s", false},
		{"retained without allowRetained", Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictRetained, Evidence: "deletionPolicy: Orphan"}, "db.example.com/finalizer", Options{},
			finalizev1alpha1.RefusalUnverified, "retained by design", false},
		{"retained with allowRetained", Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictRetained, AllowRetained: true}, "db.example.com/finalizer", Options{}, "", "", false},
		{"a system finalizer stays protected whatever the provider says", gone, "orphan", Options{}, finalizev1alpha1.RefusalSystem, "system finalizer", false},
		{"a rule may allow a system finalizer in reconcile", func() Verification { v := gone; v.AllowSystem = true; return v }(), "orphan", Options{SystemByRule: true}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			planner := &Planner{Result: res, Verifier: verifierFunc(func(VerifyRequest) Verification { return tt.answer })}
			p := planner.Plan(context.Background(), []Request{{Object: db, Finalizers: []string{tt.finalizer}}}, tt.opts)
			if tt.wantKind != "" {
				if len(p.Refusals) != 1 || p.Refusals[0].Kind != tt.wantKind || !strings.Contains(p.Refusals[0].Why, tt.wantWhy) {
					t.Fatalf("want a %s refusal saying %q, got %+v", tt.wantKind, tt.wantWhy, p)
				}
				if r := p.Refusals[0].API(); r.Rule != tt.answer.Rule || r.Verdict != tt.answer.Verdict {
					t.Errorf("the refusal keeps the provider's answer: %+v", r)
				}
				return
			}
			if len(p.Actions) != 1 || len(p.Refusals) != 0 {
				t.Fatalf("want one action, got %+v", p)
			}
			a := p.Actions[0]
			if a.Verified == tt.wantForced || (a.Verified && a.ResourceVersion != tt.answer.ResourceVersion) || (!a.Verified && a.ResourceVersion != "") {
				t.Errorf("action %+v", a)
			}
			if api := a.API(); api.Rule != tt.answer.Rule || api.Verdict != tt.answer.Verdict || api.Forced() != tt.wantForced {
				t.Errorf("the plan shows %+v", api)
			}
		})
	}
}
