package remove

import (
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	cmdtesting "github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/testing"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
)

// TestAForceDeletionWhoseOutcomeWasNotReadSaysSo: after a force deletion, a pod that
// could not be read again is not reported gone.
func TestAForceDeletionWhoseOutcomeWasNotReadSaysSo(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	o := NewOptions(streams)
	target := finalizev1alpha1.ObjectReference{Resource: "pods", Namespace: "a", Name: "web-0"}
	for _, tt := range []struct {
		rec  write.Record
		want string
	}{
		{write.Record{Entry: write.Entry{Target: target, Node: "worker-3"}, Result: write.Removed, Deleted: true}, "pods/web-0 -n a: force-deleted; the pod is gone\n"},
		{write.Record{Entry: write.Entry{Target: target, Node: "worker-3"}, Result: write.Removed, Remaining: []string{"example.com/x"}},
			"pods/web-0 -n a: force-deleted; still held by its finalizers: example.com/x\n"},
		{write.Record{Entry: write.Entry{Target: target, Node: "worker-3"}, Result: write.Removed},
			"pods/web-0 -n a: force-deleted; its state is unknown: it could not be read after the deletion (kubectl get it)\n"},
	} {
		out.Reset()
		o.report(&tt.rec)
		if out.String() != tt.want {
			t.Errorf("got %q, want %q", out.String(), tt.want)
		}
	}
}

// TestAForcedPodDeletionIsWordedForPods: --force-unverified without --reason, asked of a
// pod's force deletion, speaks of force-deleting pods, not of finalizers.
func TestAForcedPodDeletionIsWordedForPods(t *testing.T) {
	cmdtesting.InvalidInvocations(t, NewCmdRemove, cluster, []cmdtesting.Invocation{
		{Name: "force a pod's deletion without reason", Args: []string{"pod/web-0", "--force-unverified"},
			Want: "error: --force-unverified requires --reason: say why force-deleting the pods unverified is safe, for the audit\n"},
	})
}
