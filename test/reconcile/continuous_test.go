package reconcile

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// reports decodes the JSON reports a continuous run printed so far.
func (p *process) reports(t *testing.T) []*finalizev1alpha1.ReconcileReport {
	t.Helper()
	var out []*finalizev1alpha1.ReconcileReport
	dec := json.NewDecoder(strings.NewReader(p.Stdout.String()))
	for {
		rep := &finalizev1alpha1.ReconcileReport{}
		if err := dec.Decode(rep); err != nil {
			return out // the end, or a report still being written
		}
		out = append(out, rep)
	}
}

// awaitPasses waits until the run has printed n more reports than it had when called,
// so that at least one whole pass started after the call.
func (p *process) awaitPasses(t *testing.T, n int) []*finalizev1alpha1.ReconcileReport {
	t.Helper()
	base := len(p.reports(t))
	var reps []*finalizev1alpha1.ReconcileReport
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		reps = p.reports(t)
		return len(reps) >= base+n, nil
	}); err != nil {
		t.Fatalf("%d passes did not come; stderr:\n%s", n, p.Stderr.String())
	}
	return reps
}

// widget creates a widget of crd in ns with the finalizers and the "instance"
// annotation, deleted when stuck is set.
func widget(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name, instance string, stuck bool, finalizers ...string) {
	t.Helper()
	obj := fixture.Custom(gvr, "Widget", ns, name, finalizers...)
	obj.SetAnnotations(map[string]string{"instance": instance})
	fixture.Create(t, fixture.Resource(dyn, gvr, ns), obj, stuck)
}

// TestContinuousModeSeesTheClusterAsItIsNow: a continuous run started before a CRD was
// installed lists its objects in the next passes: it removes a verified finalizer of a
// stuck one, and counts one in a namespace's content, so that the namespace's kubernetes
// finalizer stays while the object is there. Once the CRD is removed again, no pass
// reports the type as unreadable.
func TestContinuousModeSeesTheClusterAsItIsNow(t *testing.T) {
	cp.RequireNoControllerManager(t)
	fin := controlplane.FinalizerOf(t)
	group := strings.TrimSuffix(fin, "/cleanup")
	crd := seed.CRD{Group: group, Kind: "Widget", Plural: "widgets", Singular: "widget", Versions: []string{"v1"}}
	c := fakecloud.New(t)
	rule := strings.Replace(c.Rule("widgets", fin, ""), "resources: [configmaps]", "resources: [widgets."+group+"]", 1)
	policy := cli.WritePolicy(t, "", rule+`- name: namespaces
  finalizers: [kubernetes]
  resources: [namespaces]
  selector: "kubectl-finalize.test/namespace-rule=continuous"
  allowSystem: true
  verify:
    kubernetes: {resource: secrets, namespace: "{.metadata.name}", name: never-created}
  controls: {count: 0}
`)
	p := start(t, cp.AdminKubeconfig, "reconcile", "--policy", policy, "--interval", "1s", "--metrics-bind-address", "0", "-o", "json")
	p.awaitPasses(t, 1)

	// The CRD is installed after the run started, then a stuck widget, and a namespace
	// being deleted whose only content is a widget.
	seeder, err := seed.New(cp.Config, "continuous")
	if err != nil {
		t.Fatal(err)
	}
	if err := seeder.EnsureCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	crdGone := func() {
		_ = seeder.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
			Delete(context.Background(), crd.Name(), metav1.DeleteOptions{})
	}
	t.Cleanup(crdGone)
	p.awaitPasses(t, 2) // a whole pass began after the type was served
	ns, full := cp.Namespace(t), cp.Namespace(t)
	widget(t, seeder.Dynamic, crd.GVR(), ns, "control", "live", false, fin)
	widget(t, seeder.Dynamic, crd.GVR(), ns, "stuck", "deleted-1", true, fin)
	widget(t, seeder.Dynamic, crd.GVR(), full, "held", "live", false, "hold.example.com/keep")
	kube := cp.Kube(t)
	if _, err := kube.CoreV1().Namespaces().Patch(t.Context(), full, "application/merge-patch+json",
		[]byte(`{"metadata":{"labels":{"kubectl-finalize.test/namespace-rule":"continuous"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Namespaces().Delete(t.Context(), full, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reps := p.awaitPasses(t, 2)
	last := reps[len(reps)-1]
	if _, err := seeder.Dynamic.Resource(crd.GVR()).Namespace(ns).Get(t.Context(), "stuck", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the stuck widget, of a type installed after the run started, is still there after two passes (%v); last report: %+v", err, last.Actions)
	}
	n, err := kube.CoreV1().Namespaces().Get(t.Context(), full, metav1.GetOptions{})
	if err != nil || len(n.Spec.Finalizers) != 1 || n.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
		t.Fatalf("namespace %s, whose only content is a widget, lost its kubernetes finalizer (%v): the widget is stranded in etcd", full, err)
	}
	found := false
	for _, a := range last.Actions {
		if a.Target.Name == full {
			found = true
			if a.Result != finalizev1alpha1.ResultKept || !strings.Contains(a.Message, "widgets."+group) {
				t.Errorf("namespace %s: %s %q; want Kept, naming its widget", full, a.Result, a.Message)
			}
		}
	}
	if !found {
		t.Errorf("no action about namespace %s in %+v", full, last.Actions)
	}

	// The CRD goes: no pass reports its type as unreadable.
	for _, w := range []struct{ ns, name string }{{full, "held"}, {ns, "control"}} {
		if _, err := seeder.Dynamic.Resource(crd.GVR()).Namespace(w.ns).Patch(t.Context(), w.name, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	crdGone()
	if err := fixture.WaitGone(t.Context(), 100*time.Millisecond, 30*time.Second, func(ctx context.Context) error {
		_, err := kube.Discovery().ServerResourcesForGroupVersion(group + "/v1")
		return err
	}); err != nil {
		t.Fatalf("the CRD is still served: %v", err)
	}
	reps = p.awaitPasses(t, 2)
	for _, in := range reps[len(reps)-1].Incomplete {
		if strings.Contains(in.GroupVersion, group) {
			t.Errorf("a pass after the CRD was removed still lists its type: %+v", in)
		}
	}
}

// TestContinuousModeDropsATypeRemovedAfterItStarted: a CRD removed while a continuous
// run goes on is no longer listed: no pass reports its type as unreadable (exit 3)
// forever after.
func TestContinuousModeDropsATypeRemovedAfterItStarted(t *testing.T) {
	fin := controlplane.FinalizerOf(t)
	group := strings.TrimSuffix(fin, "/cleanup")
	crd := seed.CRD{Group: group, Kind: "Widget", Plural: "widgets", Singular: "widget", Versions: []string{"v1"}}
	seeder, err := seed.New(cp.Config, "continuous")
	if err != nil {
		t.Fatal(err)
	}
	if err := seeder.EnsureCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	c := fakecloud.New(t)
	policy := cli.WritePolicy(t, "", strings.Replace(c.Rule("widgets", fin, ""), "resources: [configmaps]", "resources: [widgets."+group+"]", 1))
	p := start(t, cp.AdminKubeconfig, "reconcile", "--policy", policy, "--interval", "1s", "--metrics-bind-address", "0", "-o", "json")
	p.awaitPasses(t, 1)
	crds := seeder.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if err := crds.Delete(t.Context(), crd.Name(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := fixture.WaitGone(t.Context(), 100*time.Millisecond, 30*time.Second, func(ctx context.Context) error {
		_, err := cp.Kube(t).Discovery().ServerResourcesForGroupVersion(group + "/v1")
		return err
	}); err != nil {
		t.Fatalf("the CRD is still served: %v", err)
	}
	reps := p.awaitPasses(t, 2)
	for _, in := range reps[len(reps)-1].Incomplete {
		if strings.Contains(in.GroupVersion, group) {
			t.Errorf("a pass after the CRD was removed still lists its type: %+v", in)
		}
	}
	if strings.Contains(p.Stderr.String(), "the server could not find the requested resource") {
		t.Errorf("a pass failed on the removed type; stderr:\n%s", p.Stderr.String())
	}
}

// TestAContinuousRunThatCannotListItsRulesTypeIsNoSuccess: a Deployment runs as the
// ServiceAccount `rbac` made for a rule of configmaps and one whose resources are a
// glob; a CRD the glob
// matches is installed later, and `rbac` was not run again (docs/security.md). Every
// pass lists the new type, is refused, and is incomplete: the stuck widget is never
// considered. A Deployment has no exit status; its signal is the last-success time,
// which must not move while its passes cannot list what their rules act on, or the
// alert that fires when passes stop succeeding never fires.
func TestAContinuousRunThatCannotListItsRulesTypeIsNoSuccess(t *testing.T) {
	fin := controlplane.FinalizerOf(t)
	group := "later." + strings.TrimSuffix(fin, "/cleanup")
	c := fakecloud.New(t)
	policy := cli.WritePolicy(t, "", c.Rule("configmaps", fin, "")+strings.Replace(c.Rule("widgets", fin, ""), "resources: [configmaps]", `resources: ["*.`+group+`"]`, 1))
	kubeconfig, _, _ := serviceAccountWith(t, policy, nil, false)

	crd := seed.CRD{Group: group, Kind: "Widget", Plural: "widgets", Singular: "widget", Versions: []string{"v1"}}
	seeder, err := seed.New(cp.Config, "continuous")
	if err != nil {
		t.Fatal(err)
	}
	if err := seeder.EnsureCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = seeder.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
			Delete(context.Background(), crd.Name(), metav1.DeleteOptions{})
	})
	ns := cp.Namespace(t)
	widget(t, seeder.Dynamic, crd.GVR(), ns, "control", "live", false, fin)
	widget(t, seeder.Dynamic, crd.GVR(), ns, "stuck", "deleted-1", true, fin)

	p := start(t, kubeconfig, "reconcile", "--policy", policy, "--interval", "1s", "--metrics-bind-address", "127.0.0.1:0", "-o", "json")
	reps := p.awaitPasses(t, 2)
	if last := reps[len(reps)-1]; len(last.Incomplete) == 0 {
		t.Fatalf("the pass listed the type its role does not grant: %+v", last)
	}
	addr := regexp.MustCompile(`Serving /metrics and /healthz on (\S+)`).FindStringSubmatch(p.Stderr.String())
	if addr == nil {
		t.Fatalf("no metrics address; stderr:\n%s", p.Stderr.String())
	}
	resp, err := http.Get("http://" + addr[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	metrics := grepMetrics(string(b))
	if !strings.Contains(metrics, `kubectl_finalize_reconcile_passes_total{outcome="incomplete"}`) {
		t.Errorf("/metrics counts no incomplete pass:\n%s", metrics)
	}
	// Never a success: the gauge is at 0, so that the alert on its age fires.
	if m := regexp.MustCompile(`(?m)^kubectl_finalize_reconcile_last_success_timestamp_seconds (\S+)$`).FindStringSubmatch(metrics); len(m) == 2 && m[1] != "0" {
		t.Errorf("passes that could not list their rules' type are counted a success:\n%s", metrics)
	}
}
