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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/doctor"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/pipeline"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// The tests of the controller behind a finalizer: who it is,
// whose warnings blame it, where its workload is, whether it may act, and whether it
// progresses on this object.

// diagnoseWindow is diagnose with a progress window.
func diagnoseWindow(t *testing.T, window time.Duration) *doctor.Report {
	t.Helper()
	clients := &client.Clients{
		Discovery: discovery.NewDiscoveryClientForConfigOrDie(cp.Config),
		Metadata:  metadata.NewForConfigOrDie(cp.Config),
		Kube:      kubernetes.NewForConfigOrDie(cp.Config),
		Dynamic:   dynamic.NewForConfigOrDie(cp.Config),
	}
	rep, err := pipeline.Diagnose(t.Context(), clients, scan.Options{ChunkSize: scan.DefaultChunkSize}, doctor.Options{ProgressWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range rep.Warnings {
		t.Logf("doctor warning: %s", w)
	}
	return rep
}

// widgets installs a namespaced CRD of kind Widget in group.
func widgets(t *testing.T, group string) schema.GroupVersionResource {
	t.Helper()
	return fixture.CRD(t, cp.Config, seed.CRD{Group: group, Kind: "Widget", Plural: "widgets", Singular: "widget", Versions: []string{"v1"}})
}

// stuckAs creates a Widget called name in ns whose finalizer manager wrote, and deletes it.
func stuckAs(t *testing.T, gvr schema.GroupVersionResource, ns, name, finalizer, manager string) seed.Object {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	fixture.Stuck(t, fixture.Dynamic{ResourceInterface: dyn.Resource(gvr).Namespace(ns), Manager: manager}, fixture.Custom(gvr, "Widget", ns, name, finalizer))
	return seed.Object{Resource: gvr, Namespace: ns, Name: name}
}

// operator is a controller's workload: a ServiceAccount and a Deployment called name in
// ns whose pods run as it, ready of its replicas ready (set through the status
// subresource: no node and no deployment controller run here), and, when verbs are
// given, a ClusterRole of verbs on resources of group bound to the ServiceAccount.
func operator(t *testing.T, ns, name string, replicas, ready int32, group string, resources, verbs []string, env ...corev1.EnvVar) {
	t.Helper()
	ctx, kube := t.Context(), cp.Kube(t)
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{ServiceAccountName: name,
			Containers: []corev1.Container{{Name: "manager", Image: "example.com/" + name + ":v1", Env: env}}}}}}
	created, err := kube.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ready > 0 {
		created.Status = appsv1.DeploymentStatus{ObservedGeneration: created.Generation, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: ready, AvailableReplicas: ready}
		if _, err := kube.AppsV1().Deployments(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(verbs) == 0 {
		return
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: resources, Verbs: verbs}}}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
}

// causeOf runs the doctor command and returns the cause of the object name in its JSON.
func causeOf(t *testing.T, name string, args ...string) *finalizev1alpha1.Cause {
	t.Helper()
	r := cli.Run(t, cp.AdminKubeconfig, append([]string{"doctor", "-o", "json"}, args...)...)
	var d finalizev1alpha1.Diagnosis
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
		t.Fatalf("doctor %q: %v (code %d)\n%s", args, err, r.Code, r.Stderr)
	}
	for _, it := range d.Items {
		if it.Target.Name == name {
			return it.Cause
		}
	}
	t.Fatalf("doctor %q does not diagnose %s:\n%s", args, name, r.Stdout)
	return nil
}

// TestTheWriterOfACataloguedFinalizerIsItsController: Flux's catalogue entry
// names no workload. The kustomize-controller that wrote finalizers.fluxcd.io is the
// controller, measured by its writes and its Deployment, scaled to zero. Where nothing
// identifies the controller, the next step says how to find out: for the cloud service
// controller, whether the cluster has a cloud provider at all.
func TestTheWriterOfACataloguedFinalizerIsItsController(t *testing.T) {
	ctx, kube := t.Context(), cp.Kube(t)
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	kgvr := fixture.CRD(t, cp.Config, seed.CRD{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization", Plural: "kustomizations", Singular: "kustomization", Versions: []string{"v1"}})
	flux, apps := cp.Namespace(t), cp.Namespace(t)
	operator(t, flux, "kustomize-controller", 0, 0, "", nil, nil)

	// The Kustomization comes from a manifest; kustomize-controller adds its finalizer.
	// (A manifest sets a spec; an object created with nothing but its name got no
	// managedFields here, and the patch below added none either.)
	c := fixture.Dynamic{ResourceInterface: dyn.Resource(kgvr).Namespace(apps), Manager: "kubectl-client-side-apply"}
	manifest := fixture.Custom(kgvr, "Kustomization", apps, "apps")
	manifest.Object["spec"] = map[string]any{"path": "./apps", "interval": "10m"}
	fixture.Held(t, c, manifest)
	if _, err := c.Patch(ctx, "apps", types.MergePatchType, []byte(`{"metadata":{"finalizers":["finalizers.fluxcd.io"]}}`), metav1.PatchOptions{FieldManager: "kustomize-controller"}); err != nil {
		t.Fatal(err)
	}
	fixture.Delete(t, c, "apps")
	// One whose finalizer a person applied: nothing identifies the controller.
	fixture.Stuck(t, c, fixture.Custom(kgvr, "Kustomization", apps, "by-hand", "finalizers.fluxcd.io"))
	// A Service copied from a cloud cluster, with the service controller's finalizer.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "frontend", Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := kube.CoreV1().Services(apps).Create(ctx, svc, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = kube.CoreV1().Services(apps).Patch(context.Background(), "frontend", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := kube.CoreV1().Services(apps).Delete(ctx, "frontend", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// A Service whose finalizer kube-controller-manager wrote (its in-tree service
	// controller, before the cloud provider was removed), in a cluster where a process of
	// that name writes all the time: that says nothing of a service controller (#34).
	migrated := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "migrated", Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := kube.CoreV1().Services(apps).Create(ctx, migrated, metav1.CreateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = kube.CoreV1().Services(apps).Patch(context.Background(), "migrated", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := kube.CoreV1().Services(apps).Delete(ctx, "migrated", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ConfigMaps(flux).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kcm-state"}, Data: map[string]string{"a": "b"}},
		metav1.CreateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}

	rep := diagnose(t, cp, 0)
	written := seed.Object{Resource: kgvr, Namespace: apps, Name: "apps"}
	wantCause(t, rep, written, finalizev1alpha1.ReasonControllerInactive, "kustomize-controller has written nothing since the deletion began",
		"its Deployment "+flux+"/kustomize-controller has 0/0 ready replicas", "bring kustomize-controller back")
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerInactive, finalizev1alpha1.Subject{Kind: "Controller", Name: "kustomize-controller"}, written)
	wantCause(t, rep, seed.Object{Resource: kgvr, Namespace: apps, Name: "by-hand"}, finalizev1alpha1.ReasonUnknown,
		"the finalizer was written by kubectl-client-side-apply, a client that applies manifests for people, not a controller", "kubectl get deployments -n flux-system")
	wantCause(t, rep, seed.Object{Resource: gvr("services"), Namespace: apps, Name: "frontend"}, finalizev1alpha1.ReasonUnknown,
		"service controller (cloud-controller-manager) is expected to remove service.kubernetes.io/load-balancer-cleanup",
		"whether the cluster has a cloud provider at all: kubectl get nodes -o custom-columns=NAME:.metadata.name,PROVIDER:.spec.providerID")
	// wantCause holds the single-object doctor and scan to the same answer (agree), asking
	// again once when an Event written between the runs (the IP allocator's repair
	// warning about the Service) changes the context they read.
	wantCause(t, rep, seed.Object{Resource: gvr("services"), Namespace: apps, Name: "migrated"}, finalizev1alpha1.ReasonUnknown,
		"the finalizer was written by kube-controller-manager, a process of many controllers, whose writes say nothing of whether the one that removes it runs",
		"whether the cluster has a cloud provider at all")
}

// TestOnlyTheOwnersWarningsMeanFailing: a claim held by the snapshot
// controller's finalizer, which the volume controller cannot provision. Its warnings are
// context; they do not make the claim ControllerFailing, nor send the reader to it.
func TestOnlyTheOwnersWarningsMeanFailing(t *testing.T) {
	cp.RequireControllerManager(t)
	ctx, kube := t.Context(), cp.Kube(t)
	ns := cp.Namespace(t)
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Finalizers: []string{"snapshot.storage.kubernetes.io/pvc-as-source-protection"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("fast"),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *oneGi()}}}}
	created, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{FieldManager: "snapshot-controller"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = kube.CoreV1().PersistentVolumeClaims(ns).Patch(context.Background(), "data", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The pvc-protection controller releases the claim no pod uses; until it has, its
	// finalizer's finding comes first among the context.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		return err == nil && len(pvc.Finalizers) == 1, err
	}); err != nil {
		t.Fatalf("kubernetes.io/pvc-protection stays on a claim no pod uses: %v", err)
	}
	// The volume controller reports on the claim as it does: a core Event with a source.
	now := metav1.Now()
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "data.provisioning"}, Type: corev1.EventTypeWarning, Reason: "ProvisioningFailed",
		Message: `storageclass.storage.k8s.io "fast" not found`, Source: corev1.EventSource{Component: "persistentvolume-controller"},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: "data", UID: created.UID},
		FirstTimestamp: now, LastTimestamp: now, Count: 12}
	if _, err := kube.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := diagnose(t, cp, 0)
	o := seed.Object{Resource: gvr("persistentvolumeclaims"), Namespace: ns, Name: "data"}
	c := rep.Cause(find(t, rep, o))
	if c.Reason == finalizev1alpha1.ReasonControllerFailing || strings.Contains(c.NextStep, "persistentvolume-controller") {
		t.Errorf("the volume controller's warnings are blamed for the snapshot controller's finalizer: %+v", c)
	}
	wantCause(t, rep, o, c.Reason, `also: persistentvolume-controller reports ProvisioningFailed: storageclass.storage.k8s.io "fast" not found (12 times`, "it owns none of the object's finalizers")

	// The owner's own warning is the cause.
	ev2 := ev.DeepCopy()
	ev2.Name, ev2.Reason, ev2.Message, ev2.Source.Component = "data.snapshot", "SnapshotPending", "waiting for snapshot nightly", "snapshot-controller"
	if _, err := kube.CoreV1().Events(ns).Create(ctx, ev2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep = diagnose(t, cp, 0)
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerFailing, "snapshot-controller reports SnapshotPending: waiting for snapshot nightly",
		"also: persistentvolume-controller reports ProvisioningFailed")
}

// TestAWorkloadIsFoundWhateverTheTarget: `doctor TYPE/NAME` and `doctor -n`
// scan one namespace; the controller's Deployment in another is found all the same.
func TestAWorkloadIsFoundWhateverTheTarget(t *testing.T) {
	gvr := widgets(t, "scope.accuracy.example")
	ns, ops := cp.Namespace(t), cp.Namespace(t)
	operator(t, ops, "scope-operator", 1, 0, "", nil, nil)
	stuckAs(t, gvr, ns, "w", "scope.accuracy.example/cleanup", "scope-operator")
	want := "its Deployment " + ops + "/scope-operator has 0/1 ready replicas"
	for _, args := range [][]string{nil, {"-n", ns}, {"widgets.scope.accuracy.example/w", "-n", ns}} {
		c := causeOf(t, "w", args...)
		if c.Reason != finalizev1alpha1.ReasonControllerInactive || !strings.Contains(c.Message, want) || strings.Contains(c.Message, "was found") {
			t.Errorf("doctor %q: %s: %s", args, c.Reason, c.Message)
		}
	}
}

// TestARunningControllerThatDoesNothing: ready controllers that have written nothing
// to their objects for the progress window. One may act on its objects (ControllerIdle:
// its logs, the namespaces it watches); another's ServiceAccount may not patch or update
// them (ControllerForbidden); a third watches only its own namespace (ControllerInactive:
// it does not run for the object). Their RBAC is real; the doctor asks
// the API server with a SubjectAccessReview.
func TestARunningControllerThatDoesNothing(t *testing.T) {
	group := "idle.accuracy.example"
	gvr := widgets(t, group)
	ns, ops := cp.Namespace(t), cp.Namespace(t)
	all := []string{"get", "list", "watch", "patch", "update"}
	operator(t, ops, "idle-operator", 1, 1, group, []string{"widgets", "widgets/finalizers"}, all)
	operator(t, ops, "locked-operator", 1, 1, group, []string{"widgets"}, []string{"get", "list", "watch"})
	operator(t, ops, "elsewhere-operator", 1, 1, group, []string{"widgets", "widgets/finalizers"}, all, corev1.EnvVar{Name: "WATCH_NAMESPACE", Value: ops})
	idle := stuckAs(t, gvr, ns, "w-idle", group+"/cleanup", "idle-operator")
	locked := stuckAs(t, gvr, ns, "w-locked", group+"/cleanup", "locked-operator")
	elsewhere := stuckAs(t, gvr, ns, "w-elsewhere", group+"/cleanup", "elsewhere-operator")
	// Its RBAC is a Role in the object's namespace only: a RoleBinding there.
	operator(t, ops, "local-operator", 1, 1, "", nil, nil)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "local-operator"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: []string{"widgets", "widgets/finalizers"}, Verbs: all}}}
	if _, err := cp.Kube(t).RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "local-operator"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ops, Name: "local-operator"}}}
	if _, err := cp.Kube(t).RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	local := stuckAs(t, gvr, ns, "w-local", group+"/cleanup", "local-operator")

	// Within the window, a ready controller is not proven stuck.
	rep := diagnoseWindow(t, time.Hour)
	wantCause(t, rep, idle, finalizev1alpha1.ReasonProgressing, "idle-operator runs (its Deployment "+ops+"/idle-operator has 1/1 ready replicas)", "it has not written to this object since")

	time.Sleep(2500 * time.Millisecond)
	rep = diagnoseWindow(t, 2*time.Second)
	c := wantCause(t, rep, idle, finalizev1alpha1.ReasonControllerIdle, "idle-operator runs (its Deployment "+ops+"/idle-operator has 1/1 ready replicas) but has written nothing to this object since the deletion began",
		"SubjectAccessReviews allow its ServiceAccount "+ops+"/idle-operator to list and watch widgets."+group+" cluster-wide and to patch them in namespace "+ns+": its permissions do not stop it seeing the object or removing its finalizer",
		"kubectl logs -n "+ops+" -l app=idle-operator --all-containers --prefix --tail=-1 --since=", "whether it watches namespace "+ns,
		"kubectl auth can-i patch widgets."+group+" -n "+ns+" --as system:serviceaccount:"+ops+":idle-operator")
	if strings.Contains(c.NextStep, "bring idle-operator back") || strings.Contains(c.Message, "permissions are not why") {
		t.Errorf("a running controller is to be brought back, or its permissions said beyond what was checked: %s / %s", c.Message, c.NextStep)
	}
	t.Logf("ControllerIdle, as the doctor says it:\n%s\nNext: %s", c.Message, c.NextStep)
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerIdle, finalizev1alpha1.Subject{Kind: "Controller", Name: "idle-operator"}, idle)
	c = wantCause(t, rep, locked, finalizev1alpha1.ReasonControllerForbidden,
		"ServiceAccount "+ops+"/locked-operator (of Deployment "+ops+"/locked-operator) may not patch or update widgets."+group+" in namespace "+ns+" (it cannot remove its finalizer)",
		"may not update widgets."+group+"/finalizers", "grant what it lacks")
	t.Logf("ControllerForbidden, as the doctor says it:\n%s\nNext: %s", c.Message, c.NextStep)
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerForbidden, finalizev1alpha1.Subject{Kind: "Controller", Name: "locked-operator"}, locked)
	// Scoped to its own namespace, it does not run for the object (#34).
	wantCause(t, rep, elsewhere, finalizev1alpha1.ReasonControllerInactive,
		"not running for this object: Deployment "+ops+"/elsewhere-operator: its pod template sets env WATCH_NAMESPACE to "+ops+": it may not watch namespace "+ns,
		"let elsewhere-operator watch namespace "+ns)
	wantCause(t, rep, local, finalizev1alpha1.ReasonControllerIdle,
		"SubjectAccessReviews allow its ServiceAccount "+ops+"/local-operator to list and watch widgets."+group+" in namespace "+ns+" only, not cluster-wide, and to patch them there",
		"its informer's cluster-wide list is refused", "kubectl auth can-i list widgets."+group+" -A --as system:serviceaccount:"+ops+":local-operator")

	// The flag through the command.
	if c := causeOf(t, "w-idle", "widgets."+group+"/w-idle", "-n", ns, "--progress-window", "1s"); c.Reason != finalizev1alpha1.ReasonControllerIdle {
		t.Errorf("--progress-window 1s: %s: %s", c.Reason, c.Message)
	}
	if c := causeOf(t, "w-idle", "widgets."+group+"/w-idle", "-n", ns, "--progress-window", "1h"); c.Reason != finalizev1alpha1.ReasonProgressing {
		t.Errorf("--progress-window 1h: %s: %s", c.Reason, c.Message)
	}
}

// TestProgressIsRecentAndAboutThisObject: a write to the object is
// progress; a write elsewhere proves the controller runs, not that it works on this
// object; and after the progress window without a write to the object, a running
// controller is ControllerIdle, whatever it wrote before.
func TestProgressIsRecentAndAboutThisObject(t *testing.T) {
	group := "progress.accuracy.example"
	gvr := widgets(t, group)
	ns, ops := cp.Namespace(t), cp.Namespace(t)
	const manager = "progress-operator"
	touched := stuckAs(t, gvr, ns, "touched", group+"/cleanup", manager)
	untouched := stuckAs(t, gvr, ns, "untouched", group+"/cleanup", manager)
	// managedFields keep seconds: write in a later second than the deletions.
	time.Sleep(1100 * time.Millisecond)
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	if _, err := dyn.Resource(gvr).Namespace(ns).Patch(t.Context(), "touched", types.MergePatchType, []byte(`{"status":{"phase":"Deleting"}}`), metav1.PatchOptions{FieldManager: manager}, "status"); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Kube(t).CoreV1().ConfigMaps(ops).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "progress-state"}}, metav1.CreateOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}

	rep := diagnoseWindow(t, time.Hour)
	wantCause(t, rep, touched, finalizev1alpha1.ReasonProgressing, manager+" is active: it last wrote this object", "only after 60m without a write to the object")
	wantCause(t, rep, untouched, finalizev1alpha1.ReasonProgressing, "it wrote to other objects", "which proves it runs, not that it works on this one", "it has not written to this object since")

	// Past the window, with its workload ready: it runs and does nothing with either.
	operator(t, ops, manager, 1, 1, group, []string{"widgets", "widgets/finalizers"}, []string{"get", "list", "watch", "patch", "update"})
	time.Sleep(2500 * time.Millisecond)
	rep = diagnoseWindow(t, 2*time.Second)
	wantCause(t, rep, touched, finalizev1alpha1.ReasonControllerIdle, "last wrote this object", "after the deletion began, and nothing since", "the progress window (2s)")
	wantCause(t, rep, untouched, finalizev1alpha1.ReasonControllerIdle, "has written nothing to this object since the deletion began")
	for _, o := range []seed.Object{touched, untouched} {
		if c := rep.Cause(find(t, rep, o)); strings.Contains(c.Message, "stuck is not proven") {
			t.Errorf("%s: %s", o, c.Message)
		}
	}
}

// TestAnOperatorsOwnWarningUnderAnotherNameIsFailing: a kubebuilder
// operator's field manager is "manager", and its Events come from
// GetEventRecorderFor("database-controller"). Its own DeleteFailed warning is why the
// finalizer stays: ControllerFailing, and the next step removes nothing.
func TestAnOperatorsOwnWarningUnderAnotherNameIsFailing(t *testing.T) {
	group := "kubebuilder.accuracy.example"
	gvr := widgets(t, group)
	ns := cp.Namespace(t)
	o := stuckAs(t, gvr, ns, "db", group+"/cleanup", "manager")
	obj, err := dynamic.NewForConfigOrDie(cp.Config).Resource(gvr).Namespace(ns).Get(t.Context(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "db.deletefailed"}, Type: corev1.EventTypeWarning, Reason: "DeleteFailed",
		Message: "AccessDenied: not authorized to perform rds:DeleteDBInstance", Source: corev1.EventSource{Component: "database-controller"},
		ReportingController: "database-controller", ReportingInstance: "database-controller-7d9f",
		InvolvedObject: corev1.ObjectReference{Kind: "Widget", APIVersion: gvr.GroupVersion().String(), Namespace: ns, Name: "db", UID: obj.GetUID()},
		FirstTimestamp: now, LastTimestamp: now, Count: 3}
	if _, err := cp.Kube(t).CoreV1().Events(ns).Create(t.Context(), ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := diagnose(t, cp, 0)
	c := wantCause(t, rep, o, finalizev1alpha1.ReasonControllerFailing, "database-controller reports DeleteFailed: AccessDenied: not authorized to perform rds:DeleteDBInstance",
		"fix what database-controller reports")
	if strings.Contains(c.NextStep, "kubectl finalize remove") || strings.Contains(c.Message, "owns none") {
		t.Errorf("the operator's own warning is not taken as its failure: %s / %s", c.Message, c.NextStep)
	}
}

// TestANamesakeWorkloadIsNoProof: the finalizer was written as "manager", the name
// kubebuilder's scaffold gives every operator's binary, and a Deployment called "manager"
// has no ready replica. That Deployment is a namesake, never proof that the remover is
// down (#34): no workload is looked for by a shared name. The name's writes count only in
// the object's own API group: to ConfigMaps they are context; to another Widget they show
// a program of that name runs.
func TestANamesakeWorkloadIsNoProof(t *testing.T) {
	group := "down.accuracy.example"
	gvr := widgets(t, group)
	ns, ops, other := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	operator(t, ops, "manager", 1, 0, "", nil, nil)
	o := stuckAs(t, gvr, ns, "w", group+"/cleanup", "manager")
	// Past the progress window, a program writing as "manager" writes a ConfigMap.
	time.Sleep(2500 * time.Millisecond)
	if _, err := cp.Kube(t).CoreV1().ConfigMaps(other).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "state"}, Data: map[string]string{"leader": "other"}}, metav1.CreateOptions{FieldManager: "manager"}); err != nil {
		t.Fatal(err)
	}
	rep := diagnoseWindow(t, 2*time.Second)
	c := wantCause(t, rep, o, finalizev1alpha1.ReasonControllerInactive, "manager has written nothing since the deletion began",
		"manager wrote to objects of other API groups", "which is not counted: many programs write as manager")
	if strings.Contains(c.Message, ops+"/manager") || strings.Contains(c.Message, "also wrote") {
		t.Errorf("a namesake Deployment, or a shared name's write to another API group, is taken as the remover's: %s", c.Message)
	}
	// A write to another object of the object's own group counts as that name's.
	other2 := cp.Namespace(t)
	held := fixture.Custom(gvr, "Widget", other2, "other")
	held.Object["spec"] = map[string]any{"size": int64(1)} // an object with nothing but a name gets no managedFields
	fixture.Held(t, fixture.Dynamic{ResourceInterface: dynamic.NewForConfigOrDie(cp.Config).Resource(gvr).Namespace(other2), Manager: "manager"}, held)
	rep = diagnoseWindow(t, 2*time.Second)
	c = wantCause(t, rep, o, finalizev1alpha1.ReasonControllerIdle, "manager runs (it wrote to other objects of API group "+group)
	if strings.Contains(c.Message, ops+"/manager") {
		t.Errorf("a namesake Deployment is named as the remover's: %s", c.Message)
	}
}
