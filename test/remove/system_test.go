package remove

import (
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// TestAFinalizerKubernetesReservesIsSystemWhetherTheCatalogueKnowsItOrNot: three stuck
// objects hold finalizers the catalogue does not list: a configmap one in a domain
// Kubernetes reserves (example.kubernetes.io/cleanup), and widgets (the API server
// accepts names without a "/" only on custom resources) one whose whole name is such a
// domain (cleanup.example.k8s.io) and one with no domain at all (cleanup). A glob rule
// matches them all, and its provider answers Gone (404) about each. They are system
// finalizers all the same: remove refuses them, naming --allow-system, and keeps them;
// with --allow-system they go.
func TestAFinalizerKubernetesReservesIsSystemWhetherTheCatalogueKnowsItOrNot(t *testing.T) {
	ns, c := cp.Namespace(t), fakecloud.New(t)
	world := fixture.NewReserved(t, cp.Config, cp.Kube(t), ns, "system.remove.example")
	policy := cli.WritePolicy(t, "", strings.Replace(c.Rule("cleanups", `"*cleanup*"`, "  namespaces: ["+ns+"]\n"),
		"resources: [configmaps]", "resources: ["+world.Resources+"]", 1))

	for _, o := range world.Objects {
		r := cli.Run(t, cp.AdminKubeconfig, "remove", o.Ref, "-n", ns, "--finalizer", o.Finalizer, "--policy", policy, "--yes")
		if r.Code != 2 || !strings.Contains(r.Stderr, "finalizer "+o.Finalizer+": it is a system finalizer") ||
			!strings.Contains(r.Stderr, "to remove it anyway: --allow-system") || r.Stdout != "" {
			t.Errorf("%s: code %d (want 2), stdout %q, stderr:\n%s", o.Ref, r.Code, r.Stdout, r.Stderr)
		}
		if got, err := world.Finalizers(o); err != nil || !slices.Equal(got, []string{o.Finalizer}) {
			t.Errorf("%s: the system finalizer must stay: %v %v", o.Ref, got, err)
		}
	}

	// Allowed, the same verified removals go.
	for _, o := range world.Objects {
		r := cli.Run(t, cp.AdminKubeconfig, "remove", o.Ref, "-n", ns, "--finalizer", o.Finalizer, "--policy", policy, "--allow-system", "--yes")
		if want := "finalizer " + o.Finalizer + " removed; the object is gone\n"; r.Code != 0 || !strings.HasSuffix(r.Stdout, want) {
			t.Errorf("%s with --allow-system: code %d, stdout %q (want it to end in %q), stderr:\n%s", o.Ref, r.Code, r.Stdout, want, r.Stderr)
		}
		if _, err := world.Finalizers(o); !apierrors.IsNotFound(err) {
			t.Errorf("%s still exists: %v", o.Ref, err)
		}
	}
}
