package reconcile

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// TestAGlobRuleLeavesFinalizersKubernetesReservesWithoutAllowSystem: a glob rule
// ("*cleanup*") matches three finalizers the catalogue does not know: one in a domain
// Kubernetes reserves on a configmap (example.kubernetes.io/cleanup), and on widgets (the
// API server accepts names without a "/" only on custom resources) one whose whole name
// is such a domain (cleanup.example.k8s.io) and one with no domain at all (cleanup). Its
// provider answers Gone about each. They are system finalizers: a pass keeps them, saying
// so, until the rule sets allowSystem.
func TestAGlobRuleLeavesFinalizersKubernetesReservesWithoutAllowSystem(t *testing.T) {
	ns, c := cp.Namespace(t), fakecloud.New(t)
	world := fixture.NewReserved(t, cp.Config, cp.Kube(t), ns, "system.reconcile.example")
	policy := func(extra string) string {
		return cli.WritePolicy(t, "", strings.Replace(c.Rule("cleanups", `"*cleanup*"`, "  namespaces: ["+ns+"]\n"+extra),
			"resources: [configmaps]", "resources: ["+world.Resources+"]", 1))
	}

	rep, r := pass(t, cp.AdminKubeconfig, policy(""))
	for _, o := range world.Objects {
		if a := action(t, rep, o.Name); a.Result != finalizev1alpha1.ResultKept || a.Verdict != finalizev1alpha1.VerdictGone || !strings.Contains(a.Message, "it is a system finalizer") {
			t.Errorf("without allowSystem, %s: %+v (code %d, %s)", o.Name, a, r.Code, r.Stderr)
		}
		if !world.Exists(o) {
			t.Errorf("%s: the system finalizer must stay, and the object is gone", o.Name)
		}
	}

	rep, r = pass(t, cp.AdminKubeconfig, policy("  allowSystem: true\n"))
	for _, o := range world.Objects {
		if a := action(t, rep, o.Name); a.Result != finalizev1alpha1.ResultRemoved || a.Verdict != finalizev1alpha1.VerdictGone {
			t.Errorf("with allowSystem, %s: %+v (code %d, %s)", o.Name, a, r.Code, r.Stderr)
		}
		if world.Exists(o) {
			t.Errorf("%s is still there", o.Name)
		}
	}
}

// TestAPolicyThatCanNeverMatchFailsAtLoad: a rule whose selector contradicts itself, an
// exclude selector that selects every object or none, and an exclude that covers every
// type a rule may match leave a pass with nothing it could ever do: reconcile, remove and
// policy check refuse the policy (exit 2), naming the field, instead of a green pass that
// removes nothing, forever.
func TestAPolicyThatCanNeverMatchFailsAtLoad(t *testing.T) {
	ns, fin, c := world(t)
	object(t, ns, "gone", fin, "deleted-1", true)
	rule := func(name, extra string) string {
		return c.Rule(name, fin, "  namespaces: ["+ns+"]\n"+extra)
	}
	tests := []struct {
		name, head, rules, says string
	}{
		{"a selector that contradicts itself", "", rule("dbs", `  selector: "team=data,team=web"`+"\n"),
			`rules[0].selector: Invalid value: "team=data,team=web": can never match`},
		{"a set selector that contradicts itself", "", rule("dbs", `  selector: "tier in (db),tier notin (db)"`+"\n"),
			`rules[0].selector: Invalid value: "tier in (db),tier notin (db)": can never match`},
		{"an empty exclude selector", `exclude: {selectors: [""]}` + "\n", rule("dbs", ""),
			`exclude.selectors[0]: Invalid value: "": selects every object`},
		{"an exclude selector that can never match", `exclude: {selectors: ["skip,!skip"]}` + "\n", rule("dbs", ""),
			`exclude.selectors[0]: Invalid value: "skip,!skip": can never match`},
		{"an exclude of every type", `exclude: {resources: ["*"]}` + "\n",
			strings.Replace(rule("dbs", ""), "  resources: [configmaps]\n", "", 1),
			`rules[0]: Invalid value: "dbs": can never match: exclude.resources excludes every type`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := cli.WritePolicy(t, tt.head, tt.rules)
			r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--policy", policy, "-o", "json")
			if r.Code != 2 || r.Stdout != "" || !strings.Contains(r.Stderr, tt.says) {
				t.Errorf("reconcile: code %d (want 2), stdout %q, stderr:\n%s\nwant it to contain %q", r.Code, r.Stdout, r.Stderr, tt.says)
			}
			r = cli.Run(t, cp.AdminKubeconfig, "remove", "configmap/gone", "-n", ns, "--finalizer", fin, "--policy", policy, "--yes")
			if r.Code != 2 || r.Stdout != "" || !strings.Contains(r.Stderr, tt.says) {
				t.Errorf("remove: code %d (want 2), stdout %q, stderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
			r = cli.Run(t, cp.AdminKubeconfig, "policy", "check", policy)
			if r.Code != 2 || !strings.Contains(r.Stderr, tt.says) {
				t.Errorf("policy check: code %d (want 2), stdout %q, stderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
	if got := resourceVersion(t, ns, "gone"); got == "gone" {
		t.Error("a policy that was refused removed a finalizer")
	}
}

// TestANameNoObjectCanHaveFailsAtLoad: a rule's namespaces and finalizers are matched
// as they are written, and the API server refuses a namespace that is not a DNS label
// and a finalizer that is not a qualified name. A rule that names only such (the
// namespace in capitals, with an underscore; the finalizer's domain in capitals) can
// never match, and a pass under it stayed green while it did nothing: it is refused at
// load, exit 2, naming the field, like a selector that contradicts itself.
func TestANameNoObjectCanHaveFailsAtLoad(t *testing.T) {
	ns, fin, c := world(t)
	object(t, ns, "gone", fin, "deleted-1", true)
	domain, name, _ := strings.Cut(fin, "/")
	// The namespace's name up to its random suffix, its '-' written as '_'.
	underscore := strings.ReplaceAll(ns[:strings.LastIndex(ns, "-")+1], "-", "_") + "*"
	tests := []struct {
		name, rules, says string
	}{
		{"a namespace in capitals", c.Rule("dbs", fin, "  namespaces: ["+strings.ToUpper(ns)+"]\n"),
			`rules[0].namespaces[0]: Invalid value: "` + strings.ToUpper(ns) + `": can never match`},
		{"a namespace glob with an underscore", c.Rule("dbs", fin, "  namespaces: [\""+underscore+"\"]\n"),
			`rules[0].namespaces[0]: Invalid value: "` + underscore + `": can never match`},
		{"a finalizer whose domain is in capitals", c.Rule("dbs", strings.ToUpper(domain)+"/"+name, "  namespaces: ["+ns+"]\n"),
			`rules[0].finalizers[0]: Invalid value: "` + strings.ToUpper(domain) + "/" + name + `": can never match`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := cli.WritePolicy(t, "", tt.rules)
			r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--policy", policy, "-o", "json")
			if r.Code != 2 || r.Stdout != "" || !strings.Contains(r.Stderr, tt.says) {
				t.Errorf("reconcile: code %d (want 2), stdout %q, stderr:\n%s\nwant it to contain %q", r.Code, r.Stdout, r.Stderr, tt.says)
			}
			r = cli.Run(t, cp.AdminKubeconfig, "policy", "check", policy)
			if r.Code != 2 || !strings.Contains(r.Stderr, tt.says) {
				t.Errorf("policy check: code %d (want 2), stdout %q, stderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}

// TestARuleItsExcludeCoversInOtherWordsFailsAtLoad: the policy excludes objects
// labelled tier in (db, cache), or any object labelled protected; a rule selects tier=db,
// another protected=true. Every object either rule selects is excluded, so neither can
// ever match, though no requirement of the exclude is written as one of the rule's.
// Such a policy ran green and did nothing; it is refused at load, as one whose exclude
// repeats the rule's requirement word for word is.
func TestARuleItsExcludeCoversInOtherWordsFailsAtLoad(t *testing.T) {
	ns, fin, c := world(t)
	object(t, ns, "gone", fin, "deleted-1", true)
	for _, tt := range []struct{ exclude, selector string }{
		{"tier in (db, cache)", "tier=db"},
		{"protected", "protected=true"},
	} {
		policy := cli.WritePolicy(t, "exclude: {selectors: [\""+tt.exclude+"\"]}\n", c.Rule("dbs", fin, "  namespaces: ["+ns+"]\n  selector: \""+tt.selector+"\"\n"))
		says := `rules[0].selector: Invalid value: "` + tt.selector + `": can never match: the exclude selector`
		for _, args := range [][]string{{"reconcile", "--once", "--policy", policy, "-o", "json"}, {"policy", "check", policy}} {
			r := cli.Run(t, cp.AdminKubeconfig, args...)
			if r.Code != 2 || !strings.Contains(r.Stderr, says) {
				t.Errorf("%s against %s, %s: code %d (want 2), stderr:\n%s\nwant it to contain %q", tt.selector, tt.exclude, args[0], r.Code, r.Stderr, says)
			}
		}
	}
}

// TestASystemFinalizerVerifiedAgainStaysUnderARuleWithoutAllowSystem: a system finalizer
// (example.kubernetes.io/cleanup) on a configmap labelled tier=legacy is verified Gone by
// rule legacy, which sets allowSystem. While its provider answers, the label goes: the
// write pinned to the version verified fails, and the object, verified again, now
// matches rule cleanups, which answers Gone too but does not set allowSystem. The
// finalizer stays: a removal made on a verification made again needs that verification's
// rule to allow it, as the plan's did.
func TestASystemFinalizerVerifiedAgainStaysUnderARuleWithoutAllowSystem(t *testing.T) {
	ns, c := cp.Namespace(t), fakecloud.New(t)
	kube := cp.Kube(t)
	const fin = "example.kubernetes.io/cleanup"
	legacy := map[string]string{"tier": "legacy"}
	// Live controls of each rule, whose instances exist.
	control := fixture.ConfigMap("control-legacy", map[string]string{"instance": "live"}, fin)
	control.Labels = legacy
	fixture.Create(t, kube.CoreV1().ConfigMaps(ns), control, false)
	fixture.HeldConfigMap(t, kube, ns, "control", map[string]string{"instance": "live"}, fin)
	stuck := fixture.ConfigMap("moved", map[string]string{"instance": "deleted-first"}, fin)
	stuck.Labels = legacy
	fixture.Create(t, kube.CoreV1().ConfigMaps(ns), stuck, true)
	c.OnRequest(func(id string) {
		if id == "deleted-first" && c.Hits(id) == 1 {
			_, _ = kube.CoreV1().ConfigMaps(ns).Patch(context.Background(), "moved", types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"tier":null}}}`), metav1.PatchOptions{})
		}
	})
	policy := cli.WritePolicy(t, "",
		c.Rule("legacy", `"`+fin+`"`, "  namespaces: ["+ns+"]\n  selector: tier=legacy\n  allowSystem: true\n")+
			c.Rule("cleanups", `"*cleanup*"`, "  namespaces: ["+ns+"]\n"))

	rep, r := pass(t, cp.AdminKubeconfig, policy)
	if c.Hits("deleted-first") < 2 {
		t.Fatalf("the object was not verified again (asked %v): code %d, %s", c.Asked(), r.Code, r.Stderr)
	}
	if got := resourceVersion(t, ns, "moved"); got == "gone" {
		t.Fatalf("the system finalizer was removed on a verification by rule cleanups, which does not set allowSystem: %+v", action(t, rep, "moved"))
	}
	if a := action(t, rep, "moved"); a.Result == finalizev1alpha1.ResultRemoved || !strings.Contains(a.Error+a.Message, "allowSystem") {
		t.Errorf("the report does not say the rule verified again does not allow system finalizers: %+v", a)
	}
}
