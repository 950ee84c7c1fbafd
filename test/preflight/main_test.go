// Package preflight tests `kubectl finalize preflight` against a real control plane:
// one test per hazard, a safe deletion, a Helm release written as Helm writes it, and
// the exit codes. Nothing is deleted: no test needs kube-controller-manager.
package preflight

import (
	"context"
	"encoding/json"
	"flag"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

var cp *controlplane.ControlPlane

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.APIServer(), &cp) }

// preflight runs `preflight -o json ARGS` as the admin, wants exit code want, and
// decodes the report.
func preflight(t *testing.T, want int, args ...string) (*finalizev1alpha1.PreflightReport, cli.Result) {
	t.Helper()
	return preflightAs(t, cp.AdminKubeconfig, want, args...)
}

func preflightAs(t *testing.T, kubeconfig string, want int, args ...string) (*finalizev1alpha1.PreflightReport, cli.Result) {
	t.Helper()
	r := cli.Run(t, kubeconfig, append([]string{"preflight", "-o", "json"}, args...)...)
	if r.Code != want {
		t.Fatalf("preflight %v: exit code %d, want %d\nstdout: %s\nstderr: %s", args, r.Code, want, r.Stdout, r.Stderr)
	}
	var rep finalizev1alpha1.PreflightReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("preflight %v: stdout is not a PreflightReport: %v\n%s", args, err, r.Stdout)
	}
	if rep.APIVersion != "kubectl-finalize.github.io/v1alpha1" || rep.Kind != "PreflightReport" {
		t.Fatalf("apiVersion %q kind %q", rep.APIVersion, rep.Kind)
	}
	return &rep, r
}

// hazard returns the one hazard of reason whose cause is named name, failing if there
// is not exactly one.
func hazard(t *testing.T, rep *finalizev1alpha1.PreflightReport, reason, name string) *finalizev1alpha1.Hazard {
	t.Helper()
	var found []*finalizev1alpha1.Hazard
	for i := range rep.Hazards {
		if rep.Hazards[i].Reason == reason && rep.Hazards[i].Cause.Name == name {
			found = append(found, &rep.Hazards[i])
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s hazard caused by %s, got %d; hazards: %+v", reason, name, len(found), rep.Hazards)
	}
	return found[0]
}

// strands wants the hazard to strand exactly the objects named (namespace/name).
func strands(t *testing.T, h *finalizev1alpha1.Hazard, want ...string) {
	t.Helper()
	var got []string
	for _, o := range h.Objects {
		got = append(got, o.Namespace+"/"+o.Name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s hazard strands %v, want %v", h.Reason, got, want)
	}
}

// says wants msg to hold every part.
func says(t *testing.T, what, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("%s %q does not say %q", what, msg, p)
		}
	}
}

// widgets installs a Widget CRD of group.
func widgets(t *testing.T, group string) schema.GroupVersionResource {
	t.Helper()
	return fixture.CRD(t, cp.Config, seed.CRD{Group: group, Kind: "Widget", Plural: "widgets", Singular: "widget", Versions: []string{"v1"}})
}

// widget creates a Widget called name in ns whose finalizer manager wrote, as an
// operator does; its finalizers are taken off when t ends.
func widget(t *testing.T, gvr schema.GroupVersionResource, ns, name, finalizer, manager string, labels map[string]string) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	u := fixture.Custom(gvr, "Widget", ns, name, finalizer)
	u.SetLabels(labels)
	fixture.Held(t, fixture.Dynamic{ResourceInterface: dyn.Resource(gvr).Namespace(ns), Manager: manager}, u)
}

// operator is a Deployment called name in ns, labelled app=name on its pods, deleted
// when t ends.
func operator(t *testing.T, ns, name string) {
	t.Helper()
	kube := cp.Kube(t)
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "manager", Image: "example.com/" + name + ":v1"}}}}}}
	if _, err := kube.AppsV1().Deployments(ns).Create(t.Context(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.AppsV1().Deployments(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// namespace creates a namespace called name, deleted when t ends.
func namespace(t *testing.T, name string) string {
	t.Helper()
	kube := cp.Kube(t)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}
