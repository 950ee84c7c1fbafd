package write

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

func TestForceDelete(t *testing.T) {
	pods := kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}
	ts := metav1.NewTime(time.Now().Add(-10 * time.Minute))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-0", UID: "uid-web", ResourceVersion: "42", DeletionTimestamp: &ts, DeletionGracePeriodSeconds: ptr.To[int64](30)},
		Spec: corev1.PodSpec{NodeName: "worker-3"}}
	node := func(status corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-3", UID: "uid-node"},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
	}
	target := plan.Target{Resource: pods, Namespace: "a", Name: "web-0", UID: "uid-web", ResourceVersion: "42", ForceDelete: true, Node: "worker-3", GraceMargin: time.Minute}
	tests := []struct {
		name      string
		objs      []runtime.Object
		target    func(plan.Target) plan.Target
		dry       DryRun
		conflict  bool
		want      Result
		wantErr   string
		wantWrite bool
	}{
		{"the node is gone: deleted with grace 0 and the preconditions", []runtime.Object{pod}, nil, DryRunNone, false, Removed, "", true},
		{"a NotReady node, forced", []runtime.Object{pod, node(corev1.ConditionUnknown)}, nil, DryRunNone, false, Removed, "", true},
		{"a node Ready by the write is refused", []runtime.Object{pod, node(corev1.ConditionTrue)}, nil, DryRunNone, false, "", "node worker-3 is Ready", false},
		{"verified by the node's absence, and the node is back", []runtime.Object{pod, node(corev1.ConditionFalse)},
			func(t plan.Target) plan.Target { t.NodeGone = true; return t }, DryRunNone, false, "", "a Node of that name exists again", false},
		{"the pod changed since it was planned", []runtime.Object{pod},
			func(t plan.Target) plan.Target { t.ResourceVersion = "41"; return t }, DryRunNone, false, "", "the pod changed since its force deletion was planned", false},
		{"the preconditions fail at the write", []runtime.Object{pod}, nil, DryRunNone, true, "", "the precondition on uid uid-web and resourceVersion 42 failed, nothing was deleted", true},
		{"the pod is gone", nil, nil, DryRunNone, false, ObjectGone, "", false},
		{"a client dry run only reads", []runtime.Object{pod}, nil, DryRunClient, false, WouldRemove, "", false},
		{"a server dry run sends the write with dryRun", []runtime.Object{pod}, nil, DryRunServer, false, WouldRemove, "", true},
		{"no resourceVersion, no write", []runtime.Object{pod}, func(t plan.Target) plan.Target { t.ResourceVersion = ""; return t }, DryRunNone, false, "", "without the uid and resourceVersion", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := fake.NewClientset(tt.objs...)
			var sent *metav1.DeleteOptions
			kc.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				opts := a.(k8stesting.DeleteActionImpl).DeleteOptions
				sent = &opts
				if tt.conflict {
					return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("Precondition failed: ResourceVersion in precondition: 42, ResourceVersion in object meta: 43"))
				}
				return true, nil, nil
			})
			tg := target
			if tt.target != nil {
				tg = tt.target(tg)
			}
			out, err := (&Remover{Kube: kc}).ForceDelete(t.Context(), tg, tt.dry)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
			if out.Result != tt.want {
				t.Errorf("result %q, want %q", out.Result, tt.want)
			}
			if (sent != nil) != tt.wantWrite {
				t.Fatalf("DELETE sent %v, want %v", sent != nil, tt.wantWrite)
			}
			if sent == nil {
				return
			}
			if sent.GracePeriodSeconds == nil || *sent.GracePeriodSeconds != 0 || sent.Preconditions == nil ||
				*sent.Preconditions.UID != "uid-web" || *sent.Preconditions.ResourceVersion != "42" {
				t.Errorf("DELETE options %+v", sent)
			}
			if wantDry := tt.dry == DryRunServer; (len(sent.DryRun) == 1) != wantDry {
				t.Errorf("dryRun %v", sent.DryRun)
			}
		})
	}
}
