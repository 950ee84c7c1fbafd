package plan

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

var configmaps = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

// verifierFunc is a Verifier for planner unit tests.
type verifierFunc func(VerifyRequest) Verification

func (f verifierFunc) Verify(_ context.Context, req VerifyRequest) Verification { return f(req) }

func TestPlanWithAVerifier(t *testing.T) {
	ts := metav1.NewTime(time.Now().Add(-time.Hour))
	db := &kube.Object{Resource: configmaps, Meta: metav1.ObjectMeta{Namespace: "a", Name: "db", UID: types.UID("uid-db"), DeletionTimestamp: &ts},
		Finalizers: []finalizev1alpha1.Finalizer{{Name: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers, Owner: "db-operator"}, {Name: "orphan", Field: finalizev1alpha1.FieldMetadataFinalizers, System: true},
			// Marked by nothing: a name Kubernetes reserves is system all the same.
			{Name: "example.kubernetes.io/cleanup", Field: finalizev1alpha1.FieldMetadataFinalizers, Owner: "cleaner", OwnerSource: finalizev1alpha1.OwnerSourceManagedFields}}}
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
		{"a distrusted gone is refused", Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictGone, Status: Distrusted, Detail: "the provider is broken"}, "db.example.com/finalizer", Options{},
			finalizev1alpha1.RefusalUnverified, "rule dbs cannot be trusted: the provider is broken", false},
		{"too young", Verification{Rule: "dbs", Status: TooYoung, Evidence: "terminating for 60s"}, "db.example.com/finalizer", Options{},
			finalizev1alpha1.RefusalTooYoung, "rule dbs does not verify it yet: terminating for 60s", false},
		{"retained without allowRetained", Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictRetained, Evidence: "deletionPolicy: Orphan"}, "db.example.com/finalizer", Options{},
			finalizev1alpha1.RefusalUnverified, "retained by design", false},
		{"retained with allowRetained", Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictRetained, AllowRetained: true}, "db.example.com/finalizer", Options{}, "", "", false},
		{"a system finalizer stays protected whatever the provider says", gone, "orphan", Options{}, finalizev1alpha1.RefusalSystem, "system finalizer", false},
		{"a rule may allow a system finalizer in reconcile", func() Verification { v := gone; v.AllowSystem = true; return v }(), "orphan", Options{SystemByRule: true}, "", "", false},
		{"a name Kubernetes reserves is system, whatever marked it", gone, "example.kubernetes.io/cleanup", Options{}, finalizev1alpha1.RefusalSystem,
			"it is a system finalizer: its domain example.kubernetes.io is under kubernetes.io, and Kubernetes reserves such names for its own components (owner cleaner, from managedFields)", false},
		{"a rule may allow it in reconcile", func() Verification { v := gone; v.AllowSystem = true; return v }(), "example.kubernetes.io/cleanup", Options{SystemByRule: true}, "", "", false},
		{"--allow-system allows it", gone, "example.kubernetes.io/cleanup", Options{AllowSystem: true}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inactive := &finalizev1alpha1.Cause{Reason: finalizev1alpha1.ReasonControllerInactive}
			planner := &Planner{Result: res, Verifier: verifierFunc(func(VerifyRequest) Verification { return tt.answer }),
				CauseOf: func(*kube.Object) *finalizev1alpha1.Cause { return inactive }}
			p := planner.Plan(context.Background(), []Request{{Object: db, Finalizers: []string{tt.finalizer}}}, tt.opts)
			if tt.wantKind != "" {
				if len(p.Refusals) != 1 || p.Refusals[0].Kind != tt.wantKind || !strings.Contains(p.Refusals[0].Message, tt.wantWhy) {
					t.Fatalf("want a %s refusal saying %q, got %+v", tt.wantKind, tt.wantWhy, p)
				}
				if r := p.Refusals[0].API(); r.Rule != tt.answer.Rule || r.Verdict != tt.answer.Verdict {
					t.Errorf("the refusal keeps the provider's answer: %+v", r)
				}
				// A kept finalizer is reported as fully as a removed one: its field, its
				// owner and the object's cause.
				fin := db.Finalizers[slices.IndexFunc(db.Finalizers, func(f finalizev1alpha1.Finalizer) bool { return f.Name == tt.finalizer })]
				if r := p.Refusals[0]; r.Field != fin.Field || r.Owner != fin.Owner || r.Cause != inactive.Reason {
					t.Errorf("the refusal lost the finalizer's field, owner or cause: %+v", r)
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

// TestPlanRefuses covers every refusal, and shows the flags that unlock each.
func TestPlanRefuses(t *testing.T) {
	ts := metav1.NewTime(time.Now().Add(-time.Hour))
	obj := func(r kube.Resource, ns, name string, fins ...finalizev1alpha1.Finalizer) *kube.Object {
		return &kube.Object{Resource: r, Meta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), DeletionTimestamp: &ts}, Finalizers: fins}
	}
	custom := finalizev1alpha1.Finalizer{Name: "db.example.com/finalizer", Field: "metadata.finalizers", Owner: "database-operator", OwnerSource: "managedFields"}
	pvcFin := finalizev1alpha1.Finalizer{Name: "kubernetes.io/pvc-protection", Field: "metadata.finalizers", System: true, Owner: "pvc-protection controller (kube-controller-manager)"}
	nsFin := finalizev1alpha1.Finalizer{Name: "kubernetes", Field: "spec.finalizers", System: true, Owner: "namespace controller (kube-controller-manager)"}
	db := obj(configmaps, "a", "db", custom)
	claim := obj(kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, Kind: "PersistentVolumeClaim", Namespaced: true}, "a", "data", pvcFin)
	nsRes := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}
	full := obj(nsRes, "", "full", nsFin)
	empty := obj(nsRes, "", "empty", nsFin)
	res := &scan.Result{Objects: []*kube.Object{db, claim, full, empty}, Index: &scan.Index{Content: map[string]*scan.NamespaceContent{
		"full": {Count: 2, ByType: map[string]int64{"configmaps": 2}, Sample: []scan.Seen{{Ref: kube.Ref{Resource: configmaps, Namespace: "full", Name: "left"}}}},
	}}}
	causeOf := func(*kube.Object) *finalizev1alpha1.Cause { return nil }
	tests := []struct {
		name     string
		req      Request
		opts     Options
		wantKind finalizev1alpha1.RefusalKind
		wantWhy  string
	}{
		{"unverified", Request{Object: db, Finalizers: []string{custom.Name}}, Options{}, finalizev1alpha1.RefusalUnverified, "nothing verified that what the finalizer guards is done"},
		{"forced without a reason", Request{Object: db, Finalizers: []string{custom.Name}}, Options{ForceUnverified: true}, finalizev1alpha1.RefusalUnverified, "nothing verified"},
		{"forced", Request{Object: db, Finalizers: []string{custom.Name}}, Options{ForceUnverified: true, Reason: "INC-1"}, "", ""},
		{"no such finalizer", Request{Object: db, Finalizers: []string{"nope"}}, Options{ForceUnverified: true, Reason: "x"}, finalizev1alpha1.RefusalNoSuchFinalizer, "it has no such finalizer (it has: db.example.com/finalizer)"},
		{"system", Request{Object: claim, All: true}, Options{ForceUnverified: true, Reason: "x"}, finalizev1alpha1.RefusalSystem, "system finalizer of pvc-protection controller"},
		{"system allowed", Request{Object: claim, All: true}, Options{ForceUnverified: true, Reason: "x", AllowSystem: true}, "", ""},
		{"namespace with content", Request{Object: full, All: true}, Options{ForceUnverified: true, Reason: "x", AllowSystem: true}, finalizev1alpha1.RefusalStranding, "the namespace still holds 2 objects (configmaps: 2: configmaps/left, ...)"},
		{"namespace with content, stranding allowed", Request{Object: full, All: true}, Options{ForceUnverified: true, Reason: "x", AllowSystem: true, AllowStranding: true}, "", ""},
		{"empty namespace", Request{Object: empty, All: true}, Options{ForceUnverified: true, Reason: "x", AllowSystem: true}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := (&Planner{Result: res, CauseOf: causeOf, Catalog: owner.Builtin()}).Plan(context.Background(), []Request{tt.req}, tt.opts)
			if tt.wantWhy == "" {
				if len(p.Refusals) != 0 || len(p.Actions) != 1 {
					t.Fatalf("want one action, got %+v", p)
				}
				return
			}
			if len(p.Refusals) != 1 || len(p.Actions) != 0 {
				t.Fatalf("want one refusal, got %+v", p)
			}
			r := p.Refusals[0]
			if r.Kind != tt.wantKind || !strings.Contains(r.Message, tt.wantWhy) {
				t.Errorf("refusal %+v, want kind %q and why containing %q", r, tt.wantKind, tt.wantWhy)
			}
		})
	}
	// An object the API server cannot read, in a namespace whose index says empty and
	// a scan with nothing incomplete (the gate named its key): the namespace is not empty.
	res.Unreadable = []scan.Unreadable{{Resource: configmaps, Namespace: "empty", Name: "bad", Key: "/registry/configmaps/empty/bad", Message: "corrupt object"}}
	p := (&Planner{Result: res, CauseOf: causeOf}).Plan(context.Background(), []Request{{Object: empty, All: true}}, Options{ForceUnverified: true, Reason: "x", AllowSystem: true})
	if len(p.Refusals) != 1 || p.Refusals[0].Kind != finalizev1alpha1.RefusalStranding || !strings.Contains(p.Refusals[0].Message, "objects the API server cannot read (configmaps/bad)") {
		t.Errorf("an unreadable object: %+v", p)
	}
	res.Unreadable = nil
	// With an incomplete scan, an empty-looking namespace is not proven empty.
	res.Incomplete = []finalizev1alpha1.IncompleteResource{{GroupVersion: "metrics.example.com/v1", Reason: "DiscoveryFailed"}}
	p = (&Planner{Result: res, CauseOf: causeOf}).Plan(context.Background(), []Request{{Object: empty, All: true}}, Options{ForceUnverified: true, Reason: "x", AllowSystem: true})
	if len(p.Refusals) != 1 || p.Refusals[0].Kind != finalizev1alpha1.RefusalStranding || !strings.Contains(p.Refusals[0].Message, "the scan could not list metrics.example.com/v1") {
		t.Errorf("incomplete scan: %+v", p)
	}
}
