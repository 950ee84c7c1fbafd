package preflight

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// deployment creates a Deployment called name in ns, labelled app=name on its pods,
// with annotations and owners, deleted when t ends.
func deployment(t *testing.T, ns, name string, annotations map[string]string, owners ...metav1.OwnerReference) *appsv1.Deployment {
	t.Helper()
	kube := cp.Kube(t)
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations, OwnerReferences: owners}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "manager", Image: "example.com/" + name + ":v1"}}}}}}
	dep, err := kube.AppsV1().Deployments(ns).Create(t.Context(), dep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.AppsV1().Deployments(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return dep
}

// An operator's Deployment owned by a cluster-scoped custom resource (an installer's
// record of it) goes with that resource, so with its CRD: the garbage collector deletes
// it, and the objects that carry its finalizers are stranded.
func TestAnOperatorOwnedByAnInstanceOfTheDeletedCRD(t *testing.T) {
	installs := fixture.CRD(t, cp.Config, seed.CRD{Group: "install.preflight.example.com", Kind: "Install", Plural: "installs", Singular: "install", Cluster: true, Versions: []string{"v1"}})
	group := "owned.preflight.example.com"
	gvr := widgets(t, group)
	ops, team := cp.Namespace(t), cp.Namespace(t)
	inst := fixture.Instance(t, cp.Config, installs, "Install", "", "pf-owned", nil, nil, false)
	deployment(t, ops, "pf-owned-operator", nil, metav1.OwnerReference{APIVersion: installs.GroupVersion().String(), Kind: "Install", Name: inst.GetName(), UID: inst.GetUID()})
	widget(t, gvr, team, "x", group+"/cleanup", "pf-owned-operator", nil)

	rep, _ := preflight(t, 5, "customresourcedefinitions/installs.install.preflight.example.com")
	h := hazard(t, rep, finalizev1alpha1.HazardControllerDeleted, "pf-owned-operator")
	strands(t, h, team+"/x")
}

// helm uninstall deletes the objects of the latest revision, whatever its status, and
// keeps only what the manifest annotates keep: a failed upgrade that added the operator,
// and a keep annotation added by hand to the live object, change nothing to that.
func TestAHelmReleaseAsHelmUninstallSeesIt(t *testing.T) {
	group := "helmrev.preflight.example.com"
	gvr := widgets(t, group)
	ns, team := cp.Namespace(t), cp.Namespace(t)
	ctx, kube := t.Context(), cp.Kube(t)
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pf-rev"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Annotated keep by hand: Helm reads the policy from the manifest, which says nothing.
	deployment(t, ns, "pf-rev-operator", map[string]string{"helm.sh/resource-policy": "keep"})
	widget(t, gvr, team, "w", group+"/cleanup", "pf-rev-operator", nil)
	sa := "---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: pf-rev\n"
	withOperator := sa + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: pf-rev-operator\n"
	for _, s := range []*corev1.Secret{helmRecord(t, "pf-rev", ns, 1, "deployed", sa), helmRecord(t, "pf-rev", ns, 2, "failed", withOperator)} {
		if _, err := kube.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rep, r := preflight(t, 5, "--helm-release", "pf-rev", "-n", ns)
	if rep.HelmRevision != 2 {
		t.Errorf("revision %d read, want 2", rep.HelmRevision)
	}
	h := hazard(t, rep, finalizev1alpha1.HazardControllerDeleted, "pf-rev-operator")
	strands(t, h, team+"/w")
	says(t, "stderr", r.Stderr, "the latest revision of helm release pf-rev, 2, is failed, not deployed")
	if strings.Contains(r.Stderr, "not deleted with the release") {
		t.Errorf("a keep annotation on the live object only kept it: %s", r.Stderr)
	}
}
