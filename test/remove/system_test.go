package remove

import (
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
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

// TestATypeTwoGroupsAnswerToIsNotGuessed: two CRDs of two groups share a short name
// ("rf": reflections of one group, echoes of the other, as two operators' CRDs may), and
// an object called shared, stuck, exists in each. `remove rf/shared` names no one type:
// kubectl would take the first in discovery order, and the finalizer of the other
// group's object, not the one meant, would go. It is refused (exit 2), naming both
// types, and neither object changes; so is a plural both groups serve (mirrors).
func TestATypeTwoGroupsAnswerToIsNotGuessed(t *testing.T) {
	ns := cp.Namespace(t)
	const fin = "a.example.com/x"
	var gvrs []schema.GroupVersionResource
	for _, crd := range []seed.CRD{
		{Group: "a-short.remove.example", Kind: "Reflection", Plural: "reflections", Singular: "reflection", Short: []string{"rf"}, Versions: []string{"v1"}},
		{Group: "b-short.remove.example", Kind: "Echo", Plural: "echoes", Singular: "echo", Short: []string{"rf"}, Versions: []string{"v1"}},
		{Group: "a-plural.remove.example", Kind: "Mirror", Plural: "mirrors", Singular: "mirror", Versions: []string{"v1"}},
		{Group: "b-plural.remove.example", Kind: "Mirror", Plural: "mirrors", Singular: "mirror", Versions: []string{"v1"}},
	} {
		gvr := fixture.CRD(t, cp.Config, crd)
		gvrs = append(gvrs, gvr)
		fixture.Instance(t, cp.Config, gvr, crd.Kind, ns, "shared", []string{fin}, nil, true)
	}
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	for _, arg := range []string{"rf/shared", "mirrors/shared"} {
		r := cli.Run(t, cp.AdminKubeconfig, "remove", arg, "-n", ns, "--finalizer", fin, "--force-unverified", "--reason", "INC-7", "--yes")
		if r.Code != 2 || !strings.Contains(r.Stderr, "could be any of") {
			t.Errorf("remove %s: code %d, want 2 naming both types; stderr:\n%s", arg, r.Code, r.Stderr)
		}
	}
	for _, gvr := range gvrs {
		u, err := dyn.Resource(gvr).Namespace(ns).Get(t.Context(), "shared", metav1.GetOptions{})
		if err != nil || !slices.Contains(u.GetFinalizers(), fin) {
			t.Errorf("%s/shared: the finalizer was removed on a guess of its type (%v)", gvr.GroupResource(), err)
		}
	}
}
