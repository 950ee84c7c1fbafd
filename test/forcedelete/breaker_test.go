package forcedelete

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
)

// TestTooManyForceDeletionsTripTheBreaker: two pods of nodes that never existed, each
// verified by its node's absence, and a policy that allows one force deletion a pass
// (and twenty removals): the pass deletes neither, reports both kept and the breaker
// that says why, and exits 4.
func TestTooManyForceDeletionsTripTheBreaker(t *testing.T) {
	ns := cp.Namespace(t)
	created := time.Now()
	for _, name := range []string{"a-0", "b-0"} {
		stuckPod(t, ns, name, "gone-node-"+name+"-"+ns, yes)
	}
	policy := cli.WritePolicy(t, "maxForceDeletions: 1\n", fmt.Sprintf(`- name: gone-nodes
  waitsForNode: true
  namespaces: [%s]
  selector: "fd=yes"
`, ns))
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--policy", policy, "--pod-grace-margin", margin, "--audit-log", audit, "-o", "json")
	rep := cli.Report(t, r)
	if r.Code != 4 || rep.Breaker == nil || rep.Breaker.PlannedForceDeletions != 2 || rep.Breaker.MaxForceDeletions != 1 || rep.Breaker.MaxRemovals != 20 {
		t.Fatalf("code %d, breaker %+v; want 4 and 2 force deletions of 1 allowed\nstderr:\n%s", r.Code, rep.Breaker, r.Stderr)
	}
	for _, a := range rep.Actions {
		if a.Result != finalizev1alpha1.ResultKept {
			t.Errorf("%s: %s, want Kept: %s", a.Target.Name, a.Result, a.Message)
		}
	}
	if took := time.Since(created); took >= podgcQuarantine {
		t.Fatalf("the pass ended %s after the pods were created, past podgc's quarantine: their absence would not be the pass's", took)
	}
	for _, name := range []string{"a-0", "b-0"} {
		if !podExists(t, ns, name) {
			t.Errorf("pod %s was deleted past the breaker", name)
		}
	}
}
