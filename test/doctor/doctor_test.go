package doctor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

func must(t *testing.T) func(seed.Scenario, error) seed.Scenario {
	return func(sc seed.Scenario, err error) seed.Scenario {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
}

// waitCondition waits until the namespace controller reports typ on namespace ns.
func waitCondition(t *testing.T, plane *controlplane.ControlPlane, ns string, typ corev1.NamespaceConditionType) {
	t.Helper()
	c := plane.Kube(t)
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == typ && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("namespace %s never got condition %s: %v", ns, typ, err)
	}
}

// TestEveryCauseWithTheControllers diagnoses, with kube-controller-manager running, one
// scenario per cause, and the chain namespace → custom resource → controller gone.
func TestEveryCauseWithTheControllers(t *testing.T) {
	cp.RequireControllerManager(t)
	ctx := t.Context()
	s, err := seed.New(cp.Config, "dr")
	if err != nil {
		t.Fatal(err)
	}
	orphaned := must(t)(s.OrphanedOperator(ctx))
	pvc := must(t)(s.PVCInUse(ctx))
	fg := must(t)(s.ForegroundDeletion(ctx))
	crd := must(t)(s.CRDWaitingOnInstances(ctx))
	pv := must(t)(s.BoundVolume(ctx))
	hook := must(t)(s.WebhookBlocking(ctx))
	t.Cleanup(func() {
		_ = cp.Kube(t).AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), s.GuardWebhook(), metav1.DeleteOptions{})
	})
	failing := must(t)(s.FailingController(ctx))
	busy := must(t)(s.BusyController(ctx))
	unowned := must(t)(s.UnownedFinalizer(ctx))
	lb := must(t)(s.ClusterScoped(ctx))
	// lb-operator is "installed" but never becomes ready: no kubelet runs its pod.
	ops := s.Name("ops")
	if err := s.Namespace(ctx, ops); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app.kubernetes.io/name": seed.ManagerLBOperator}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ops, Name: "lb-operator-controller-manager", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "example.com/lb-operator:v1"}}}},
		},
	}
	if _, err := cp.Kube(t).AppsV1().Deployments(ops).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace controller reports on the namespace after its fixed 5 s delay.
	waitCondition(t, cp, orphaned.Stuck[1].Name, corev1.NamespaceFinalizersRemaining)

	rep := diagnose(t, cp, 0)
	db, ns := orphaned.Stuck[0], orphaned.Stuck[1]

	wantCause(t, rep, db, finalizev1alpha1.ReasonControllerInactive, "database-operator has written nothing since the deletion began",
		"no Deployment, StatefulSet or DaemonSet named database-operator", "kubectl finalize remove databases."+s.Group("db")+"/orders-db -n "+db.Namespace+" --finalizer "+s.DatabaseFinalizer())
	nsCause := wantCause(t, rep, ns, finalizev1alpha1.ReasonNamespaceFinalizersRemaining, "Some content in the namespace has finalizers remaining: "+s.DatabaseFinalizer()+" in 1 resource instances")
	if len(nsCause.Blockers) != 1 || !nsCause.Blockers[0].Stuck || nsCause.Blockers[0].Target.Name != "orders-db" {
		t.Errorf("the namespace's blockers %+v, want the stuck database", nsCause.Blockers)
	}
	// The chain: the namespace is explained by the database's root cause.
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerInactive, finalizev1alpha1.Subject{Kind: "Controller", Name: "database-operator"}, db, ns)

	claimCause := wantCause(t, rep, pvc.Stuck[0], finalizev1alpha1.ReasonPodsUsingClaim, "db-0 (Pending on node node-a)")
	if len(claimCause.Blockers) != 1 || claimCause.Blockers[0].Target.Kind != "Pod" || claimCause.Blockers[0].Target.Name != "db-0" {
		t.Errorf("claim blockers %+v", claimCause.Blockers)
	}
	wantRoot(t, rep, finalizev1alpha1.ReasonPodsUsingClaim, finalizev1alpha1.Subject{Kind: "Pod", Namespace: pvc.Stuck[0].Namespace, Name: "db-0"}, pvc.Stuck[0])

	wantCause(t, rep, fg.Stuck[0], finalizev1alpha1.ReasonDependentsRemaining, "1 dependent with blockOwnerDeletion: configmaps/web-config -n "+fg.Stuck[0].Namespace+" (stuck)")
	wantCause(t, rep, fg.Stuck[1], finalizev1alpha1.ReasonControllerInactive, "config-exporter has written nothing")
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerInactive, finalizev1alpha1.Subject{Kind: "Controller", Name: "config-exporter"}, fg.Stuck[0], fg.Stuck[1])

	wantCause(t, rep, crd.Stuck[0], finalizev1alpha1.ReasonInstancesRemaining, "1 instance of the CRD stuck", "InstanceDeletionInProgress")
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerInactive, finalizev1alpha1.Subject{Kind: "Controller", Name: "gadget-controller"}, crd.Stuck[0], crd.Stuck[1])

	wantCause(t, rep, pv.Stuck[0], finalizev1alpha1.ReasonClaimStillBound, "still bound to claim "+s.Name("volumes")+"/archive")

	hookCause := wantCause(t, rep, hook.Stuck[0], finalizev1alpha1.ReasonWebhookBlocking, "ValidatingWebhookConfiguration "+s.GuardWebhook(), "service "+s.Name("guarded")+"/guard does not exist")
	if len(hookCause.Blockers) == 0 || hookCause.Blockers[0].Target.Kind != "ValidatingWebhookConfiguration" {
		t.Errorf("webhook blockers %+v", hookCause.Blockers)
	}

	wantCause(t, rep, failing.Stuck[0], finalizev1alpha1.ReasonControllerFailing, "billing-operator reports CleanupFailed: deleting cloud database billing-db: 403 AccessDenied", "(7 times")
	// A busy controller is not called stuck.
	wantCause(t, rep, busy.Stuck[0], finalizev1alpha1.ReasonProgressing, "analytics-operator is active", "stuck is not proven yet")
	wantCause(t, rep, unowned.Stuck[0], finalizev1alpha1.ReasonUnknown, "nothing tells who should remove cleanup.mystery-vendor.example/final")
	wantCause(t, rep, lb.Stuck[0], finalizev1alpha1.ReasonControllerInactive, "Deployment "+ops+"/lb-operator-controller-manager has 0/1 ready replicas")
}

// TestWithoutTheControllers: without kube-controller-manager, nothing processes a deleted
// namespace, an orphaning deletion or an unused claim.
func TestWithoutTheControllers(t *testing.T) {
	cp.RequireNoControllerManager(t)
	ctx := t.Context()
	c := cp.Kube(t)
	ns := cp.Namespace(t)
	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	orphanNS := cp.Namespace(t)
	if _, err := c.CoreV1().ConfigMaps(orphanNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "parent"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().ConfigMaps(orphanNS).Delete(ctx, "parent", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	// An unused claim: only the pvc-protection controller would release it.
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "unused"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(""),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *oneGi()}}},
	}
	if _, err := c.CoreV1().PersistentVolumeClaims(orphanNS).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().PersistentVolumeClaims(orphanNS).Delete(ctx, "unused", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	rep := diagnose(t, cp, time.Second)
	wantCause(t, rep, seed.Object{Resource: gvr("namespaces"), Name: ns}, finalizev1alpha1.ReasonControllerInactive, "no deletion conditions", "namespace controller of kube-controller-manager has not processed")
	wantCause(t, rep, seed.Object{Resource: gvr("configmaps"), Namespace: orphanNS, Name: "parent"}, finalizev1alpha1.ReasonControllerInactive, "propagationPolicy Orphan", "the garbage collector")
	wantCause(t, rep, seed.Object{Resource: gvr("persistentvolumeclaims"), Namespace: orphanNS, Name: "unused"}, finalizev1alpha1.ReasonControllerInactive, "no scheduled pod references the claim")
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerInactive, finalizev1alpha1.Subject{Kind: "Controller", Name: "namespace controller (kube-controller-manager)"}, seed.Object{Resource: gvr("namespaces"), Name: ns})
}

// TestAnUnavailableAPIService runs on a control plane of its own: an unavailable
// APIService stops every namespace deletion of the cluster.
func TestAnUnavailableAPIService(t *testing.T) {
	ctx := t.Context()
	plane, err := controlplane.Start(ctx, controlplane.Options{Controllers: controlplane.DefaultControllers})
	if err != nil {
		t.Fatal(err)
	}
	defer plane.Stop()
	s, err := seed.New(plane.Config, "as")
	if err != nil {
		t.Fatal(err)
	}
	sc := must(t)(s.UnavailableAPIService(ctx))
	ns := sc.Stuck[0]
	waitCondition(t, plane, ns.Name, corev1.NamespaceDeletionDiscoveryFailure)
	c := plane.Kube(t)
	apisvc := s.MetricsAPIService()
	fixture.UnavailableFor(t, plane.Config, apisvc, 5*time.Minute)

	// Predicted, then seen: preflight of any other namespace says its deletion is
	// certainly stuck (exit 5, not "incomplete", exit 3); deleted, it is.
	next := s.Name("next")
	if err := s.Namespace(ctx, next); err != nil {
		t.Fatal(err)
	}
	r := cli.Run(t, plane.AdminKubeconfig, "preflight", "namespaces/"+next, "-o", "json")
	var pf finalizev1alpha1.PreflightReport
	if err := json.Unmarshal([]byte(r.Stdout), &pf); r.Code != 5 || err != nil || len(pf.Hazards) != 1 ||
		pf.Hazards[0].Reason != finalizev1alpha1.HazardAPIServiceUnavailable || pf.Hazards[0].Cause.Name != apisvc {
		t.Fatalf("preflight of a namespace beside an unavailable APIService: exit %d (%v)\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, next, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, plane, next, corev1.NamespaceDeletionDiscoveryFailure)

	// A deletion that needs the garbage collector to orphan a dependent.
	other := s.Name("gc")
	if err := s.Namespace(ctx, other); err != nil {
		t.Fatal(err)
	}
	parent, err := c.CoreV1().ConfigMaps(other).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "parent"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "parent", UID: parent.UID}}}}
	if _, err := c.CoreV1().ConfigMaps(other).Create(ctx, child, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := diagnose(t, plane, 0)
	c1 := wantCause(t, rep, ns, finalizev1alpha1.ReasonAPIServiceUnavailable, "APIService "+apisvc+" is unavailable", "kubectl delete apiservice "+apisvc)
	if len(c1.Blockers) != 1 || c1.Blockers[0].Target.Kind != "APIService" || c1.Blockers[0].Target.Name != apisvc {
		t.Errorf("blockers %+v, want the APIService", c1.Blockers)
	}
	wantRoot(t, rep, finalizev1alpha1.ReasonAPIServiceUnavailable, finalizev1alpha1.Subject{Kind: "APIService", Name: apisvc}, ns)

	// Through the command: grouped text, exit 3 because discovery is incomplete.
	r = cli.Run(t, plane.AdminKubeconfig, "doctor")
	if r.Code != 3 || !strings.Contains(r.Stdout, "1. APIServiceUnavailable: APIService "+apisvc) || !strings.Contains(r.Stdout, "namespaces (2): "+ns.Name) {
		t.Errorf("doctor: code %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestDoctorCommand(t *testing.T) {
	cp.RequireControllerManager(t)
	ctx := t.Context()
	s, err := seed.New(cp.Config, "cmd")
	if err != nil {
		t.Fatal(err)
	}
	orphaned := must(t)(s.OrphanedOperator(ctx))
	ns := orphaned.Stuck[1].Name
	waitCondition(t, cp, ns, corev1.NamespaceFinalizersRemaining)

	// A tree for the namespace: its content and the root cause under it.
	r := cli.Run(t, cp.AdminKubeconfig, "doctor", "ns/"+ns)
	for _, want := range []string{
		"namespaces/" + ns + "  (terminating for ",
		"NamespaceFinalizersRemaining: Some content in the namespace has finalizers remaining",
		"└── databases." + s.Group("db") + "/orders-db -n " + ns,
		// A tree reads what the cluster-wide doctor reads: the operator's writes are
		// measured in the whole cluster, and it is inactive, as the doctor of the whole
		// cluster says.
		"ControllerInactive: database-operator has written nothing since the deletion began",
		"(its last write in the cluster: ",
		"Root causes:\n  ControllerInactive: Controller database-operator",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("doctor ns/%s lacks %q:\n%s", ns, want, r.Stdout)
		}
	}
	if r.Code != 0 {
		t.Errorf("code %d: %s", r.Code, r.Stderr)
	}
	// TYPE NAME works as well as TYPE/NAME; -o json is a Diagnosis. The type is named
	// with its group: other tests of this control plane serve a "databases" of theirs, and
	// a type two groups answer to is refused, not guessed.
	r = cli.Run(t, cp.AdminKubeconfig, "doctor", "database."+s.Group("db"), "orders-db", "-n", ns, "-o", "json")
	var d finalizev1alpha1.Diagnosis
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil || r.Code != 0 {
		t.Fatalf("doctor -o json: %v, code %d\n%s", err, r.Code, r.Stderr)
	}
	if d.Kind != "Diagnosis" || d.Target == nil || d.Target.Name != "orders-db" || len(d.Items) != 1 || d.Items[0].Cause.Reason != finalizev1alpha1.ReasonControllerInactive || len(d.RootCauses) != 1 {
		t.Errorf("diagnosis %+v", d)
	}
	if r := cli.Run(t, cp.AdminKubeconfig, "doctor"); !strings.Contains(r.Stdout, "ControllerInactive: Controller database-operator") {
		t.Errorf("doctor of the whole cluster:\n%s", r.Stdout)
	}
	// The root cause of a narrowed question lists the objects of that question alone.
	r = cli.Run(t, cp.AdminKubeconfig, "doctor", "-n", ns, "-o", "json")
	d = finalizev1alpha1.Diagnosis{}
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil || r.Code != 0 {
		t.Fatalf("doctor -n -o json: %v, code %d\n%s", err, r.Code, r.Stderr)
	}
	for _, rc := range d.RootCauses {
		for _, o := range rc.Objects {
			if o.Namespace != ns && o.Name != ns {
				t.Errorf("doctor -n %s: root cause %s lists %s/%s", ns, rc.Reason, o.Namespace, o.Name)
			}
		}
	}

	// An object that is not stuck, and one that does not exist.
	r = cli.Run(t, cp.AdminKubeconfig, "doctor", "ns/default")
	if r.Code != 0 || r.Stdout != "namespaces/default is not being deleted.\n" {
		t.Errorf("not stuck: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	r = cli.Run(t, cp.AdminKubeconfig, "doctor", "configmap/nope", "-n", "default")
	if r.Code != 1 || r.Stderr != "Error from server (NotFound): configmaps \"nope\" not found\n" {
		t.Errorf("missing: %d %q", r.Code, r.Stderr)
	}
	r = cli.Run(t, cp.AdminKubeconfig, "doctor", "orders-db")
	if r.Code != 2 || !strings.Contains(r.Stderr, `"orders-db" is not TYPE/NAME`) {
		t.Errorf("bad argument: %d %q", r.Code, r.Stderr)
	}
	// scan -o wide fills CAUSE, measured as the doctor measures it.
	r = cli.Run(t, cp.AdminKubeconfig, "scan", "-n", ns, "-o", "wide")
	if r.Code != 0 || !strings.Contains(r.Stdout, "CAUSE") || !strings.Contains(r.Stdout, "ControllerInactive") || !strings.Contains(r.Stdout, "NamespaceFinalizersRemaining") {
		t.Errorf("scan -o wide: %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestContentWithoutFinalizers: the namespace controller deletes a pod gracefully, and
// without a kubelet the pod never goes. Nothing is stuck on a finalizer, yet the namespace
// cannot finish: NamespaceContentRemaining, naming the pod.
func TestContentWithoutFinalizers(t *testing.T) {
	cp.RequireControllerManager(t)
	ctx := t.Context()
	c := cp.Kube(t)
	ns := cp.Namespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0"},
		Spec: corev1.PodSpec{NodeName: "node-gone", TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "web", Image: "nginx:1.29"}}},
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Once the pod's grace period is over, the controller reports that it failed to
	// delete it (NamespaceContentRemaining stays False: the pod has no finalizer).
	waitCondition(t, cp, ns, corev1.NamespaceDeletionContentFailure)
	rep := diagnose(t, cp, 0)
	nsObj := seed.Object{Resource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Name: ns}
	cause := wantCause(t, rep, nsObj, finalizev1alpha1.ReasonNamespaceContentRemaining,
		"unexpected items still remain in namespace: "+ns+" for gvr: /v1, Resource=pods", "1 object without finalizers remains: pods/web-0 (being deleted)",
		"pods being deleted wait for the kubelet of their node")
	if len(cause.Blockers) != 1 || cause.Blockers[0].Target.Kind != "Pod" || cause.Blockers[0].Stuck {
		t.Errorf("blockers %+v, want the pod", cause.Blockers)
	}
	wantRoot(t, rep, finalizev1alpha1.ReasonNamespaceContentRemaining, finalizev1alpha1.Subject{Kind: "Namespace", Name: ns}, nsObj)
	// Let the namespace go.
	_ = c.CoreV1().Pods(ns).Delete(context.Background(), "web-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}

// TestANamespaceReader: someone who may read one namespace alone gets causes measured from
// it, and a warning that says so. With no workload of the operator readable, inactivity is
// not claimed; an admin, who reads the whole cluster, is told the operator is inactive.
func TestANamespaceReader(t *testing.T) {
	ns, group := cp.Namespace(t), "reader.accuracy.example"
	obj := stuckAs(t, widgets(t, group), ns, "w", group+"/cleanup", "reader-operator")
	rep := diagnose(t, cp, 0)
	wantCause(t, rep, obj, finalizev1alpha1.ReasonControllerInactive, "reader-operator has written nothing since the deletion began", "its last write in the cluster")

	r := cli.Run(t, namespaceReader(t, ns), "doctor", "widgets."+group+"/w", "-n", ns)
	want := "no type may be listed in every namespace: the causes are measured from namespace " + ns + " alone, and may differ from those a cluster-wide diagnosis finds"
	if !strings.Contains(r.Stderr, want) {
		t.Errorf("doctor as a reader of %s: stderr lacks %q:\n%s", ns, want, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "Unknown: reader-operator is expected to remove "+group+"/cleanup") {
		t.Errorf("doctor as a reader of %s: exit %d\n%s", ns, r.Code, r.Stdout)
	}

	// Someone who may list widgets and namespaces in every namespace, and nothing else
	// anywhere: reading the namespace alone would see no more, so the causes stay
	// measured cluster-wide, with no such warning.
	r = cli.Run(t, clusterReader(t, "widget-reader-"+ns, group), "doctor", "widgets."+group+"/w", "-n", ns)
	if strings.Contains(r.Stderr, "the causes are measured from namespace") || !strings.Contains(r.Stdout, "its last write in the cluster") {
		t.Errorf("doctor as a reader of widgets everywhere: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// clusterReader writes a kubeconfig for user, who may get, list and watch namespaces and
// the resources of group in every namespace, and returns its path.
func clusterReader(t *testing.T, user, group string) string {
	t.Helper()
	return cp.ClusterRoleUser(t, user,
		rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}})
}

// namespaceReader writes a kubeconfig for a user who may get, list and watch every type in
// namespace ns, and nothing cluster-wide, and returns its path.
func namespaceReader(t *testing.T, ns string) string {
	t.Helper()
	ctx, kube := t.Context(), cp.Kube(t)
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "reader-of-" + ns}},
	}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cp.UserKubeconfig(t, "reader-of-"+ns)
}
