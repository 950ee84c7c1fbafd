package reconcile

import (
	"strings"
	"testing"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
)

// TestTheTableCallsOnlyATrustedGoneVerified: the table of a pass says "verified" only of
// the Gone a finalizer was removed on. A Gone under a broken rule (its provider called a
// live object gone) reads as the rule's answer, and every kept row says why.
func TestTheTableCallsOnlyATrustedGoneVerified(t *testing.T) {
	ns := cp.Namespace(t)
	fin := controlplane.FinalizerOf(t)
	c := fakecloud.New(t)
	object(t, ns, "typo-control", fin+"-typo", "deleted-live", false)
	object(t, ns, "under-typo", fin+"-typo", "deleted-1", true)
	object(t, ns, "ok-control", fin, "live", false)
	object(t, ns, "present", fin, "present-1", true)
	object(t, ns, "gone", fin, "deleted-2", true)
	policy := cli.WritePolicy(t, "", c.Rule("typo", fin+"-typo", "")+c.Rule("ok", fin, ""))
	r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--policy", policy)
	if r.Code != 1 {
		t.Errorf("exit %d, want 1 (a broken rule); stderr:\n%s", r.Code, r.Stderr)
	}
	row := func(name string) string {
		for _, l := range strings.Split(r.Stdout, "\n") {
			if strings.HasPrefix(l, "configmaps/"+name+" ") {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		t.Fatalf("no row for %s in\n%s", name, r.Stdout)
		return ""
	}
	if l := row("under-typo"); strings.Contains(l, "verified by") || !strings.Contains(l, "rule typo: Gone: ") || !strings.Contains(l, "Kept: rule typo ") {
		t.Errorf("a Gone under a broken rule:\n%s\nwant the rule's answer, not \"verified by\", and why it was kept", l)
	}
	if l := row("present"); !strings.Contains(l, "Kept: rule ok: the provider answered Present") {
		t.Errorf("a Present:\n%s\nwant it kept, saying why", l)
	}
	if l := row("gone"); !strings.Contains(l, "verified by rule ok: ") || !strings.HasSuffix(l, " Removed") {
		t.Errorf("a trusted Gone:\n%s\nwant it verified and removed", l)
	}
}
