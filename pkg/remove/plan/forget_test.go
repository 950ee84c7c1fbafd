package plan

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// forgetful is a Verifier that keeps its answers until told to forget them.
type forgetful struct {
	mu        sync.Mutex
	asked     int
	forgotten int // how many had been asked when it was told to forget
}

func (f *forgetful) Verify(context.Context, VerifyRequest) Verification {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	return Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictGone, Status: Answered, Evidence: "404"}
}

func (f *forgetful) ForgetAnswers() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten = f.asked
}

// TestAPlanLetsItsAnswersGo: a verifier that keeps answers is told to let them go once
// every request of the plan was asked, not before, and the plan holds what it was told.
func TestAPlanLetsItsAnswersGo(t *testing.T) {
	ts := metav1.NewTime(time.Now().Add(-time.Hour))
	var reqs []Request
	var objs []*kube.Object
	for _, name := range []string{"a", "b", "c"} {
		o := &kube.Object{Resource: configmaps, Meta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), DeletionTimestamp: &ts},
			Finalizers: []finalizev1alpha1.Finalizer{{Name: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers}}}
		objs = append(objs, o)
		reqs = append(reqs, Request{Object: o, All: true})
	}
	f := &forgetful{forgotten: -1}
	p := (&Planner{Result: &scan.Result{Objects: objs, Index: &scan.Index{}}, Verifier: f}).Plan(context.Background(), reqs, Options{})
	if f.forgotten != 3 {
		t.Errorf("told to forget after %d of 3 answers, want after all of them (-1: never)", f.forgotten)
	}
	if len(p.Actions) != 3 || len(p.Refusals) != 0 {
		t.Fatalf("plan: %+v", p)
	}
	for i, a := range p.Actions {
		if !a.Verified || a.Verification.Evidence != "404" || a.Name != objs[i].Meta.Name {
			t.Errorf("action %d: %+v", i, a)
		}
	}
}
