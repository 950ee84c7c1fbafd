package plan

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// TestEveryKindIsComplete: each kind of removal names itself, says what its write needs
// and what its audit lines and Event say, so that the permission check, the RBAC a
// policy needs, the audit and the report never meet a kind they cannot describe.
func TestEveryKindIsComplete(t *testing.T) {
	target := &Target{Ref: kube.Ref{Resource: kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}}, Namespace: "a", Name: "w", UID: "uid-w"}, Finalizer: "example.com/x", Node: "worker-3"}
	actions := map[finalizev1alpha1.RemovalAction]bool{}
	for _, k := range Kinds {
		tg := *target
		tg.Kind = k
		if tg.String() == "" || tg.WriteKind() != k {
			t.Errorf("%T: the target does not name itself: %q", k, tg.String())
		}
		perms := k.Permissions(&tg)
		if len(perms) == 0 {
			t.Errorf("%T needs no permission: its write would not be checked before it is made", k)
		}
		for _, p := range perms {
			if p.Verb == "" || p.Resource == "" {
				t.Errorf("%T: permission %+v names no verb or no resource", k, p)
			}
		}
		verified, forced := k.Reason(true), k.Reason(false)
		if verified == "" || forced == "" || verified == forced {
			t.Errorf("%T: audit reasons %q (verified) and %q (forced) must be set and differ", k, verified, forced)
		}
		if action, note := k.Event(&tg); action == "" || note == "" {
			t.Errorf("%T: Event action %q, note %q", k, action, note)
		}
		if k.Action() != "" && actions[k.Action()] {
			t.Errorf("%T: action %q is another kind's", k, k.Action())
		}
		actions[k.Action()] = true
	}
	if finalizerKind(finalizev1alpha1.FieldMetadataFinalizers) != Patch || finalizerKind(finalizev1alpha1.FieldSpecFinalizers) != Finalize {
		t.Error("a finalizer is removed by the kind of its field")
	}
}

// TestAForceDeletionNeedsToReadTheNodeLease: the write reads, lists and watches the
// Lease the node's kubelet renews, so the permissions step asks for each before anything
// is written.
func TestAForceDeletionNeedsToReadTheNodeLease(t *testing.T) {
	var got []string
	for _, p := range ForceDelete.Permissions(&Target{Ref: kube.Ref{Namespace: "a", Name: "web-0"}, Kind: ForceDelete, Node: "worker-3"}) {
		got = append(got, p.String())
	}
	want := []string{"delete pods in namespace a", "get pods in namespace a", "get nodes", "get leases.coordination.k8s.io in namespace kube-node-lease",
		"list leases.coordination.k8s.io in namespace kube-node-lease", "watch leases.coordination.k8s.io in namespace kube-node-lease"}
	if !slices.Equal(got, want) {
		t.Errorf("needs %q, want %q", got, want)
	}
}
