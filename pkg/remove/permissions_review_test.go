package remove

import (
	"slices"
	"testing"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// TestAForceDeletionNeedsToReadTheNodeLease: the write reads, lists and watches the
// Lease the node's kubelet renews, so the permissions step asks for each before anything
// is written.
func TestAForceDeletionNeedsToReadTheNodeLease(t *testing.T) {
	w, _ := needs(&plan.Target{ForceDelete: true, Namespace: "a", Name: "web-0", Node: "worker-3"})
	var got []string
	for _, a := range w {
		got = append(got, a.String())
	}
	want := []string{"delete pods in namespace a", "get pods in namespace a", "get nodes", "get leases.coordination.k8s.io in namespace kube-node-lease",
		"list leases.coordination.k8s.io in namespace kube-node-lease", "watch leases.coordination.k8s.io in namespace kube-node-lease"}
	if !slices.Equal(got, want) {
		t.Errorf("needs %q, want %q", got, want)
	}
}
