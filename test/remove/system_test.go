package remove

import (
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// TestAFinalizerKubernetesReservesIsSystemWhetherTheCatalogueKnowsItOrNot: two stuck
// configmaps hold finalizers the catalogue does not list, one in a domain Kubernetes
// reserves (example.kubernetes.io/cleanup) and one with no domain at all (cleanup). A
// glob rule matches both, and its provider answers Gone (404) about each. They are
// system finalizers all the same: remove refuses them, naming --allow-system, and keeps
// them; with --allow-system they go.
func TestAFinalizerKubernetesReservesIsSystemWhetherTheCatalogueKnowsItOrNot(t *testing.T) {
	ns, c := cp.Namespace(t), fakecloud.New(t)
	kube := cp.Kube(t)
	const reserved, bare = "example.kubernetes.io/cleanup", "cleanup"
	// A live control for each, whose instance exists: the rule's provider is seen to work.
	fixture.HeldConfigMap(t, kube, ns, "control", map[string]string{"instance": "live"}, reserved, bare)
	fixture.StuckConfigMap(t, kube, ns, "reserved", map[string]string{"instance": "deleted-reserved"}, reserved)
	fixture.StuckConfigMap(t, kube, ns, "bare", map[string]string{"instance": "deleted-bare"}, bare)
	policy := cli.WritePolicy(t, "", c.Rule("cleanups", `"*cleanup"`, "  namespaces: ["+ns+"]\n"))

	for _, o := range []struct{ name, finalizer string }{{"reserved", reserved}, {"bare", bare}} {
		r := cli.Run(t, cp.AdminKubeconfig, "remove", "configmap/"+o.name, "-n", ns, "--finalizer", o.finalizer, "--policy", policy, "--yes")
		if r.Code != 2 || !strings.Contains(r.Stderr, "finalizer "+o.finalizer+": it is a system finalizer") ||
			!strings.Contains(r.Stderr, "to remove it anyway: --allow-system") || r.Stdout != "" {
			t.Errorf("%s: code %d (want 2), stdout %q, stderr:\n%s", o.name, r.Code, r.Stdout, r.Stderr)
		}
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), o.name, metav1.GetOptions{})
		if err != nil || !slices.Equal(cm.Finalizers, []string{o.finalizer}) {
			t.Errorf("%s: the system finalizer must stay: %v %v", o.name, cm.Finalizers, err)
		}
	}

	// Allowed, the same verified removals go.
	for _, o := range []struct{ name, finalizer string }{{"reserved", reserved}, {"bare", bare}} {
		r := cli.Run(t, cp.AdminKubeconfig, "remove", "configmap/"+o.name, "-n", ns, "--finalizer", o.finalizer, "--policy", policy, "--allow-system", "--yes")
		if want := "configmaps/" + o.name + " -n " + ns + ": finalizer " + o.finalizer + " removed; the object is gone\n"; r.Code != 0 || r.Stdout != want {
			t.Errorf("%s with --allow-system: code %d, stdout %q (want %q), stderr:\n%s", o.name, r.Code, r.Stdout, want, r.Stderr)
		}
		if _, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), o.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s still exists: %v", o.name, err)
		}
	}
}
