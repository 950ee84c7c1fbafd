package write

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
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
	target := plan.Target{Ref: kube.Ref{Resource: pods, Namespace: "a", Name: "web-0", UID: "uid-web"}, ResourceVersion: "42", Kind: plan.ForceDelete, Node: "worker-3", GraceMargin: time.Minute}
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
			out, err := (&Remover{Kube: kc, LeaseWatch: 10 * time.Millisecond}).ForceDelete(t.Context(), tg, tt.dry)
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

// TestTheWriteWatchesTheNodesLease: after every other check, the write watches the
// Lease of the pod's node from the resourceVersion it read: a change the API server
// shows refuses the DELETE, and so does a watch that cannot be made or ends early
// (forbidden, an expired resourceVersion, closed before its time). A watch that sees
// nothing lets it go.
func TestTheWriteWatchesTheNodesLease(t *testing.T) {
	pods := kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}
	ts := metav1.NewTime(time.Now().Add(-10 * time.Minute))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-0", UID: "uid-web", ResourceVersion: "42", DeletionTimestamp: &ts, DeletionGracePeriodSeconds: ptr.To[int64](30)},
		Spec: corev1.PodSpec{NodeName: "worker-3"}}
	old := metav1.NewMicroTime(time.Now().Add(-time.Hour))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: "worker-3"},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &old}}
	renewed := lease.DeepCopy()
	renewed.ResourceVersion = "999"
	target := plan.Target{Ref: kube.Ref{Resource: pods, Namespace: "a", Name: "web-0", UID: "uid-web"}, ResourceVersion: "42", Kind: plan.ForceDelete, Node: "worker-3", GraceMargin: time.Minute}
	tests := []struct {
		name    string
		watch   func(w *watch.FakeWatcher) error
		wantErr string
	}{
		{"nothing changes: deleted", func(*watch.FakeWatcher) error { return nil }, ""},
		{"the kubelet renews it", func(w *watch.FakeWatcher) error { go w.Modify(renewed); return nil },
			"the API server showed its Lease kube-node-lease/worker-3 change while it was watched before the DELETE (changed"},
		{"a kubelet creates it", func(w *watch.FakeWatcher) error { go w.Add(renewed); return nil }, "(created"},
		{"someone deletes it", func(w *watch.FakeWatcher) error { go w.Delete(renewed); return nil }, "deleted while it was watched"},
		{"the watch is forbidden", func(*watch.FakeWatcher) error {
			return apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", errors.New("RBAC"))
		}, "watching the Lease kube-node-lease/worker-3 from resourceVersion"},
		{"its resourceVersion expired", func(w *watch.FakeWatcher) error {
			go w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
			return nil
		}, "watching the Lease kube-node-lease/worker-3: too old resource version"},
		{"the API server ends it early", func(w *watch.FakeWatcher) error { go w.Stop(); return nil }, "the API server ended the watch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := fake.NewClientset(pod, lease)
			var asked []string
			kc.PrependWatchReactor("leases", func(a k8stesting.Action) (bool, watch.Interface, error) {
				r := a.(k8stesting.WatchActionImpl).WatchRestrictions
				asked = append(asked, r.Fields.String()+"@"+r.ResourceVersion)
				w := watch.NewFake()
				if err := tt.watch(w); err != nil {
					return true, nil, err
				}
				return true, w, nil
			})
			sent := false
			kc.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				sent = true
				return true, nil, nil
			})
			out, err := (&Remover{Kube: kc, LeaseWatch: 200 * time.Millisecond}).ForceDelete(t.Context(), target, DryRunNone)
			if len(asked) != 1 || !strings.HasPrefix(asked[0], "metadata.name=worker-3@") || asked[0] == "metadata.name=worker-3@" {
				t.Errorf("watches %q, want one of the node's Lease from the resourceVersion read", asked)
			}
			if tt.wantErr == "" {
				if err != nil || out.Result != Removed || !sent {
					t.Errorf("want deleted: %+v %v", out, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "not deleted") || !strings.Contains(err.Error(), tt.wantErr) || sent {
				t.Errorf("err %v (DELETE sent %v), want %q and nothing sent", err, sent, tt.wantErr)
			}
		})
	}
}

// TestEachNodesLeaseIsWatchedOnceAndAllAtOnce: an execution of three force deletions
// (a server dry run), two pods of one node and one of another, one at a time: each
// node's Lease is watched once, and the two watches run at once: both begin before
// either ends.
func TestEachNodesLeaseIsWatchedOnceAndAllAtOnce(t *testing.T) {
	pods := kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}
	ts := metav1.NewTime(time.Now().Add(-10 * time.Minute))
	var objs []runtime.Object
	var actions []plan.Action
	for i, nodeName := range []string{"worker-1", "worker-1", "worker-2"} {
		name := fmt.Sprintf("web-%d", i)
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "42",
			DeletionTimestamp: &ts, DeletionGracePeriodSeconds: ptr.To[int64](30)}, Spec: corev1.PodSpec{NodeName: nodeName}})
		actions = append(actions, plan.Action{Target: plan.Target{Ref: kube.Ref{Resource: pods, Namespace: "a", Name: name, UID: types.UID("uid-" + name)}, ResourceVersion: "42",
			Kind: plan.ForceDelete, Node: nodeName, NodeGone: true, GraceMargin: time.Minute}, Verified: true})
	}
	kc := fake.NewClientset(objs...)
	var mu sync.Mutex
	var events []string
	record := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	kc.PrependWatchReactor("leases", func(a k8stesting.Action) (bool, watch.Interface, error) {
		node, _ := a.(k8stesting.WatchActionImpl).WatchRestrictions.Fields.RequiresExactMatch("metadata.name")
		record("began " + node)
		return true, &recordingWatch{Interface: watch.NewFake(), stop: func() { record("ended " + node) }}, nil
	})
	kc.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	ex := &Executor{Remover: &Remover{Kube: kc, LeaseWatch: 500 * time.Millisecond}, DryRun: DryRunServer, Workers: 1}
	records, err := ex.Execute(t.Context(), actions, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range records {
		if rec == nil || rec.Result != WouldRemove {
			t.Errorf("record %+v, want deleted (a server dry run)", rec)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(events[:2])
	if want := []string{"began worker-1", "began worker-2"}; len(events) != 4 || !slices.Equal(events[:2], want) {
		t.Errorf("watches %q, want each node's once, both begun before either ended", events)
	}
}

// recordingWatch says when it is stopped.
type recordingWatch struct {
	watch.Interface
	stop func()
}

func (w *recordingWatch) Stop() {
	w.stop()
	w.Interface.Stop()
}
