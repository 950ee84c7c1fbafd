package remove

import (
	"context"
	"errors"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
)

var configmaps = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

const fin = "example.com/cleanup"

// stuck are configmaps being deleted, each held by fin, in namespace ns.
func stuck(ns string, names ...string) []runtime.Object {
	ts := metav1.Now()
	var objs []runtime.Object
	for _, name := range names {
		objs = append(objs, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Finalizers: []string{fin}, DeletionTimestamp: &ts}})
	}
	return objs
}

// forced is a plan that forces fin off each named configmap in namespace ns.
func forced(ns string, names ...string) *plan.Plan {
	p := &plan.Plan{}
	for _, name := range names {
		p.Actions = append(p.Actions, plan.Action{
			Target:    plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: ns, Name: name, UID: types.UID("uid-" + name)}, Finalizer: fin, Field: finalizev1alpha1.FieldMetadataFinalizers},
			Finalizer: finalizev1alpha1.Finalizer{Name: fin}, Reason: "INC-1",
		})
	}
	return p
}

// podsForced is forced's plan with each action turned into the force deletion of the
// configmap's namesake pod, whose finalizers stay.
func podsForced(names ...string) *plan.Plan {
	p := forced("a", names...)
	for i := range p.Actions {
		p.Actions[i].Kind, p.Actions[i].Finalizer, p.Actions[i].Target.Finalizer = plan.ForceDelete, finalizev1alpha1.Finalizer{}, ""
	}
	return p
}

// TestForceDeletionsHaveABreakerOfTheirOwn: a pass within maxRemovals that plans more
// force deletions than maxForceDeletions writes nothing; at the limit, it passes the gate.
func TestForceDeletionsHaveABreakerOfTheirOwn(t *testing.T) {
	g := Gates{Breaker: true, MaxRemovals: 20, MaxForceDeletions: 2}
	p := podsForced("one", "two")
	p.Actions = append(p.Actions, forced("a", "three").Actions...)
	api := &finalizev1alpha1.RemovalPlan{Actions: make([]finalizev1alpha1.Removal, len(p.Actions))}
	if stop, err := g.stop(p, api); stop != "" || err != nil {
		t.Errorf("two force deletions of two allowed: stopped by %q, %v", stop, err)
	}
	if n := ForceDeletions(p); n != 2 {
		t.Errorf("ForceDeletions: %d, want 2", n)
	}
	g.MaxForceDeletions = 1
	if stop, _ := g.stop(p, api); stop != Breaker || api.Actions[2].Result != finalizev1alpha1.ResultKept {
		t.Errorf("two force deletions of one allowed: stopped by %q, rows %+v", stop, api.Actions)
	}
}

func runner(kc *kubefake.Clientset, objs ...runtime.Object) (*Runner, *metadatafake.FakeMetadataClient) {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	meta := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	return &Runner{Clients: &client.Clients{Metadata: meta, Kube: kc}, DryRun: write.DryRunClient}, meta
}

// TestAGateStopsTheRunBeforeAnyWrite: each gate that stops a run says so, reads and
// writes nothing, and the breaker keeps every action saying why.
func TestAGateStopsTheRunBeforeAnyWrite(t *testing.T) {
	refused := forced("a", "one")
	refused.Refusals = []plan.Refusal{{Removal: finalizev1alpha1.Removal{Target: configmaps.Ref("a", "two", "uid-two"), Finalizer: fin, Kind: finalizev1alpha1.RefusalSystem, Message: "system"}}}
	for _, tt := range []struct {
		name    string
		plan    *plan.Plan
		gates   Gates
		want    Stop
		message string
	}{
		{"a refusal, all or nothing", refused, Gates{AllOrNothing: true}, Refused, ""},
		{"the breaker", forced("a", "one", "two"), Gates{Breaker: true, MaxRemovals: 1},
			Breaker, "not removed: the pass planned 2 removals, more than the 1 allowed (maxRemovals); nothing was written"},
		{"a breaker that allows none", forced("a", "one"), Gates{Breaker: true},
			Breaker, "not removed: the pass planned 1 removals, more than the 0 allowed (maxRemovals); nothing was written"},
		{"too many force deletions", podsForced("one", "two"), Gates{Breaker: true, MaxRemovals: 20, MaxForceDeletions: 1},
			Breaker, "not removed: the pass planned 2 force deletions of pods, more than the 1 allowed (maxForceDeletions); nothing was written"},
		{"declined", forced("a", "one"), Gates{Confirm: func(*finalizev1alpha1.RemovalPlan) (bool, error) { return false, nil }}, Declined, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, meta := runner(kubefake.NewClientset(), stuck("a", "one", "two")...)
			out, err := r.Act(context.Background(), tt.plan, tt.gates)
			if err != nil || out.Stopped != tt.want {
				t.Fatalf("Act: %+v, %v; want stopped by %s", out, err, tt.want)
			}
			if n := len(meta.Actions()); n != 0 {
				t.Errorf("%d requests sent; want none", n)
			}
			for _, row := range out.Plan.Actions {
				if row.Message != tt.message || (tt.message != "") != (row.Result == finalizev1alpha1.ResultKept) {
					t.Errorf("row %+v; want message %q", row, tt.message)
				}
			}
		})
	}
	r, _ := runner(kubefake.NewClientset())
	failed := errors.New("no terminal")
	if out, err := r.Act(context.Background(), forced("a", "one"), Gates{Confirm: func(*finalizev1alpha1.RemovalPlan) (bool, error) { return false, failed }}); out != nil || !errors.Is(err, failed) {
		t.Errorf("a confirmation that failed: %+v, %v; want no outcome and its error", out, err)
	}
}

// TestNoWriteWithoutAnAudit: a run that would write, and has nowhere to record what it
// does, fails before any gate and sends nothing; a dry run needs no audit.
func TestNoWriteWithoutAnAudit(t *testing.T) {
	r, meta := runner(kubefake.NewClientset(), stuck("a", "one")...)
	r.DryRun = write.DryRunNone
	confirmed := false
	out, err := r.Act(context.Background(), forced("a", "one"), Gates{Confirm: func(*finalizev1alpha1.RemovalPlan) (bool, error) { confirmed = true; return true, nil }})
	if out != nil || err == nil || !strings.Contains(err.Error(), "without an audit log") {
		t.Fatalf("Act: %+v, %v; want no outcome and the missing audit named", out, err)
	}
	if confirmed || len(meta.Actions()) != 0 {
		t.Errorf("confirmed %v, %d requests sent; want neither", confirmed, len(meta.Actions()))
	}
	r.DryRun = write.DryRunClient
	if out, err := r.Act(context.Background(), forced("a", "one"), Gates{}); err != nil || out.Plan.Actions[0].Result != finalizev1alpha1.ResultWouldRemove {
		t.Errorf("a client dry run without an audit: %+v, %v", out, err)
	}
}

// TestEachActionGetsItsResultOnce: the rows of the plan carry the result of each action
// in plan order: what the write did, or the permission it lacks.
func TestEachActionGetsItsResultOnce(t *testing.T) {
	kc := kubefake.NewClientset()
	kc.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		review := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		review.Status.Allowed = review.Spec.ResourceAttributes.Namespace != "locked"
		return true, review, nil
	})
	r, _ := runner(kc, append(stuck("a", "one"), stuck("locked", "two")...)...)
	p := forced("a", "one", "gone")
	p.Actions = append(p.Actions, forced("locked", "two").Actions...)
	out, err := r.Act(context.Background(), p, Gates{CheckPermissions: true})
	if err != nil || out.Stopped != "" {
		t.Fatalf("Act: %+v, %v", out, err)
	}
	want := []finalizev1alpha1.RemovalResult{finalizev1alpha1.ResultWouldRemove, finalizev1alpha1.ResultObjectGone, finalizev1alpha1.ResultFailed}
	for i, row := range out.Plan.Actions {
		if row.Result != want[i] || row.Target.Name != p.Actions[i].Name {
			t.Errorf("row %d = %+v; want %s of %s", i, row, want[i], p.Actions[i].Name)
		}
	}
	if e := out.Plan.Actions[2].Error; !strings.Contains(e, "not attempted: it may not patch configmaps in namespace locked (for configmaps/two -n locked); grant it") {
		t.Errorf("the denied action says %q", e)
	}

	r.PlanOnly = true
	out, _ = r.Act(context.Background(), p, Gates{CheckPermissions: true})
	if got := out.Plan.Actions[1].Result; got != finalizev1alpha1.ResultWouldRemove {
		t.Errorf("plan only: %s; want WouldRemove without reading the object", got)
	}
}

// TestAPermissionThatCouldNotBeAskedIsNotCalledMissing: the API server does not answer
// the SelfSubjectAccessReview (it died mid-pass): the action is not attempted, its row
// names its object, and it does not send the person to grant what may well be granted.
func TestAPermissionThatCouldNotBeAskedIsNotCalledMissing(t *testing.T) {
	kc := kubefake.NewClientset()
	kc.PrependReactor("create", "selfsubjectaccessreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	r, _ := runner(kc, stuck("a", "one")...)
	out, err := r.Act(context.Background(), forced("a", "one"), Gates{CheckPermissions: true})
	if err != nil {
		t.Fatalf("Act: %v", err)
	}
	row := out.Plan.Actions[0]
	if row.Result != finalizev1alpha1.ResultFailed || !strings.Contains(row.Error, "not attempted: could not ask whether it may patch configmaps in namespace a (for configmaps/one -n a): connection refused") ||
		strings.Contains(row.Error, "grant it") {
		t.Errorf("row %+v", row)
	}
}

// TestAnUnsafeDeletionIsNeverUnattended: a plan that holds an unsafe deletion writes
// nothing, and sends nothing, unless a person confirms it, one object per run: not under
// the breaker of an unattended pass, not without a confirmation, not two at once.
func TestAnUnsafeDeletionIsNeverUnattended(t *testing.T) {
	unsafe := func(names ...string) *plan.Plan {
		p := forced("a", names...)
		for i := range p.Actions {
			p.Actions[i].Kind, p.Actions[i].Finalizer, p.Actions[i].Target.Finalizer, p.Actions[i].UID = plan.UnsafeDelete, finalizev1alpha1.Finalizer{}, "", ""
		}
		return p
	}
	yes := func(*finalizev1alpha1.RemovalPlan) (bool, error) { return true, nil }
	for _, tt := range []struct {
		name  string
		plan  *plan.Plan
		gates Gates
	}{
		{"a pass", unsafe("one"), Gates{Breaker: true, MaxRemovals: 10, CheckPermissions: true}},
		{"a pass with a confirmation", unsafe("one"), Gates{Breaker: true, MaxRemovals: 10, Confirm: yes}},
		{"no confirmation", unsafe("one"), Gates{AllOrNothing: true}},
		{"two", unsafe("one", "two"), Gates{AllOrNothing: true, Confirm: yes}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, meta := runner(kubefake.NewClientset())
			out, err := r.Act(context.Background(), tt.plan, tt.gates)
			if out != nil || err == nil || !strings.Contains(err.Error(), "deleted only by kubectl finalize remove --unsafe-delete, one per run, after a person confirmed it") {
				t.Errorf("Act: %+v, %v; want it refused", out, err)
			}
			if n := len(meta.Actions()); n != 0 {
				t.Errorf("%d requests sent; want none", n)
			}
		})
	}
}
