package preflight

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
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

// An APIService whose service stays while the only Deployment whose pods it selects is
// deleted: its deletion strands no namespace (none is deleted), so the APIService is
// named for what deleting the Deployment does to it. And, no pod running, it is
// unavailable already: a deletion of any namespace beside it is certainly stuck (exit 5),
// where before #34 it was only incomplete (exit 3).
func TestAnAPIServiceWhoseWorkloadIsDeleted(t *testing.T) {
	ns, other := cp.Namespace(t), cp.Namespace(t)
	ctx, kube := t.Context(), cp.Kube(t)
	deployment(t, ns, "pf-api-server", nil)
	// Headless: nothing is ever sent to a cluster IP; no pod runs, so no endpoints.
	if _, err := kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "pf-api2"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "pf-api-server"}, Ports: []corev1.ServicePort{{Port: 443}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := "v1.api2.preflight.example.com"
	apiService(t, name, "api2.preflight.example.com", ns, "pf-api2")
	fixture.UnavailableFor(t, cp.Config, name, 5*time.Minute)

	rep, _ := preflight(t, 5, "deployments.apps/pf-api-server", "-n", ns)
	h := hazard(t, rep, finalizev1alpha1.HazardAPIServiceServiceDeleted, name)
	strands(t, h)
	says(t, "message", h.Message, "the pods of its service "+ns+"/pf-api2 are those of deployments.apps/pf-api-server", "no namespace in the cluster can finish deleting")
	says(t, "safe order", h.SafeOrder[0], "kubectl delete apiservices.apiregistration.k8s.io/"+name)

	rep, _ = preflight(t, 5, "namespaces/"+other)
	h = hazard(t, rep, finalizev1alpha1.HazardAPIServiceUnavailable, name)
	strands(t, h, "/"+other)
	found := false
	for _, in := range rep.Incomplete {
		found = found || (in.GroupVersion == "api2.preflight.example.com/v1" && in.Reason == finalizev1alpha1.ReasonDiscoveryFailed)
	}
	if !found {
		t.Errorf("incomplete %+v: the group that cannot be discovered is not said", rep.Incomplete)
	}
}

// A CRD that stays while the service of its conversion webhook goes, its objects
// readable at the version they are stored at (the preferred one, so listing them needs no
// conversion): only the namespaces of the deletion that hold its objects are stranded.
func TestAConversionWebhookWhoseObjectsCanBeListed(t *testing.T) {
	group := "conv2.preflight.example.com"
	svcNS, holds, empty := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	// v1 is stored and preferred (it outranks v1beta1): the scan lists it as stored.
	conversionCRD(t, group, "Gizmo", "v1beta1", svcNS, "pf-conv2", holds)

	rep, _ := preflight(t, 5, "namespaces/"+svcNS, "namespaces/"+holds, "namespaces/"+empty)
	if len(rep.Incomplete) != 0 {
		t.Fatalf("incomplete %+v: the gizmos must be listed", rep.Incomplete)
	}
	h := hazard(t, rep, finalizev1alpha1.HazardWebhookServiceDeleted, "gizmos."+group)
	strands(t, h, "/"+holds)
	says(t, "message", h.Message, "its service "+svcNS+"/pf-conv2 is deleted")
}

// An operator that runs as a StatefulSet inside the namespace deleted; the targets named
// with kubectl's short names (ns/, sts/, crd/).
func TestAStatefulSetOperatorInsideTheNamespace(t *testing.T) {
	group := "sts.preflight.example.com"
	gvr := widgets(t, group)
	ns := cp.Namespace(t)
	ctx, kube := t.Context(), cp.Kube(t)
	labels := map[string]string{"app": "pf-sts-operator"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "pf-sts-operator"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "manager", Image: "example.com/pf-sts-operator:v1"}}}}}}
	if _, err := kube.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.AppsV1().StatefulSets(ns).Delete(context.Background(), sts.Name, metav1.DeleteOptions{})
	})
	widget(t, gvr, ns, "s", group+"/cleanup", "pf-sts-operator", nil)

	rep, _ := preflight(t, 5, "ns/"+ns)
	h := hazard(t, rep, finalizev1alpha1.HazardOperatorDeletedFirst, ns)
	strands(t, h, ns+"/s")
	says(t, "message", h.Message, "pf-sts-operator (StatefulSet "+ns+"/pf-sts-operator)")

	rep, _ = preflight(t, 5, "sts/pf-sts-operator", "-n", ns)
	strands(t, hazard(t, rep, finalizev1alpha1.HazardControllerDeleted, "pf-sts-operator"), ns+"/s")
	rep, _ = preflight(t, 5, "crd/widgets."+group)
	strands(t, hazard(t, rep, finalizev1alpha1.HazardCRDInstancesWithFinalizers, "widgets."+group), ns+"/s")
}

// An operator installed once per namespace: deleting one namespace's install strands that
// namespace's objects even though another install of the same name survives elsewhere;
// objects in the survivor's own namespace stay safe.
func TestAnOperatorInstalledPerNamespace(t *testing.T) {
	group := "perns.preflight.example.com"
	gvr := widgets(t, group)
	a, b := cp.Namespace(t), cp.Namespace(t)
	operator(t, a, "pf-perns-operator")
	operator(t, b, "pf-perns-operator")
	widget(t, gvr, a, "in-a", group+"/cleanup", "pf-perns-operator", nil)
	widget(t, gvr, b, "in-b", group+"/cleanup", "pf-perns-operator", nil)

	rep, _ := preflight(t, 5, "namespaces/"+a)
	h := hazard(t, rep, finalizev1alpha1.HazardOperatorDeletedFirst, a)
	strands(t, h, a+"/in-a")
	says(t, "message", h.Message, "unless Deployment "+b+"/pf-perns-operator, which stays, watches namespace "+a)
	if len(rep.Hazards) != 1 {
		t.Errorf("hazards %+v: want one, the objects of %s", rep.Hazards, a)
	}

	rep, _ = preflight(t, 5, "deployments.apps/pf-perns-operator", "-n", a)
	h = hazard(t, rep, finalizev1alpha1.HazardControllerDeleted, "pf-perns-operator")
	strands(t, h, a+"/in-a")
	if h.Cause.Namespace != a {
		t.Errorf("cause %+v: want the Deployment of %s", h.Cause, a)
	}
	says(t, "message", h.Message, "its only workload in namespace "+a, "Deployment "+b+"/pf-perns-operator, which stays, removes them only if it watches namespace "+a)
}

// A CRD of a cluster-scoped type whose instances carry finalizers.
func TestACRDOfClusterScopedInstances(t *testing.T) {
	group := "cluster.preflight.example.com"
	gvr := fixture.CRD(t, cp.Config, seed.CRD{Group: group, Kind: "Gadget", Plural: "gadgets", Singular: "gadget", Cluster: true, Versions: []string{"v1"}})
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	fixture.Held(t, fixture.Dynamic{ResourceInterface: dyn.Resource(gvr), Manager: "pf-gadget-operator"}, fixture.Custom(gvr, "Gadget", "", "pf-g", group+"/cleanup"))

	rep, _ := preflight(t, 5, "crd/gadgets."+group)
	h := hazard(t, rep, finalizev1alpha1.HazardCRDInstancesWithFinalizers, "gadgets."+group)
	strands(t, h, "/pf-g")
}

// A namespace already Terminating (nothing runs the namespace controller here) is
// predicted as one that is not: its operator and the objects it finalizes.
func TestANamespaceAlreadyTerminating(t *testing.T) {
	group := "term.preflight.example.com"
	gvr := widgets(t, group)
	ns := cp.Namespace(t)
	operator(t, ns, "pf-term-operator")
	widget(t, gvr, ns, "t", group+"/cleanup", "pf-term-operator", nil)
	if err := cp.Kube(t).CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, _ := preflight(t, 5, "namespaces/"+ns)
	strands(t, hazard(t, rep, finalizev1alpha1.HazardOperatorDeletedFirst, ns), ns+"/t")
}

// Other workloads of the operator's name stay, but one is scaled to 0 and the other
// watches only its own namespace (WATCH_NAMESPACE): the objects elsewhere are stranded,
// those in the namespace it watches are not.
func TestAnOperatorWhoseOtherWorkloadsDoNotRunForTheObjects(t *testing.T) {
	group := "idle.preflight.example.com"
	gvr := widgets(t, group)
	ops, zero, own, team := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	kube := cp.Kube(t)
	operator(t, ops, "pf-idle-operator")
	for _, d := range []struct {
		ns       string
		replicas int32
		env      []corev1.EnvVar
	}{{zero, 0, nil}, {own, 1, []corev1.EnvVar{{Name: "WATCH_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}} {
		labels := map[string]string{"app": "pf-idle-operator"}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "pf-idle-operator"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(d.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "manager", Image: "example.com/pf-idle-operator:v1", Env: d.env}}}}}}
		if _, err := kube.AppsV1().Deployments(d.ns).Create(t.Context(), dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ns := d.ns
		t.Cleanup(func() {
			_ = kube.AppsV1().Deployments(ns).Delete(context.Background(), "pf-idle-operator", metav1.DeleteOptions{})
		})
	}
	widget(t, gvr, team, "w", group+"/cleanup", "pf-idle-operator", nil)
	widget(t, gvr, own, "watched", group+"/cleanup", "pf-idle-operator", nil)

	rep, _ := preflight(t, 5, "deployments.apps/pf-idle-operator", "-n", ops)
	h := hazard(t, rep, finalizev1alpha1.HazardControllerDeleted, "pf-idle-operator")
	strands(t, h, team+"/w")
	says(t, "message", h.Message, "runs as Deployment "+ops+"/pf-idle-operator, which the deletion removes",
		"Deployment "+zero+"/pf-idle-operator (scaled to 0)", "Deployment "+own+"/pf-idle-operator (watches only "+own+")", "stays but does not remove them")
	if len(rep.Hazards) != 1 {
		t.Errorf("hazards %+v: want one", rep.Hazards)
	}
}

// A CRD deleted with its conversion webhook's service, while objects remain and the CRD
// says some were stored at another version: its cleanup needs the webhook.
func TestACRDDeletedWithItsConversionWebhook(t *testing.T) {
	group := "conv3.preflight.example.com"
	svcNS, holds := cp.Namespace(t), cp.Namespace(t)
	ctx := t.Context()
	name := "doodads." + group
	crds := conversionCRD(t, group, "Doodad", "v1beta1", svcNS, "pf-conv3", holds)
	// A CRD migrated from v1beta1 whose storedVersions still names it, as storage
	// migration leaves it until someone trims it.
	patch := []byte(`{"status":{"storedVersions":["v1beta1","v1"]}}`)
	if _, err := crds.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}

	rep, _ := preflight(t, 5, "crd/"+name, "namespaces/"+svcNS)
	h := hazard(t, rep, finalizev1alpha1.HazardWebhookServiceDeleted, name)
	says(t, "message", h.Message, "is deleted with 1 object", "stored at versions v1beta1, v1", "its service "+svcNS+"/pf-conv3 is deleted")
	says(t, "safe order", h.SafeOrder[0], "kubectl delete doodads."+group+" --all --all-namespaces")

	// Without objects stored at another version, the same deletion is safe.
	if _, err := crds.Patch(ctx, name, types.MergePatchType, []byte(`{"status":{"storedVersions":["v1"]}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	preflight(t, 0, "crd/"+name, "namespaces/"+svcNS)
}
