package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

func gvr(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Version: "v1", Resource: resource}
}

// addFinalizer adds a metadata finalizer to a namespace as manager would.
func addFinalizer(t *testing.T, ns, finalizer, manager string) {
	t.Helper()
	body := fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, finalizer)
	if _, err := cp.Kube(t).CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(body), metav1.PatchOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
}

// TestOnlyTheOwnerShowsProgress: an operator's finalizer, written from a manifest, on a
// namespace whose conditions the namespace controller keeps rewriting. The namespace
// controller's writes prove nothing about that finalizer: not Progressing.
func TestOnlyTheOwnerShowsProgress(t *testing.T) {
	cp.RequireControllerManager(t)
	ns := cp.Namespace(t)
	addFinalizer(t, ns, "ops.accuracy.example/cleanup", "kubectl-client-side-apply")
	if err := cp.Kube(t).CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace controller does its part (its conditions, its own finalizer) and
	// then keeps rewriting the namespace's status.
	if err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := cp.Kube(t).CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err == nil && len(n.Spec.Finalizers) == 0 && len(n.Status.Conditions) > 0, nil
	}); err != nil {
		t.Fatal(err)
	}
	rep := diagnose(t, cp, 0)
	c := wantCause(t, rep, seed.Object{Resource: gvr("namespaces"), Name: ns}, finalizev1alpha1.ReasonUnknown, "nothing tells who should remove ops.accuracy.example/cleanup")
	if strings.Contains(c.Message, "kube-controller-manager is active") {
		t.Errorf("the namespace controller's writes were taken for the owner's: %s", c.Message)
	}
	_, _ = cp.Kube(t).CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
}

// TestAParentDomainIsNotAGroupsFinalizer: a finalizer under example.com is not owned by
// the controller of a served group widgets.<it>.
func TestAParentDomainIsNotAGroupsFinalizer(t *testing.T) {
	s, err := seed.New(cp.Config, "domain")
	if err != nil {
		t.Fatal(err)
	}
	parent := "parent.accuracy.example"
	crd := seed.CRD{Group: "widgets." + parent, Kind: "Widget", Plural: "widgets", Singular: "widget", Versions: []string{"v1"}}
	if err := s.EnsureCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	for _, f := range []string{parent + "/cleanup", "widgets." + parent + "/cleanup"} {
		name := strings.ReplaceAll(strings.Split(f, "/")[0], ".", "-")
		stuck(t, s.Dynamic, crd.GVR(), ns, name, f)
	}
	r := cli.Run(t, cp.AdminKubeconfig, "scan", "-n", ns, "-o", "json")
	var list finalizev1alpha1.StuckObjectList
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("%v: %s", err, r.Stderr)
	}
	owners := map[string]finalizev1alpha1.Finalizer{}
	for _, it := range list.Items {
		owners[it.Finalizers[0].Name] = it.Finalizers[0]
	}
	if f := owners[parent+"/cleanup"]; f.OwnerSource != finalizev1alpha1.OwnerSourceUnknown || f.Owner != "" {
		t.Errorf("a parent domain: %+v", f)
	}
	if f := owners["widgets."+parent+"/cleanup"]; f.OwnerSource != finalizev1alpha1.OwnerSourceAPIGroup || f.Owner != "widgets."+parent {
		t.Errorf("the group's own domain: %+v", f)
	}
}

func stuck(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name, finalizer string) {
	t.Helper()
	fixture.Stuck(t, fixture.Dynamic{ResourceInterface: dyn.Resource(gvr).Namespace(ns), Manager: "kubectl-client-side-apply"},
		fixture.Custom(gvr, "Widget", ns, name, finalizer))
}

// TestWhatIsObservedBeatsWhatIsReported: the namespace controller's conditions say all
// content is removed while a pod waits for its kubelet and a configmap is not deleted
// yet. The doctor believes the content, and names the pod that holds up the rest.
func TestWhatIsObservedBeatsWhatIsReported(t *testing.T) {
	cp.RequireNoControllerManager(t)
	kube := cp.Kube(t)
	ns := cp.Namespace(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0"},
		Spec: corev1.PodSpec{NodeName: "node-gone", TerminationGracePeriodSeconds: ptr.To[int64](3600), Containers: []corev1.Container{{Name: "web", Image: "nginx:1.29"}}}}
	if _, err := kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Pods(ns).Delete(t.Context(), "web-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// What the namespace controller reports early on: nothing remains.
	cur, err := kube.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.Conditions = []corev1.NamespaceCondition{
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse, Reason: "ContentRemoved", Message: "All content successfully removed", LastTransitionTime: metav1.Now()},
		{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionFalse, Reason: "ContentHasNoFinalizers", Message: "All content-preserving finalizers finished", LastTransitionTime: metav1.Now()},
	}
	if _, err := kube.CoreV1().Namespaces().UpdateStatus(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := diagnose(t, cp, 0)
	nsObj := seed.Object{Resource: gvr("namespaces"), Name: ns}
	c := wantCause(t, rep, nsObj, finalizev1alpha1.ReasonNamespaceContentRemaining,
		"the namespace controller's conditions report no remaining content, but the scan found the namespace still holds objects",
		"pods/web-0 (being deleted)", "configmaps/settings (not deleted yet)",
		"the namespace controller deletes the namespace's pods first and nothing else until they are gone (ordered namespace deletion, Kubernetes 1.33 and later), so 1 object is not deleted yet",
		"kubectl delete pods -n "+ns+" --all --grace-period=0 --force")
	if c.Reason == finalizev1alpha1.ReasonProgressing {
		t.Errorf("believed the conditions: %+v", c)
	}
	_ = kube.CoreV1().Pods(ns).Delete(t.Context(), "web-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}

// TestADescriptionIsNotAWorkloadName: a catalogue owner known only by a description is
// not looked for as a Deployment of that name; an owner with known workloads is.
func TestADescriptionIsNotAWorkloadName(t *testing.T) {
	s, err := seed.New(cp.Config, "describe")
	if err != nil {
		t.Fatal(err)
	}
	crd := seed.CRD{Group: "things.accuracy.example", Kind: "Widget", Plural: "widgets", Singular: "widget", Versions: []string{"v1"}}
	if err := s.EnsureCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	stuck(t, s.Dynamic, crd.GVR(), ns, "managed", "finalizer.managedresource.crossplane.io")
	stuck(t, s.Dynamic, crd.GVR(), ns, "challenge", "acme.cert-manager.io/finalizer")
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "cert-manager"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cm"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "cm"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "cert-manager:1"}}}}}}
	if _, err := cp.Kube(t).AppsV1().Deployments(ns).Create(t.Context(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := diagnose(t, cp, 0)
	managed := wantCause(t, rep, seed.Object{Resource: crd.GVR(), Namespace: ns, Name: "managed"}, finalizev1alpha1.ReasonUnknown,
		"the Crossplane provider of this managed resource is expected to remove finalizer.managedresource.crossplane.io, but nothing identifies where it runs")
	if strings.Contains(managed.Message, "named the Crossplane provider") {
		t.Errorf("a description was used as a name: %s", managed.Message)
	}
	wantCause(t, rep, seed.Object{Resource: crd.GVR(), Namespace: ns, Name: "challenge"}, finalizev1alpha1.ReasonControllerInactive,
		"Deployment "+ns+"/cert-manager has 0/1 ready replicas")
}

// TestOneDeadOperatorIsSaidOnce: thirty objects of one operator, one sentence.
func TestOneDeadOperatorIsSaidOnce(t *testing.T) {
	s, err := seed.New(cp.Config, "scale")
	if err != nil {
		t.Fatal(err)
	}
	crd := seed.CRD{Group: "scale.accuracy.example", Kind: "Widget", Plural: "widgets", Singular: "widget", Versions: []string{"v1"}}
	if err := s.EnsureCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	c := fixture.Dynamic{ResourceInterface: s.Dynamic.Resource(crd.GVR()).Namespace(ns), Manager: "scale-operator"}
	// The operator writes every object, then they are all deleted: it has written
	// nothing since any deletion began.
	for i := range 30 {
		fixture.Held(t, c, fixture.Custom(crd.GVR(), "Widget", ns, fmt.Sprintf("w-%02d", i), "scale.accuracy.example/cleanup"))
	}
	for i := range 30 {
		fixture.Delete(t, c, fmt.Sprintf("w-%02d", i))
	}
	r := cli.Run(t, cp.AdminKubeconfig, "doctor", "-n", ns)
	if n := strings.Count(r.Stdout, "has written nothing"); n != 1 || !strings.Contains(r.Stdout, "widgets.scale.accuracy.example -n "+ns+" (30): w-00, w-01") ||
		!strings.Contains(r.Stdout, "and 22 more (-o json lists them all)") {
		t.Errorf("the sentence is said %d times:\n%s", n, r.Stdout)
	}
	r = cli.Run(t, cp.AdminKubeconfig, "doctor", "-n", ns, "-o", "json")
	var d finalizev1alpha1.Diagnosis
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil || len(d.Items) != 30 || len(d.RootCauses) != 1 || len(d.RootCauses[0].Objects) != 30 {
		t.Errorf("-o json stays complete: %v, %d items", err, len(d.Items))
	}
	// -o name pipes into kubectl as `kubectl get -o name` does.
	r = cli.Run(t, cp.AdminKubeconfig, "scan", "-n", ns, "-o", "name")
	names := strings.Fields(r.Stdout)
	if len(names) != 30 || names[0] != "widget.scale.accuracy.example/w-00" {
		t.Fatalf("-o name: %q", names)
	}
	r = cli.Kubectl(cp, append([]string{"get", "-n", ns, "-o", "name"}, names...)...).Run(t)
	if out := strings.Fields(r.Stdout + r.Stderr); r.Code != 0 || len(out) == 0 || out[0] != names[0] {
		t.Errorf("kubectl get %s: exit %d\n%s%s", names[0], r.Code, r.Stdout, r.Stderr)
	}
}
