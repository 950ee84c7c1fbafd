package reconcile

import (
	"strings"
	"testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
)

// TestARuleThatCannotVerifyFailsThePass: a rule whose every live control answers Unknown
// (the API says nothing usable, as with an expired token), with or without a Gone to act
// on, and a rule whose provider cannot be built, each fail the pass: exit 1, naming the
// rule and why. A green pass that can verify nothing would never alert.
func TestARuleThatCannotVerifyFailsThePass(t *testing.T) {
	fin := controlplane.FinalizerOf(t)
	c := fakecloud.New(t)

	cases := []struct {
		name string
		// control and target are the instances of the live control and the stuck object.
		control, target string
		extra           string
		says            string
		result          finalizev1alpha1.RemovalResult
	}{
		{name: "a-gone-no-control-vouches-for", control: "garbage", target: "deleted-1",
			says: "rule a-gone-no-control-vouches-for cannot verify: every live object its provider was asked about answered Unknown", result: finalizev1alpha1.ResultKept},
		{name: "nothing-answers", control: "garbage", target: "error",
			says: "rule nothing-answers cannot verify: every live object its provider was asked about answered Unknown", result: finalizev1alpha1.ResultKept},
		{name: "unbuildable", control: "live", target: "deleted-1",
			extra: "      headers: [{name: Authorization, valueFrom: {env: KUBECTL_FINALIZE_TEST_TOKEN_NEVER_SET, prefix: \"Bearer \"}}]\n",
			says:  "rule unbuildable cannot verify: header Authorization: environment variable KUBECTL_FINALIZE_TEST_TOKEN_NEVER_SET", result: finalizev1alpha1.ResultKept},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := cp.Namespace(t)
			f := fin + "-" + tc.name
			object(t, ns, "control", f, tc.control, false)
			object(t, ns, "target", f, tc.target, true)
			rule := c.Rule(tc.name, f, "")
			if tc.extra != "" {
				rule = strings.Replace(rule, "      timeout: 3s\n", "      timeout: 3s\n"+tc.extra, 1)
			}
			policy := cli.WritePolicy(t, "", rule)
			rep, r := pass(t, cp.AdminKubeconfig, policy)
			if r.Code != 1 || !strings.Contains(r.Stderr, tc.says) {
				t.Errorf("code %d; want 1 saying %q; stderr:\n%s", r.Code, tc.says, r.Stderr)
			}
			if a := action(t, rep, "target"); a.Result != tc.result {
				t.Errorf("target: %+v", a)
			}
			if len(rep.Rules) != 1 || rep.Rules[0].Rule != tc.name || rep.Rules[0].CannotVerify == "" || rep.Rules[0].Broken {
				t.Errorf("rules %+v", rep.Rules)
			}
			// remove with the policy refuses, and says why.
			r = cli.Run(t, cp.AdminKubeconfig, "remove", "configmap/target", "-n", ns, "--finalizer", f, "--policy", policy, "--yes")
			if r.Code != 2 || !strings.Contains(r.Stderr, strings.TrimPrefix(tc.says, "rule "+tc.name+" cannot verify: ")) {
				t.Errorf("remove: code %d; want 2 saying %q; stderr:\n%s", r.Code, tc.says, r.Stderr)
			}
		})
	}
}
