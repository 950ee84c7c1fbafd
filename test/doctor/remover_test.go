package doctor

import (
	"strings"
	"testing"

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

// The remover, proven (#34): the doctor reasons about the controller that will remove a
// finalizer, never about the program that wrote it, and counts it alive only when a
// workload of it runs for the object. Each case was Progressing ("wait") on main before.

// TestTheRemoverIsNotTheWriter: an Argo CD Application created by the ApplicationSet
// controller from its template carries resources-finalizer.argocd.argoproj.io, which
// argocd-application-controller removes. The ApplicationSet controller runs; the
// application controller's StatefulSet is scaled to 0. The deletion is a minute old,
// well inside the progress window: the remover being down is the cause at once.
func TestTheRemoverIsNotTheWriter(t *testing.T) {
	ctx, kube := t.Context(), cp.Kube(t)
	apps := fixture.CRD(t, cp.Config, seed.CRD{Group: "argoproj.io", Kind: "Application", Plural: "applications", Singular: "application", Versions: []string{"v1alpha1"}})
	argocd := cp.Namespace(t)
	operator(t, argocd, "argocd-applicationset-controller", 1, 1, "", nil, nil)
	labels := map[string]string{"app.kubernetes.io/name": "argocd-application-controller"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "argocd-application-controller", Labels: labels},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: "quay.io/argoproj/argocd:v3.2.0"}}}}}}
	if _, err := kube.AppsV1().StatefulSets(argocd).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := fixture.Dynamic{ResourceInterface: dynamic.NewForConfigOrDie(cp.Config).Resource(apps).Namespace(argocd), Manager: "argocd-applicationset-controller"}
	fixture.Stuck(t, c, fixture.Custom(apps, "Application", argocd, "guestbook", "resources-finalizer.argocd.argoproj.io"))

	rep := diagnose(t, cp, 0)
	obj := seed.Object{Resource: apps, Namespace: argocd, Name: "guestbook"}
	cause := wantCause(t, rep, obj, finalizev1alpha1.ReasonControllerInactive,
		"argocd-application-controller is expected to remove resources-finalizer.argocd.argoproj.io",
		"its StatefulSet "+argocd+"/argocd-application-controller has 0/0 ready replicas",
		"argocd-applicationset-controller wrote the finalizer, which only says who added it", "bring argocd-application-controller back")
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerInactive, finalizev1alpha1.Subject{Kind: "Controller", Name: "argocd-application-controller"}, obj)
	if strings.Contains(cause.Message, "argocd-applicationset-controller runs") {
		t.Errorf("the writer is taken for the remover: %s", cause.Message)
	}
	if single := causeOf(t, "guestbook", "applications.argoproj.io/guestbook", "-n", argocd); single.Reason != cause.Reason || single.Message != cause.Message {
		t.Errorf("the single-object doctor says %s (%s), the cluster doctor %s (%s)", single.Reason, single.Message, cause.Reason, cause.Message)
	}
}

// TestARemoverScopedToOtherNamespaces: two installs of one operator, each watching its
// own namespace (WATCH_NAMESPACE from the pod's namespace, as operator-sdk's scaffold
// sets it). The one of the object's namespace is scaled to 0; the other runs, a decoy
// for this object. A young deletion: the cause at once, the decoy named.
func TestARemoverScopedToOtherNamespaces(t *testing.T) {
	gvr := widgets(t, "topics.scoped.example.com")
	teamA, teamB := cp.Namespace(t), cp.Namespace(t)
	own := corev1.EnvVar{Name: "WATCH_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}
	operator(t, teamA, "topic-operator", 1, 1, "topics.scoped.example.com", []string{"widgets"}, []string{"get", "list", "watch", "patch", "update"}, own)
	operator(t, teamB, "topic-operator", 0, 0, "", nil, nil, own)
	obj := stuckAs(t, gvr, teamB, "orders", "topics.scoped.example.com/finalizer", "topic-operator")

	rep := diagnose(t, cp, 0)
	cause := wantCause(t, rep, obj, finalizev1alpha1.ReasonControllerInactive,
		"not running for this object: Deployment "+teamA+"/topic-operator: its pod template sets env WATCH_NAMESPACE to "+teamA+": it may not watch namespace "+teamB,
		"let topic-operator watch namespace "+teamB)
	if strings.Contains(cause.Message, "runs (") {
		t.Errorf("a copy scoped to another namespace is taken as running for the object: %s", cause.Message)
	}
	// Its writes elsewhere (the copy's, in its own namespace) do not revive it either.
	stuckAs(t, gvr, teamA, "payments", "topics.scoped.example.com/finalizer", "topic-operator")
	rep = diagnose(t, cp, 0)
	wantCause(t, rep, obj, finalizev1alpha1.ReasonControllerInactive, "not running for this object: Deployment "+teamA+"/topic-operator")
}

// TestInstallsThatDoNotSayWhatTheyWatch: one operator installed in two namespaces, each
// ready, neither saying in its pod template which namespaces it watches (scoped by a
// ConfigMap of its own, say). An object in a third namespace waits for a young deletion.
// Neither install is proven to run for it: whether its remover runs is Unknown, both
// named (on main before, both counted as running for it: Progressing). An
// install in the object's own namespace is proven: it watches every namespace or its
// own.
func TestInstallsThatDoNotSayWhatTheyWatch(t *testing.T) {
	gvr := widgets(t, "queues.tenants.example.com")
	teamA, teamB, apps := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	may := []string{"get", "list", "watch", "patch", "update"}
	operator(t, teamA, "queue-operator", 1, 1, "queues.tenants.example.com", []string{"widgets"}, may)
	operator(t, teamB, "queue-operator", 1, 1, "queues.tenants.example.com", []string{"widgets"}, may)
	obj := stuckAs(t, gvr, apps, "orders", "queues.tenants.example.com/finalizer", "queue-operator")

	rep := diagnose(t, cp, 0)
	cause := wantCause(t, rep, obj, finalizev1alpha1.ReasonUnknown,
		"queue-operator is expected to remove queues.tenants.example.com/finalizer, but whether it runs for this object cannot be told",
		"Deployment "+teamA+"/queue-operator: its pod template does not say which namespaces it watches, and the program is installed in other namespaces too ("+teamB+")",
		"Deployment "+teamB+"/queue-operator",
		"find which install of queue-operator watches namespace "+apps)
	if strings.Contains(cause.Message, "runs (") {
		t.Errorf("an install that may watch its own namespace only is taken as running for the object: %s", cause.Message)
	}
	wantRoot(t, rep, finalizev1alpha1.ReasonUnknown, finalizev1alpha1.Subject{Kind: "Controller", Name: "queue-operator"}, obj)

	operator(t, apps, "queue-operator", 1, 1, "queues.tenants.example.com", []string{"widgets"}, may)
	rep = diagnose(t, cp, 0)
	wantCause(t, rep, obj, finalizev1alpha1.ReasonProgressing, "queue-operator runs (its Deployment "+apps+"/queue-operator has 1/1 ready replicas")
}

// TestAForbiddenRemoverIsTheCauseAtOnce: the remover runs for the object's namespace but
// its ServiceAccount may not patch the object; the deletion is young. Forbidden now, not
// "wait".
func TestAForbiddenRemoverIsTheCauseAtOnce(t *testing.T) {
	gvr := widgets(t, "locked.example.com")
	ops, apps := cp.Namespace(t), cp.Namespace(t)
	operator(t, ops, "locked-operator", 1, 1, "locked.example.com", []string{"widgets"}, []string{"get", "list", "watch"})
	obj := stuckAs(t, gvr, apps, "orders", "locked.example.com/finalizer", "locked-operator")

	rep := diagnose(t, cp, 0)
	wantCause(t, rep, obj, finalizev1alpha1.ReasonControllerForbidden, "locked-operator runs (its Deployment "+ops+"/locked-operator has 1/1 ready replicas",
		"ServiceAccount "+ops+"/locked-operator (of Deployment "+ops+"/locked-operator) may not patch")
}

// TestTheCatalogueOf2025: a finalizer the catalogue learnt in 2025-26, OLM v1's
// olm.operatorframework.io/cleanup-unpack-cache on a ClusterExtension, written by the
// operator's binary (kubebuilder's "manager"). Its remover is
// operator-controller-controller-manager, scaled to 0: the scan names that owner from the
// catalogue, and the doctor says what the finalizer guards. On main before #34 the owner
// came from the API group and the doctor could not locate it.
func TestTheCatalogueOf2025(t *testing.T) {
	gvr := fixture.CRD(t, cp.Config, seed.CRD{Group: "olm.operatorframework.io", Kind: "ClusterExtension", Plural: "clusterextensions", Singular: "clusterextension", Cluster: true, Versions: []string{"v1"}})
	olm := cp.Namespace(t)
	operator(t, olm, "operator-controller-controller-manager", 0, 0, "", nil, nil)
	c := fixture.Dynamic{ResourceInterface: dynamic.NewForConfigOrDie(cp.Config).Resource(gvr), Manager: "manager"}
	name := "argocd-" + olm
	fixture.Stuck(t, c, fixture.Custom(gvr, "ClusterExtension", "", name, "olm.operatorframework.io/cleanup-unpack-cache"))

	rep := diagnose(t, cp, 0)
	obj := seed.Object{Resource: gvr, Name: name}
	o := find(t, rep, obj)
	if f := o.Finalizers[0]; f.Owner != "operator-controller-controller-manager" || f.OwnerSource != finalizev1alpha1.OwnerSourceCatalog {
		t.Errorf("finalizer %+v: want the catalogue's owner", f)
	}
	wantCause(t, rep, obj, finalizev1alpha1.ReasonControllerInactive,
		"its Deployment "+olm+"/operator-controller-controller-manager has 0/0 ready replicas",
		"the ClusterExtension's unpacked bundle cache is removed")
}

// TestARestoreIsNotTheRemoverOfAnUncataloguedFinalizer: a finalizer the catalogue does
// not know, on an object a restore tool wrote whole (its spec and the finalizer with it)
// while a running restore tool's workload is in the cluster. The restore tool added the
// finalizer; nothing says it removes it: the owner is the API group's controller,
// unlocated, and the cause Unknown, never Progressing because the restore tool runs. Beside
// it, the same finalizer added by widget-operator to an object kubectl created: the
// operator's writes are a controller's, and it is inactive. On main before, the restore
// tool was the owner, and the first object Progressing.
func TestARestoreIsNotTheRemoverOfAnUncataloguedFinalizer(t *testing.T) {
	group := "restored.accuracy.example"
	gvr := widgets(t, group)
	ns, tools := cp.Namespace(t), cp.Namespace(t)
	operator(t, tools, "restore-tool", 1, 1, "", nil, nil)
	dyn := dynamic.NewForConfigOrDie(cp.Config)

	restored := fixture.Custom(gvr, "Widget", ns, "restored", group+"/cleanup")
	restored.Object["spec"] = map[string]any{"size": int64(3)}
	fixture.Stuck(t, fixture.Dynamic{ResourceInterface: dyn.Resource(gvr).Namespace(ns), Manager: "restore-tool"}, restored)

	held := fixture.Custom(gvr, "Widget", ns, "held")
	held.Object["spec"] = map[string]any{"size": int64(3)}
	fixture.Held(t, fixture.Dynamic{ResourceInterface: dyn.Resource(gvr).Namespace(ns), Manager: "kubectl-client-side-apply"}, held)
	patch := []byte(`{"metadata":{"finalizers":["` + group + `/cleanup"]}}`)
	if _, err := dyn.Resource(gvr).Namespace(ns).Patch(t.Context(), "held", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "widget-operator"}); err != nil {
		t.Fatal(err)
	}
	fixture.Delete(t, fixture.Dynamic{ResourceInterface: dyn.Resource(gvr).Namespace(ns)}, "held")

	rep := diagnose(t, cp, 0)
	restoredObj, heldObj := seed.Object{Resource: gvr, Namespace: ns, Name: "restored"}, seed.Object{Resource: gvr, Namespace: ns, Name: "held"}
	if f := find(t, rep, restoredObj).Finalizers[0]; f.Owner != group || f.OwnerSource != finalizev1alpha1.OwnerSourceAPIGroup || f.AddedBy != "restore-tool" {
		t.Errorf("the restored object's finalizer %+v: want the API group's, added by restore-tool", f)
	}
	wantCause(t, rep, restoredObj, finalizev1alpha1.ReasonUnknown,
		"the finalizer was written by restore-tool, which wrote the object's content and does not write its status",
		"says who added the finalizer, not who removes it")
	if f := find(t, rep, heldObj).Finalizers[0]; f.Owner != "widget-operator" || f.OwnerSource != finalizev1alpha1.OwnerSourceManagedFields {
		t.Errorf("the held object's finalizer %+v: want widget-operator's", f)
	}
	wantCause(t, rep, heldObj, finalizev1alpha1.ReasonControllerInactive, "widget-operator has written nothing since the deletion began")
}
