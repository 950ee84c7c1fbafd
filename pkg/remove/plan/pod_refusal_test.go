package plan

import (
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// nodeLease is the Lease the kubelet of worker-3 renews in kube-node-lease, renewed at
// renewed.
func nodeLease(renewed time.Time) *coordinationv1.Lease {
	const name = "worker-3"
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(renewed))}}
}

// notReadyNode is node worker-3, whose Ready condition is status, last heartbeat at
// heartbeat.
func notReadyNode(status corev1.ConditionStatus, heartbeat time.Time) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-3", UID: "uid-node-1"}, Spec: corev1.NodeSpec{ProviderID: "aws:///eu-west-1a/i-0abc"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "KubeletNotReady", LastHeartbeatTime: metav1.NewTime(heartbeat)}}}}
}

// planOne plans the force deletion of the pod web-0 against a cluster of objs.
func planOne(t *testing.T, now time.Time, kc *fake.Clientset, answer Verification, opts Options) (*Plan, *podVerifier) {
	t.Helper()
	v := &podVerifier{answer: answer}
	planner := &Planner{Kube: kc, Verifier: v, Now: func() time.Time { return now }}
	dt := metav1.NewTime(now.Add(-10 * time.Minute))
	scanned := &kube.Object{Resource: pods, Meta: metav1.ObjectMeta{Namespace: "a", Name: "web-0", UID: "uid-web", DeletionTimestamp: &dt}}
	return planner.Plan(t.Context(), []Request{{Object: scanned, ForceDelete: true}}, opts), v
}

// TestEvidenceAgainstAForceDeletionCannotBeForced: a rule's provider that said Present,
// or a Gone that cannot be trusted, is refused as MachinePresent whatever the flags;
// --force-unverified covers no rule, and a provider that could not tell (Unknown).
func TestEvidenceAgainstAForceDeletionCannotBeForced(t *testing.T) {
	now := time.Now()
	forced := Options{ForceUnverified: true, Reason: "INC-9"}
	down := notReadyNode(corev1.ConditionUnknown, now.Add(-time.Hour))
	tests := []struct {
		name     string
		answer   Verification
		wantKind finalizev1alpha1.RefusalKind
		wantWhy  string
	}{
		{"Present", Verification{Rule: "gone-nodes", Verdict: finalizev1alpha1.VerdictPresent, Evidence: "GET /instances/i-0abc: 200"},
			finalizev1alpha1.RefusalMachinePresent, "rule gone-nodes: Present: GET /instances/i-0abc: 200"},
		{"a Gone that cannot be trusted", Verification{Rule: "gone-nodes", Verdict: finalizev1alpha1.VerdictGone, Status: Distrusted, Detail: "the provider is broken"},
			finalizev1alpha1.RefusalMachinePresent, "cannot be trusted: the provider is broken"},
		{"a Gone whose controls could not be read", Verification{Rule: "gone-nodes", Verdict: finalizev1alpha1.VerdictGone, Status: ControlsUnread, Detail: "the nodes could not be listed"},
			finalizev1alpha1.RefusalMachinePresent, "the nodes could not be listed"},
		{"Unknown: forced", Verification{Rule: "gone-nodes", Verdict: finalizev1alpha1.VerdictUnknown, Evidence: "timeout"}, "", ""},
		{"no rule: forced", Verification{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := planOne(t, now, fake.NewClientset(stuckPod(now.Add(-10*time.Minute), 30), down), tt.answer, forced)
			if tt.wantKind == "" {
				if len(p.Actions) != 1 || p.Actions[0].Reason != "INC-9" {
					t.Fatalf("want the forced action: %+v %+v", p.Actions, p.Refusals)
				}
				return
			}
			if len(p.Actions) != 0 || len(p.Refusals) != 1 {
				t.Fatalf("want one refusal: %+v", p)
			}
			r := p.Refusals[0]
			if r.Kind != tt.wantKind || !strings.Contains(r.Message, tt.wantWhy) || strings.Contains(r.Message, "--force-unverified") {
				t.Errorf("refusal %s: %s; want %s containing %q, naming no flag", r.Kind, r.Message, tt.wantKind, tt.wantWhy)
			}
		})
	}
}

// TestASignOfALiveKubeletRefusesAForceDeletion: a node that is not Ready, or absent,
// whose kubelet renewed its Lease within the window or wrote Ready=False recently, is
// refused as KubeletAlive, forced or verified; a Lease that cannot be read refuses it
// unread; a Lease renewed long ago does not, nor a Node without a Ready condition (no
// kubelet registered it) whose Lease is not fresh.
func TestASignOfALiveKubeletRefusesAForceDeletion(t *testing.T) {
	now := time.Now()
	pod := stuckPod(now.Add(-10*time.Minute), 30)
	gone := Verification{Rule: "gone-nodes", Verdict: finalizev1alpha1.VerdictGone, Evidence: "404"}
	noCondition := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-3"}}
	tests := []struct {
		name      string
		objs      []runtime.Object
		forbidden bool
		wantKind  finalizev1alpha1.RefusalKind
		wantWhy   string
		unread    bool
	}{
		{"the Node deleted by hand, its kubelet renewing its Lease", []runtime.Object{pod, nodeLease(now.Add(-8 * time.Second))}, false,
			finalizev1alpha1.RefusalKubeletAlive, "renewed its Lease kube-node-lease/worker-3", false},
		{"Ready=Unknown, the Lease renewed 30 s ago", []runtime.Object{pod, notReadyNode(corev1.ConditionUnknown, now.Add(-time.Hour)), nodeLease(now.Add(-30 * time.Second))}, false,
			finalizev1alpha1.RefusalKubeletAlive, "renewed its Lease", false},
		{"Ready=False with a recent heartbeat", []runtime.Object{pod, notReadyNode(corev1.ConditionFalse, now.Add(-20*time.Second))}, false,
			finalizev1alpha1.RefusalKubeletAlive, "only its kubelet writes False", false},
		{"no Ready condition, the Lease renewed", []runtime.Object{pod, noCondition, nodeLease(now.Add(-10 * time.Second))}, false, finalizev1alpha1.RefusalKubeletAlive, "renewed its Lease", false},
		{"no Ready condition and no Lease: no kubelet registered it", []runtime.Object{pod, noCondition}, false, "", "", false},
		{"the Lease cannot be read", []runtime.Object{pod}, true, finalizev1alpha1.RefusalUnverified, "reading the Lease kube-node-lease/worker-3", true},
		{"a Lease renewed an hour ago, the Node gone", []runtime.Object{pod, nodeLease(now.Add(-time.Hour))}, false, "", "", false},
		{"Ready=False an hour ago, the Lease stale", []runtime.Object{pod, notReadyNode(corev1.ConditionFalse, now.Add(-time.Hour)), nodeLease(now.Add(-time.Hour))}, false, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := fake.NewClientset(tt.objs...)
			if tt.forbidden {
				kc.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "worker-3", errors.New("RBAC"))
				})
			}
			for _, opts := range []Options{{}, {ForceUnverified: true, Reason: "INC-9"}} {
				p, v := planOne(t, now, kc, gone, opts)
				if tt.wantKind == "" {
					if len(p.Actions) != 1 {
						t.Fatalf("want an action: %+v", p.Refusals)
					}
					continue
				}
				if len(p.Actions) != 0 || len(p.Refusals) != 1 {
					t.Fatalf("want one refusal: %+v", p)
				}
				r := p.Refusals[0]
				if r.Kind != tt.wantKind || !strings.Contains(r.Message, tt.wantWhy) || r.Verification.Unread() != tt.unread || len(v.asked) != 0 {
					t.Errorf("refusal %s: %s (unread %v, asked %d); want %s containing %q, unread %v, nothing asked", r.Kind, r.Message, r.Verification.Unread(), len(v.asked), tt.wantKind, tt.wantWhy, tt.unread)
				}
			}
		})
	}
}

// TestAForceDeletionPinsTheNodeItWasDecidedAbout: the action carries the Node's uid and
// providerID as read, or that it was absent, forced or verified.
func TestAForceDeletionPinsTheNodeItWasDecidedAbout(t *testing.T) {
	now := time.Now()
	pod := stuckPod(now.Add(-10*time.Minute), 30)
	p, _ := planOne(t, now, fake.NewClientset(pod, notReadyNode(corev1.ConditionUnknown, now.Add(-time.Hour))),
		Verification{Rule: "gone-nodes", Verdict: finalizev1alpha1.VerdictGone, Evidence: "404"}, Options{})
	if len(p.Actions) != 1 || p.Actions[0].NodeUID != "uid-node-1" || p.Actions[0].NodeProviderID != "aws:///eu-west-1a/i-0abc" || p.Actions[0].NodeAbsent {
		t.Errorf("a Node that exists: %+v", p.Actions)
	}
	p, _ = planOne(t, now, fake.NewClientset(pod), Verification{}, Options{ForceUnverified: true, Reason: "INC-9"})
	if len(p.Actions) != 1 || !p.Actions[0].NodeAbsent || p.Actions[0].NodeGone || p.Actions[0].NodeUID != "" {
		t.Errorf("forced, the Node absent: %+v", p.Actions)
	}
}

// TestReadFailuresAreNotTimingRefusals: a pod gone is ObjectGone; a pod or node that
// cannot be read is an Unread verification (a pass reports it Failed); only timing is
// NotOverdue; a mirror pod is refused, saying why.
func TestReadFailuresAreNotTimingRefusals(t *testing.T) {
	now := time.Now()
	pod := stuckPod(now.Add(-10*time.Minute), 30)
	forbid := func(resource string) func(*fake.Clientset) {
		return func(kc *fake.Clientset) {
			kc.PrependReactor("get", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewServerTimeout(schema.GroupResource{Resource: resource}, "get", 1)
			})
		}
	}
	mirror := pod.DeepCopy()
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "abc"}
	tests := []struct {
		name     string
		objs     []runtime.Object
		react    func(*fake.Clientset)
		wantKind finalizev1alpha1.RefusalKind
		gone     bool
		unread   bool
		wantWhy  string
	}{
		{"the pod is gone", nil, nil, finalizev1alpha1.RefusalNotOverdue, true, false, "the pod is gone"},
		{"the pod cannot be read", []runtime.Object{pod}, forbid("pods"), finalizev1alpha1.RefusalUnverified, false, true, "reading the pod"},
		{"the node cannot be read", []runtime.Object{pod}, forbid("nodes"), finalizev1alpha1.RefusalUnverified, false, true, "reading node worker-3"},
		{"a mirror pod", []runtime.Object{mirror}, nil, finalizev1alpha1.RefusalNotOverdue, false, false, "it is a mirror pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := fake.NewClientset(tt.objs...)
			if tt.react != nil {
				tt.react(kc)
			}
			p, _ := planOne(t, now, kc, Verification{}, Options{ForceUnverified: true, Reason: "INC-9"})
			if len(p.Refusals) != 1 {
				t.Fatalf("want one refusal: %+v", p)
			}
			r := p.Refusals[0]
			if r.Kind != tt.wantKind || r.ObjectGone != tt.gone || r.Verification.Unread() != tt.unread || !strings.Contains(r.Message, tt.wantWhy) {
				t.Errorf("refusal %s %q (gone %v, unread %v); want %s %q, gone %v, unread %v", r.Kind, r.Message, r.ObjectGone, r.Verification.Unread(), tt.wantKind, tt.wantWhy, tt.gone, tt.unread)
			}
		})
	}
}
