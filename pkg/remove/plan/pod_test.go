package plan

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

var pods = kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}

// podVerifier is a Verifier and a PodVerifier for planner unit tests; it records what
// it was asked.
type podVerifier struct {
	answer Verification
	asked  []PodRequest
}

func (v *podVerifier) Verify(context.Context, VerifyRequest) Verification { return Verification{} }
func (v *podVerifier) VerifyPod(_ context.Context, req PodRequest) Verification {
	v.asked = append(v.asked, req)
	return v.answer
}

func stuckPod(deleted time.Time, grace int64) *corev1.Pod {
	ts := metav1.NewTime(deleted)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-0", UID: types.UID("uid-web"), ResourceVersion: "42",
		DeletionTimestamp: &ts, DeletionGracePeriodSeconds: ptr.To(grace)}, Spec: corev1.PodSpec{NodeName: "worker-3"}}
}

func readyNode(name string, status corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
}

func TestPlanForceDeletion(t *testing.T) {
	now := time.Now()
	overdue := stuckPod(now.Add(-10*time.Minute), 30)
	gone := Verification{Rule: "gone-nodes", Verdict: finalizev1alpha1.VerdictGone, Evidence: "GET nodes/worker-3: 404", ResourceVersion: "42"}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		node     *corev1.Node
		answer   Verification
		opts     Options
		wantKind finalizev1alpha1.RefusalKind
		wantWhy  string
		asked    bool
	}{
		{"verified by a rule: planned, pinned to the pod read", overdue, nil, gone, Options{}, "", "", true},
		{"no rule: unverified, the flags named", overdue, nil, Verification{}, Options{}, finalizev1alpha1.RefusalUnverified,
			"no policy rule verified that the machine of node worker-3 is gone", true},
		{"no rule, forced with a reason", overdue, nil, Verification{}, Options{ForceUnverified: true, Reason: "INC-1"}, "", "", true},
		{"a provider said Present", overdue, readyNode("worker-3", corev1.ConditionUnknown),
			Verification{Rule: "gone-nodes", Verdict: finalizev1alpha1.VerdictPresent, Evidence: "200"}, Options{}, finalizev1alpha1.RefusalMachinePresent, "rule gone-nodes: Present: 200", true},
		{"a Ready node is refused, forced or not, and nothing is asked", overdue, readyNode("worker-3", corev1.ConditionTrue), gone,
			Options{ForceUnverified: true, Reason: "INC-1"}, finalizev1alpha1.RefusalNodeReady, "node worker-3 is Ready", false},
		{"within its grace period and margin", stuckPod(now.Add(-30*time.Second), 30), nil, gone,
			Options{ForceUnverified: true, Reason: "INC-1"}, finalizev1alpha1.RefusalNotOverdue, "a force deletion waits", false},
		{"a grace period of 0 waits for no kubelet", stuckPod(now.Add(-time.Hour), 0), nil, gone,
			Options{ForceUnverified: true, Reason: "INC-1"}, finalizev1alpha1.RefusalNotOverdue, "waits for no kubelet", false},
		{"no grace period waits for no kubelet either", func() *corev1.Pod { p := overdue.DeepCopy(); p.DeletionGracePeriodSeconds = nil; return p }(), nil, gone,
			Options{ForceUnverified: true, Reason: "INC-1"}, finalizev1alpha1.RefusalNotOverdue, "it has no grace period", false},
		{"not being deleted", func() *corev1.Pod { p := overdue.DeepCopy(); p.DeletionTimestamp = nil; return p }(), nil, gone,
			Options{}, finalizev1alpha1.RefusalNotOverdue, "not being deleted", false},
		{"a namesake", func() *corev1.Pod { p := overdue.DeepCopy(); p.UID = "other"; return p }(), nil, gone,
			Options{}, finalizev1alpha1.RefusalNotOverdue, "replaced by a namesake", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{tt.pod}
			if tt.node != nil {
				objs = append(objs, tt.node)
			}
			v := &podVerifier{answer: tt.answer}
			planner := &Planner{Kube: fake.NewClientset(objs...), Verifier: v, Now: func() time.Time { return now }}
			scanned := &kube.Object{Resource: pods, Meta: metav1.ObjectMeta{Namespace: "a", Name: "web-0", UID: "uid-web", DeletionTimestamp: overdue.DeletionTimestamp}}
			p := planner.Plan(t.Context(), []Request{{Object: scanned, ForceDelete: true}}, tt.opts)
			if (len(v.asked) > 0) != tt.asked {
				t.Errorf("verifier asked %d times, want asked %v", len(v.asked), tt.asked)
			}
			if tt.wantKind == "" {
				if len(p.Actions) != 1 || len(p.Refusals) != 0 {
					t.Fatalf("want one action: %+v", p)
				}
				a := p.Actions[0]
				if a.Kind != ForceDelete || a.Node != "worker-3" || a.UID != "uid-web" || a.ResourceVersion != tt.pod.ResourceVersion || a.Target.Finalizer != "" {
					t.Errorf("action %+v", a)
				}
				if a.Verified != tt.answer.Gone() || (!a.Verified && a.Reason != tt.opts.Reason) {
					t.Errorf("verified %v reason %q", a.Verified, a.Reason)
				}
				if a.NodeGone != (a.Verified && tt.node == nil) {
					t.Errorf("NodeGone %v", a.NodeGone)
				}
				if api := a.API(); api.Action != finalizev1alpha1.ActionForceDelete || api.Node != "worker-3" {
					t.Errorf("API %+v", api)
				}
				return
			}
			if len(p.Actions) != 0 || len(p.Refusals) != 1 {
				t.Fatalf("want one refusal: %+v", p)
			}
			r := p.Refusals[0]
			if r.Kind != tt.wantKind || !strings.Contains(r.Message, tt.wantWhy) || r.Action != finalizev1alpha1.ActionForceDelete {
				t.Errorf("refusal %s: %s, want %s containing %q", r.Kind, r.Message, tt.wantKind, tt.wantWhy)
			}
			if api := r.API(); api.Action != finalizev1alpha1.ActionForceDelete {
				t.Errorf("API %+v", api)
			}
		})
	}
}

// TestPlanForceDeletionBeforeTheFinalizers: a pod that waits for its kubelet and carries
// a finalizer: the force deletion is planned first, the finalizer as its own removal.
func TestPlanForceDeletionBeforeTheFinalizers(t *testing.T) {
	now := time.Now()
	pod := stuckPod(now.Add(-10*time.Minute), 30)
	pod.Finalizers = []string{"example.com/x"}
	scanned := &kube.Object{Resource: pods, Meta: *pod.ObjectMeta.DeepCopy(),
		Finalizers: []finalizev1alpha1.Finalizer{{Name: "example.com/x", Field: finalizev1alpha1.FieldMetadataFinalizers}}}
	planner := &Planner{Kube: fake.NewClientset(pod), Verifier: &podVerifier{}, Now: func() time.Time { return now }}
	p := planner.Plan(t.Context(), []Request{{Object: scanned, ForceDelete: true, Finalizers: []string{"example.com/x"}}}, Options{ForceUnverified: true, Reason: "INC-2"})
	if len(p.Actions) != 2 || p.Actions[0].Kind != ForceDelete || p.Actions[1].Kind == ForceDelete || p.Actions[1].Finalizer.Name != "example.com/x" {
		t.Fatalf("actions %+v", p.Actions)
	}
	if p.Objects() != 1 {
		t.Errorf("objects %d", p.Objects())
	}
}
