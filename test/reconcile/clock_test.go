package reconcile

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/apiproxy"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
)

// TestAgesAreMeasuredByTheAPIServersClock: the API server's clock is 30 minutes behind
// this machine's (its answers' Date, through a proxy). An object whose deletion began 3 s
// ago by this machine's clock began in what the API server calls its future: a rule with
// minAge 2s keeps it TooYoung, and never asks its provider; scan shows it terminating for
// 0 s, and --older-than 2s leaves it out. By this machine's clock it is old enough for
// both, and only gets older; by the API server's it is young for half an hour: nothing
// here depends on how long a step takes.
func TestAgesAreMeasuredByTheAPIServersClock(t *testing.T) {
	ns, fin, c := world(t)
	stuck := object(t, ns, "young", fin, "deleted-1", true)
	policy := cli.WritePolicy(t, "", c.Rule("dbs", fin, "  minAge: 2s\n"))
	// Three seconds by this machine's clock: the deletionTimestamp is the API server's, to
	// the second.
	time.Sleep(time.Until(stuck.DeletionTimestamp.Add(3 * time.Second)))
	proxy, kubeconfig := apiproxy.ForTest(t, cp.Config)
	proxy.ShiftDate(-30 * time.Minute)

	rep, r := pass(t, kubeconfig, policy, "--dry-run")
	if a := action(t, rep, "young"); r.Code != 0 || a.Result != finalizev1alpha1.ResultTooYoung || c.Hits("deleted-1") != 0 {
		t.Errorf("code %d, %+v (its instance asked %d times); want TooYoung, not asked\nstderr:\n%s", r.Code, a, c.Hits("deleted-1"), r.Stderr)
	}

	r = cli.Run(t, kubeconfig, "scan", "-n", ns, "-o", "json")
	var list finalizev1alpha1.StuckObjectList
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("scan: code %d, %v: %s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if len(list.Items) != 1 || list.Items[0].Target.Name != "young" || list.Items[0].TerminatingSeconds != 0 {
		t.Errorf("scan: %+v; want young terminating for 0 s by the API server's clock", list.Items)
	}
	r = cli.Run(t, kubeconfig, "scan", "-n", ns, "--older-than", "2s")
	if r.Code != 0 || strings.Contains(r.Stdout, "young") {
		t.Errorf("scan --older-than 2s: code %d, stdout %q, want young left out\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
