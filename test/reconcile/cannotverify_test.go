package reconcile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// namespacesGet finds the rule of generated RBAC that grants get namespaces.
var namespacesGet = regexp.MustCompile(`(?m)^- apiGroups:\n  - ""\n  resources:\n  - namespaces\n  verbs:\n  - get\n`)

// TestARuleThatCannotVerifyFailsThePass: a rule whose every live control answers Unknown
// (the API says nothing usable, as with an expired token), with or without a Gone to act
// on, a rule whose provider cannot be built, and a rule none of whose controls could be
// checked (no live object carries its finalizer) while a Gone waits on it, each fail the
// pass: exit 1, naming the rule and why. A green pass that can verify nothing would never
// alert. Without a live control, a stuck object its provider calls Present held nothing
// back: that pass is green.
func TestARuleThatCannotVerifyFailsThePass(t *testing.T) {
	fin := controlplane.FinalizerOf(t)
	c := fakecloud.New(t)

	cases := []struct {
		name string
		// control and target are the instances of the live control and the stuck object.
		// No control: no live object carries the finalizer.
		control, target string
		extra           string
		says            string
		// removeSays is what remove with the policy says, if not says without its prefix.
		removeSays string
		// green: the pass exits 0 and no rule says it cannot verify; otherwise it exits 1.
		green  bool
		result finalizev1alpha1.RemovalResult
	}{
		{name: "a-gone-no-control-vouches-for", control: "garbage", target: "deleted-1",
			says: "rule a-gone-no-control-vouches-for cannot verify: every live object its provider was asked about answered Unknown", result: finalizev1alpha1.ResultKept},
		{name: "nothing-answers", control: "garbage", target: "error",
			says: "rule nothing-answers cannot verify: every live object its provider was asked about answered Unknown", result: finalizev1alpha1.ResultKept},
		{name: "unbuildable", control: "live", target: "deleted-1",
			extra: "      headers: [{name: Authorization, valueFrom: {env: KUBECTL_FINALIZE_TEST_TOKEN_NEVER_SET, prefix: \"Bearer \"}}]\n",
			says:  "rule unbuildable cannot verify: header Authorization: environment variable KUBECTL_FINALIZE_TEST_TOKEN_NEVER_SET", result: finalizev1alpha1.ResultKept},
		{name: "no-live-control", target: "deleted-1",
			says:       "rule no-live-control cannot verify: no live control of configmaps could be asked, so the Gone of configmaps/target -n ",
			removeSays: "no live object carries a finalizer this rule matches among configmaps", result: finalizev1alpha1.ResultKept},
		{name: "no-live-control-nothing-held-back", target: "present-1", green: true, result: finalizev1alpha1.ResultKept},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := cp.Namespace(t)
			f := fin + "-" + tc.name
			if tc.control != "" {
				object(t, ns, "control", f, tc.control, false)
			}
			object(t, ns, "target", f, tc.target, true)
			rule := c.Rule(tc.name, f, "")
			if tc.extra != "" {
				rule = strings.Replace(rule, "      timeout: 3s\n", "      timeout: 3s\n"+tc.extra, 1)
			}
			policy := cli.WritePolicy(t, "", rule)
			rep, r := pass(t, cp.AdminKubeconfig, policy)
			if a := action(t, rep, "target"); a.Result != tc.result {
				t.Errorf("target: %+v", a)
			}
			if tc.green {
				if r.Code != 0 {
					t.Errorf("code %d; want 0; stderr:\n%s", r.Code, r.Stderr)
				}
				for _, st := range rep.Rules {
					if st.CannotVerify != "" {
						t.Errorf("rules %+v", rep.Rules)
					}
				}
				return
			}
			if r.Code != 1 || !strings.Contains(r.Stderr, tc.says) {
				t.Errorf("code %d; want 1 saying %q; stderr:\n%s", r.Code, tc.says, r.Stderr)
			}
			if len(rep.Rules) != 1 || rep.Rules[0].Rule != tc.name || rep.Rules[0].CannotVerify == "" || rep.Rules[0].Broken {
				t.Errorf("rules %+v", rep.Rules)
			}
			// remove with the policy refuses, and says why.
			removeSays := tc.removeSays
			if removeSays == "" {
				removeSays = strings.TrimPrefix(tc.says, "rule "+tc.name+" cannot verify: ")
			}
			r = cli.Run(t, cp.AdminKubeconfig, "remove", "configmap/target", "-n", ns, "--finalizer", f, "--policy", policy, "--yes")
			if r.Code != 2 || !strings.Contains(r.Stderr, removeSays) {
				t.Errorf("remove: code %d; want 2 saying %q; stderr:\n%s", r.Code, removeSays, r.Stderr)
			}
		})
	}
}

// TestAnUnreadableNamespaceFailsThePass: the ack preset reads the object's namespace (a
// namespace annotation retains what is in it). Run as a ServiceAccount whose RBAC lacks
// get namespaces, that read is refused: not a verdict the object decided, but a read that
// failed, so the object is Failed, its finalizer stays, and the pass exits 1 instead of a
// green pass that keeps everything Unknown.
func TestAnUnreadableNamespaceFailsThePass(t *testing.T) {
	c := fakecloud.New(t)
	ns := cp.Namespace(t)
	dbinstances := seed.CRD{Group: "rds.services.k8s.aws", Kind: "DBInstance", Plural: "dbinstances", Singular: "dbinstance", Versions: []string{"v1alpha1"}}
	gvr := crdFor(t, dbinstances)
	fin := []string{"finalizers.rds.services.k8s.aws/DBInstance"}
	custom(t, gvr, "DBInstance", ns, "live-unreadable", fin, nil, false)
	custom(t, gvr, "DBInstance", ns, "deleted-unreadable", fin, nil, true)
	policy := cli.WritePolicy(t, "", fmt.Sprintf(`- name: rds
  preset: ack
  resources: [dbinstances.rds.services.k8s.aws]
  namespaces: [%s]
  verify:
    http:
      url: "%s/instances/{.metadata.name}"
      tls: {caFile: %q}
      timeout: 3s
`, ns, c.URL, c.CAFile))
	var dropped bool
	kubeconfig, _, manifests := serviceAccountWith(t, policy, func(m string) string {
		out, n := namespacesGet.ReplaceAllString(m, ""), len(namespacesGet.FindAllString(m, -1))
		dropped = n > 0
		return out
	}, false)
	if !dropped {
		t.Fatalf("the generated RBAC grants no get namespaces to take away:\n%s", manifests)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return canI(t, kubeconfig, "list", "dbinstances.rds.services.k8s.aws", "-n", ns) && !canI(t, kubeconfig, "get", "namespaces", ns), nil
	}); err != nil {
		t.Fatalf("the binding never took effect as edited:\n%s", manifests)
	}
	rep, r := pass(t, kubeconfig, policy)
	a := action(t, rep, "deleted-unreadable")
	if a.Result != finalizev1alpha1.ResultFailed || !strings.Contains(a.Evidence+" "+a.Message, "reading namespace "+ns+" for preset ack") {
		t.Errorf("target: %+v", a)
	}
	if r.Code != 1 {
		t.Errorf("code %d; want 1; stderr:\n%s", r.Code, r.Stderr)
	}
	if c.Hits("deleted-unreadable") != 0 {
		t.Errorf("the provider was asked without the namespace read: %v", c.Asked())
	}
}

// TestCannotVerifyIsPerType: a rule over configmaps and secrets whose configmap control
// answers Present while its secret control answers Unknown (the API says nothing usable
// about that type) acts on the configmap its own controls vouch for, and cannot verify
// secrets: the pass exits 1 naming the type, instead of staying green because another
// type answered.
func TestCannotVerifyIsPerType(t *testing.T) {
	ns, fin, c := world(t)
	object(t, ns, "target", fin, "deleted-1", true)
	fixture.Held(t, cp.Kube(t).CoreV1().Secrets(ns), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret-control", Finalizers: []string{fin},
		Annotations: map[string]string{"instance": "garbage"}}})
	policy := cli.WritePolicy(t, "", strings.Replace(c.Rule("pertype", fin, ""), "resources: [configmaps]", "resources: [configmaps, secrets]", 1))
	rep, r := pass(t, cp.AdminKubeconfig, policy)
	if a := action(t, rep, "target"); a.Result != finalizev1alpha1.ResultRemoved {
		t.Errorf("target: its own type's control answered Present: %+v", a)
	}
	const says = "rule pertype cannot verify: every live object its provider was asked about answered Unknown among secrets (secrets/secret-control"
	if r.Code != 1 || !strings.Contains(r.Stderr, says) {
		t.Errorf("code %d; want 1 saying %q; stderr:\n%s", r.Code, says, r.Stderr)
	}
	if len(rep.Rules) != 1 || rep.Rules[0].Broken || strings.Contains(rep.Rules[0].CannotVerify, "configmaps") {
		t.Errorf("rules %+v", rep.Rules)
	}
}

// TestARuleThatCanAskItsProviderNothingFailsThePass: a rule whose URL reads a field no
// object has (a typo: instance-id for instance) can make no request, about its live
// control or about the stuck object: every verdict is Unknown, decided without asking
// the provider. Nothing shows the rule can ever verify anything, pass after pass, so the
// pass fails naming the rule, instead of staying green while it keeps everything.
func TestARuleThatCanAskItsProviderNothingFailsThePass(t *testing.T) {
	ns, fin, c := world(t)
	object(t, ns, "target", fin, "deleted-1", true)
	rule := strings.Replace(c.Rule("typo", fin, ""), "{.metadata.annotations.instance}", "{.metadata.annotations.instance-id}", 1)
	rep, r := pass(t, cp.AdminKubeconfig, cli.WritePolicy(t, "", rule))
	if a := action(t, rep, "target"); a.Result != finalizev1alpha1.ResultKept || a.Verdict != finalizev1alpha1.VerdictUnknown {
		t.Errorf("target: %+v", a)
	}
	if len(c.Asked()) != 0 {
		t.Errorf("the cloud was asked: %v", c.Asked())
	}
	const says = "rule typo cannot verify: "
	if r.Code != 1 || !strings.Contains(r.Stderr, says) {
		t.Errorf("code %d; want 1 saying %q; stderr:\n%s", r.Code, says, r.Stderr)
	}
	if len(rep.Rules) != 1 || rep.Rules[0].CannotVerify == "" {
		t.Errorf("rules %+v", rep.Rules)
	}
}

// TestAnIdlePassWhoseProgramCannotRunFails: a rule's exec program is not in the image
// (a path mistyped, a script whose interpreter the release image lacks), and nothing is
// stuck yet. The pass, and the dry run a rollout starts with, fail naming the rule and
// the program, as they do for a credential that cannot be read, instead of staying green
// until the first stuck object, hours or weeks later, finds the rule cannot verify.
func TestAnIdlePassWhoseProgramCannotRunFails(t *testing.T) {
	fin := controlplane.FinalizerOf(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "check-s3")
	if err := os.WriteFile(script, []byte("#!/bin/no-such-shell\necho never\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, program := range []string{filepath.Join(dir, "check-rds"), script} {
		policy := cli.WritePolicy(t, "", fmt.Sprintf(`- name: idle
  finalizers: [%s]
  resources: [configmaps]
  verify:
    exec: {command: [%s, "{.metadata.name}"]}
`, fin, program))
		for _, dry := range []bool{false, true} {
			args := []string{"reconcile", "--once", "--policy", policy, "-o", "json"}
			if dry {
				args = append(args, "--dry-run")
			}
			r := cli.Run(t, cp.AdminKubeconfig, args...)
			says := "rule idle cannot verify: command[0]: the program " + program + " cannot run"
			if r.Code != 1 || !strings.Contains(r.Stderr, says) {
				t.Errorf("%s, dry run %v: code %d; want 1 saying %q; stderr:\n%s", program, dry, r.Code, says, r.Stderr)
			}
		}
	}
}
