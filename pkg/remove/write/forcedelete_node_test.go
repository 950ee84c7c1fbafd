package write

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
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// TestTheWriteChecksTheNodeItWasDecidedAbout: at the write, a Node that registered
// since it was planned absent (forced too), one of another uid or providerID, a kubelet
// that renewed its Lease (by its renewTime, or by the time the API server saw it change
// when the kubelet's clock is behind) or wrote Ready=False recently, or a Lease that
// cannot be read, each stops the DELETE.
func TestTheWriteChecksTheNodeItWasDecidedAbout(t *testing.T) {
	now := time.Now()
	pods := kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}
	ts := metav1.NewTime(now.Add(-10 * time.Minute))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-0", UID: "uid-web", ResourceVersion: "42", DeletionTimestamp: &ts, DeletionGracePeriodSeconds: ptr.To[int64](30)},
		Spec: corev1.PodSpec{NodeName: "worker-3"}}
	node := func(uid, providerID string, status corev1.ConditionStatus, heartbeat time.Time) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-3", UID: k8stypes.UID("uid-" + uid)}, Spec: corev1.NodeSpec{ProviderID: providerID},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.NewTime(heartbeat)}}}}
	}
	lease := func(renewed time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: "worker-3"},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(renewed))}}
	}
	old := now.Add(-time.Hour)
	// behind is the Lease of a kubelet whose machine's clock is 10 minutes behind: its
	// renewTime looks old, but the API server stamped its last change 5 s ago.
	behind := lease(now.Add(-10 * time.Minute))
	behind.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Time: ptr.To(metav1.NewTime(now.Add(-5 * time.Second)))}}
	planned := plan.Target{Ref: kube.Ref{Resource: pods, Namespace: "a", Name: "web-0", UID: "uid-web"}, ResourceVersion: "42", Kind: plan.ForceDelete, Node: "worker-3", GraceMargin: time.Minute,
		NodeUID: "uid-1", NodeProviderID: "aws:///eu-west-1a/i-1"}
	absent := planned
	absent.NodeUID, absent.NodeProviderID, absent.NodeAbsent = "", "", true
	tests := []struct {
		name      string
		target    plan.Target
		objs      []runtime.Object
		forbidden bool
		wantErr   string
	}{
		{"forced with the Node absent, and a machine registered since", absent, []runtime.Object{pod, node("2", "", corev1.ConditionFalse, old)}, false,
			"did not exist when it was planned, and a Node of that name exists now"},
		{"the Node re-created under the same name", planned, []runtime.Object{pod, node("2", "aws:///eu-west-1a/i-1", corev1.ConditionUnknown, old)}, false,
			"is another Node than the one it was planned with (uid uid-2, planned uid-1)"},
		{"another providerID", planned, []runtime.Object{pod, node("1", "aws:///eu-west-1a/i-2", corev1.ConditionUnknown, old)}, false,
			`has providerID "aws:///eu-west-1a/i-2", not "aws:///eu-west-1a/i-1" as planned`},
		{"the kubelet renewed its Lease since", planned, []runtime.Object{pod, node("1", "aws:///eu-west-1a/i-1", corev1.ConditionUnknown, old), lease(now.Add(-5 * time.Second))}, false,
			"renewed its Lease kube-node-lease/worker-3"},
		{"the Node deleted by hand, its kubelet renewing", absent, []runtime.Object{pod, lease(now.Add(-5 * time.Second))}, false,
			"renewed its Lease kube-node-lease/worker-3"},
		{"the kubelet's clock is behind, the API server saw the Lease change", planned, []runtime.Object{pod, node("1", "aws:///eu-west-1a/i-1", corev1.ConditionUnknown, old), behind}, false,
			"the API server saw the Lease kube-node-lease/worker-3 that the kubelet of node worker-3 renews change"},
		{"Ready=False written by its kubelet since", planned, []runtime.Object{pod, node("1", "aws:///eu-west-1a/i-1", corev1.ConditionFalse, now.Add(-10*time.Second))}, false,
			"only its kubelet writes False"},
		{"the Lease cannot be read", planned, []runtime.Object{pod, node("1", "aws:///eu-west-1a/i-1", corev1.ConditionUnknown, old)}, true,
			"reading the Lease kube-node-lease/worker-3 its kubelet renews"},
		{"the same Node, silent for an hour: deleted", planned, []runtime.Object{pod, node("1", "aws:///eu-west-1a/i-1", corev1.ConditionUnknown, old), lease(old)}, false, ""},
		{"still absent, the Lease stale: deleted", absent, []runtime.Object{pod, lease(old)}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := fake.NewClientset(tt.objs...)
			sent := false
			kc.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				sent = true
				return true, nil, nil
			})
			if tt.forbidden {
				kc.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "worker-3", errors.New("RBAC"))
				})
			}
			out, err := (&Remover{Kube: kc, LeaseWatch: 10 * time.Millisecond}).ForceDelete(t.Context(), tt.target, DryRunNone)
			if tt.wantErr == "" {
				if err != nil || out.Result != Removed || !sent {
					t.Errorf("want deleted: %+v %v", out, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "not deleted") || sent || out.Result != "" {
				t.Errorf("err %v (DELETE sent %v, result %q), want %q and nothing sent", err, sent, out.Result, tt.wantErr)
			}
		})
	}
}
