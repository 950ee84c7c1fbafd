// Package seed creates realistic stuck objects (and healthy ones that carry finalizers)
// in a real cluster. `make demo` and the integration tests use the same seeds.
package seed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Seeder creates scenarios. ID, when set, keeps the names of one test's namespaces,
// cluster-scoped objects and API groups apart from another's.
type Seeder struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	ID      string
	Log     io.Writer
}

// New returns a Seeder for cfg.
func New(cfg *rest.Config, id string) (*Seeder, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Seeder{Kube: kube, Dynamic: dyn, ID: id}, nil
}

// Object names one object a scenario made.
type Object struct {
	Resource  schema.GroupVersionResource
	Namespace string
	Name      string
	// Finalizers are the finalizers the object is expected to carry.
	Finalizers []string
}

func (o Object) String() string {
	gr := o.Resource.GroupResource().String()
	if o.Namespace == "" {
		return gr + "/" + o.Name
	}
	return gr + " " + o.Namespace + "/" + o.Name
}

// Scenario is what a seed made: objects that end up stuck, and healthy objects that carry
// finalizers without being deleted.
type Scenario struct {
	Name        string
	Description string
	Stuck       []Object
	Healthy     []Object
}

// Field managers that play the parts of people and controllers in the seeds.
const (
	ManagerKubectl          = "kubectl-client-side-apply"
	ManagerDatabaseOperator = "database-operator"
	ManagerGadgetOperator   = "gadget-controller"
	ManagerLBOperator       = "lb-operator"
	ManagerConfigExporter   = "config-exporter"
)

var (
	gvrNamespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrConfigMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrPVs        = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	gvrPVCs       = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	gvrDeploys    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrAPIService = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// Name prefixes n with the seeder's ID.
func (s *Seeder) Name(n string) string {
	if s.ID == "" {
		return n
	}
	return s.ID + "-" + n
}

// Group is an API group of the seeds, kept apart per ID.
func (s *Seeder) Group(g string) string {
	if s.ID == "" {
		return g + ".demo.kubectl-finalize.io"
	}
	return g + "." + s.ID + ".demo.kubectl-finalize.io"
}

func (s *Seeder) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", args...)
	}
}

// DatabaseCRD is the namespaced CRD of an operator that the seeds "uninstall".
func (s *Seeder) DatabaseCRD() CRD {
	return CRD{Group: s.Group("db"), Kind: "Database", Plural: "databases", Singular: "database", Short: []string{"mdb"}, Versions: []string{"v1"}}
}

// DatabaseFinalizer is the finalizer the database operator puts on its databases: it
// deletes the cloud database before the object may go.
func (s *Seeder) DatabaseFinalizer() string { return s.DatabaseCRD().Group + "/finalizer" }

// Namespace creates a namespace (kept if it exists).
func (s *Seeder) Namespace(ctx context.Context, name string) error {
	_, err := s.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{FieldManager: ManagerKubectl})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// AddFinalizer appends a finalizer to an object as field manager, the way a controller
// does.
func (s *Seeder) AddFinalizer(ctx context.Context, o Object, finalizer, manager string) error {
	r := s.resource(o)
	u, err := r.Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading %s: %w", o, err)
	}
	op := map[string]any{"op": "add", "path": "/metadata/finalizers/-", "value": finalizer}
	if len(u.GetFinalizers()) == 0 {
		op = map[string]any{"op": "add", "path": "/metadata/finalizers", "value": []string{finalizer}}
	}
	patch, err := json.Marshal([]any{
		map[string]any{"op": "test", "path": "/metadata/resourceVersion", "value": u.GetResourceVersion()},
		op,
	})
	if err != nil {
		return err
	}
	if _, err := r.Patch(ctx, o.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: manager}); err != nil {
		return fmt.Errorf("adding finalizer %s to %s as %s: %w", finalizer, o, manager, err)
	}
	return nil
}

func (s *Seeder) resource(o Object) dynamic.ResourceInterface {
	if o.Namespace == "" {
		return s.Dynamic.Resource(o.Resource)
	}
	return s.Dynamic.Resource(o.Resource).Namespace(o.Namespace)
}

// Delete deletes an object with the given propagation policy (nil: the default).
func (s *Seeder) Delete(ctx context.Context, o Object, policy *metav1.DeletionPropagation) error {
	if err := s.resource(o).Delete(ctx, o.Name, metav1.DeleteOptions{PropagationPolicy: policy}); err != nil {
		return fmt.Errorf("deleting %s: %w", o, err)
	}
	return nil
}

// WaitTerminating waits until every object has a deletionTimestamp.
func (s *Seeder) WaitTerminating(ctx context.Context, objs ...Object) error {
	for _, o := range objs {
		r := s.resource(o)
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			u, err := r.Get(ctx, o.Name, metav1.GetOptions{})
			return err == nil && u.GetDeletionTimestamp() != nil, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for %s to be terminating: %w", o, err)
		}
	}
	return nil
}

// terminate deletes every object and waits until each has a deletionTimestamp.
func (s *Seeder) terminate(ctx context.Context, objs ...Object) error {
	for _, o := range objs {
		if err := s.Delete(ctx, o, nil); err != nil {
			return err
		}
	}
	return s.WaitTerminating(ctx, objs...)
}

// createUnstructured creates u as a user with kubectl would.
func (s *Seeder) createUnstructured(ctx context.Context, gvr schema.GroupVersionResource, u *unstructured.Unstructured) error {
	var r dynamic.ResourceInterface = s.Dynamic.Resource(gvr)
	if ns := u.GetNamespace(); ns != "" {
		r = s.Dynamic.Resource(gvr).Namespace(ns)
	}
	if _, err := r.Create(ctx, u, metav1.CreateOptions{FieldManager: ManagerKubectl}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s/%s: %w", gvr.GroupResource(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// Database creates a database as a user would (kubectl apply), then lets the database
// operator add its finalizer and write its status.
func (s *Seeder) Database(ctx context.Context, ns, name string) (Object, error) {
	return s.databaseAs(ctx, ns, name, ManagerDatabaseOperator)
}

// databaseAs creates a database whose finalizer and status come from operator.
func (s *Seeder) databaseAs(ctx context.Context, ns, name, operator string) (Object, error) {
	crd := s.DatabaseCRD()
	if err := s.EnsureCRD(ctx, crd); err != nil {
		return Object{}, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": crd.Group + "/v1",
		"kind":       "Database",
		"metadata":   map[string]any{"namespace": ns, "name": name, "labels": map[string]any{"app": "orders"}},
		"spec":       map[string]any{"engine": "postgres", "size": "large"},
	}}
	if err := s.createUnstructured(ctx, crd.GVR(), u); err != nil {
		return Object{}, err
	}
	o := Object{Resource: crd.GVR(), Namespace: ns, Name: name, Finalizers: []string{s.DatabaseFinalizer()}}
	if err := s.AddFinalizer(ctx, o, s.DatabaseFinalizer(), operator); err != nil {
		return Object{}, err
	}
	status := []byte(`{"status":{"phase":"Ready","instanceID":"` + InstanceID(name) + `"}}`)
	if _, err := s.Dynamic.Resource(crd.GVR()).Namespace(ns).Patch(ctx, name, types.MergePatchType, status, metav1.PatchOptions{FieldManager: operator}, "status"); err != nil {
		return Object{}, fmt.Errorf("writing the status of database %s/%s: %w", ns, name, err)
	}
	return o, nil
}

// OrphanedOperator seeds an uninstalled operator: the database operator is gone, then
// its namespace is deleted. The database waits forever for a controller that is gone, and
// the namespace waits for the database.
func (s *Seeder) OrphanedOperator(ctx context.Context) (Scenario, error) {
	sc, err := s.orphanedOperator(ctx)
	if err != nil {
		return Scenario{}, err
	}
	return sc, s.terminate(ctx, sc.Stuck...)
}

// orphanedOperator writes what OrphanedOperator deletes, and deletes nothing.
func (s *Seeder) orphanedOperator(ctx context.Context) (Scenario, error) {
	ns := s.Name("orphaned-operator")
	if err := s.Namespace(ctx, ns); err != nil {
		return Scenario{}, err
	}
	w, err := s.Database(ctx, ns, "orders-db")
	if err != nil {
		return Scenario{}, err
	}
	// The namespace controller would delete the database; deleting it too (the database
	// first) makes the end state the same with or without kube-controller-manager.
	nsObj := Object{Resource: gvrNamespaces, Name: ns, Finalizers: []string{"kubernetes"}}
	return Scenario{
		Name:        "orphaned-operator",
		Description: fmt.Sprintf("namespace %s waits for database orders-db, whose operator was uninstalled", ns),
		Stuck:       []Object{w, nsObj},
	}, nil
}

// MetricsAPIService is the APIService the UnavailableAPIService scenario registers.
func (s *Seeder) MetricsAPIService() string { return "v1beta1." + s.Group("metrics") }

// UnavailableAPIService seeds an aggregated API whose service is missing. The namespace
// controller cannot tell whether a namespace still holds its objects, so every deleted
// namespace stays Terminating.
func (s *Seeder) UnavailableAPIService(ctx context.Context) (Scenario, error) {
	group := s.Group("metrics")
	apisvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": s.MetricsAPIService()},
		"spec": map[string]any{
			"group":                 group,
			"version":               "v1beta1",
			"groupPriorityMinimum":  int64(100),
			"versionPriority":       int64(100),
			"insecureSkipTLSVerify": true,
			"service":               map[string]any{"namespace": "kube-system", "name": s.Name("metrics-server")},
		},
	}}
	if err := s.createUnstructured(ctx, gvrAPIService, apisvc); err != nil {
		return Scenario{}, err
	}
	ns := s.Name("metrics-consumer")
	if err := s.Namespace(ctx, ns); err != nil {
		return Scenario{}, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dashboards"}, Data: map[string]string{"cpu": "true"}}
	if _, err := s.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: ManagerKubectl}); err != nil && !apierrors.IsAlreadyExists(err) {
		return Scenario{}, fmt.Errorf("creating configmap %s/dashboards: %w", ns, err)
	}
	nsObj := Object{Resource: gvrNamespaces, Name: ns, Finalizers: []string{"kubernetes"}}
	if err := s.terminate(ctx, nsObj); err != nil {
		return Scenario{}, err
	}
	return Scenario{
		Name:        "unavailable-apiservice",
		Description: fmt.Sprintf("namespace %s waits for APIService %s, whose service does not exist", ns, s.MetricsAPIService()),
		Stuck:       []Object{nsObj},
	}, nil
}

// PVCInUse seeds a claim deleted while a scheduled pod still mounts it.
func (s *Seeder) PVCInUse(ctx context.Context) (Scenario, error) {
	ns := s.Name("storage")
	if err := s.Namespace(ctx, ns); err != nil {
		return Scenario{}, err
	}
	claim, err := s.claimWithPod(ctx, ns, "data", "db-0")
	if err != nil {
		return Scenario{}, err
	}
	if err := s.terminate(ctx, claim); err != nil {
		return Scenario{}, err
	}
	return Scenario{
		Name:        "pvc-in-use",
		Description: fmt.Sprintf("claim %s/data is deleted, but pod db-0 still mounts it", ns),
		Stuck:       []Object{claim},
	}, nil
}

// claimWithPod creates a claim and a pod, scheduled to a node, that mounts it. The
// StorageObjectInUseProtection admission plugin gives the claim its finalizer.
func (s *Seeder) claimWithPod(ctx context.Context, ns, claimName, podName string) (Object, error) {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claimName},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(""),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := s.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{FieldManager: ManagerKubectl}); err != nil && !apierrors.IsAlreadyExists(err) {
		return Object{}, fmt.Errorf("creating claim %s/%s: %w", ns, claimName, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName, Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{
			// There is no kubelet: a node name is enough for the controllers to see a pod
			// that runs, and it never changes phase.
			NodeName:   "node-a",
			Containers: []corev1.Container{{Name: "db", Image: "postgres:17", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/postgresql"}}}},
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}},
		},
	}
	if _, err := s.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{FieldManager: ManagerKubectl}); err != nil && !apierrors.IsAlreadyExists(err) {
		return Object{}, fmt.Errorf("creating pod %s/%s: %w", ns, podName, err)
	}
	return Object{Resource: gvrPVCs, Namespace: ns, Name: claimName, Finalizers: []string{"kubernetes.io/pvc-protection"}}, nil
}

// ConfigExporterFinalizer is the finalizer of a controller that exports ConfigMaps.
func (s *Seeder) ConfigExporterFinalizer() string { return s.Group("config-exporter") + "/export" }

// ForegroundDeletion seeds a Deployment deleted in the foreground: it waits for a
// dependent ConfigMap that a dead exporter controller still holds.
func (s *Seeder) ForegroundDeletion(ctx context.Context) (Scenario, error) {
	ns := s.Name("foreground")
	if err := s.Namespace(ctx, ns); err != nil {
		return Scenario{}, err
	}
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.29"}}},
			},
		},
	}
	created, err := s.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{FieldManager: ManagerKubectl})
	if apierrors.IsAlreadyExists(err) {
		created, err = s.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	}
	if err != nil {
		return Scenario{}, fmt.Errorf("creating deployment %s/web: %w", ns, err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: created.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}},
		Data: map[string]string{"listen": "8080"},
	}
	if _, err := s.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: ManagerKubectl}); err != nil && !apierrors.IsAlreadyExists(err) {
		return Scenario{}, fmt.Errorf("creating configmap %s/web-config: %w", ns, err)
	}
	dep := Object{Resource: gvrConfigMaps, Namespace: ns, Name: "web-config", Finalizers: []string{s.ConfigExporterFinalizer()}}
	if err := s.AddFinalizer(ctx, dep, s.ConfigExporterFinalizer(), ManagerConfigExporter); err != nil {
		return Scenario{}, err
	}
	owner := Object{Resource: gvrDeploys, Namespace: ns, Name: "web", Finalizers: []string{metav1.FinalizerDeleteDependents}}
	if err := s.Delete(ctx, owner, ptr.To(metav1.DeletePropagationForeground)); err != nil {
		return Scenario{}, err
	}
	// The garbage collector deletes the dependent; doing it here keeps the end state the
	// same without kube-controller-manager.
	if err := s.Delete(ctx, dep, nil); err != nil {
		return Scenario{}, err
	}
	if err := s.WaitTerminating(ctx, owner, dep); err != nil {
		return Scenario{}, err
	}
	return Scenario{
		Name:        "foreground-deletion",
		Description: fmt.Sprintf("deployment %s/web, deleted in the foreground, waits for configmap web-config", ns),
		Stuck:       []Object{owner, dep},
	}, nil
}

// GadgetCRD is a CRD the CRDWaitingOnInstances scenario deletes.
func (s *Seeder) GadgetCRD() CRD {
	return CRD{Group: s.Group("toys"), Kind: "Gadget", Plural: "gadgets", Singular: "gadget", Versions: []string{"v1"}}
}

// CRDWaitingOnInstances seeds a CRD deleted while one of its instances holds a finalizer.
func (s *Seeder) CRDWaitingOnInstances(ctx context.Context) (Scenario, error) {
	crd := s.GadgetCRD()
	if err := s.EnsureCRD(ctx, crd); err != nil {
		return Scenario{}, err
	}
	ns := s.Name("gadgets")
	if err := s.Namespace(ctx, ns); err != nil {
		return Scenario{}, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": crd.Group + "/v1", "kind": "Gadget",
		"metadata": map[string]any{"namespace": ns, "name": "gadget-1"},
		"spec":     map[string]any{"color": "blue"},
	}}
	if err := s.createUnstructured(ctx, crd.GVR(), u); err != nil {
		return Scenario{}, err
	}
	fin := crd.Group + "/teardown"
	g := Object{Resource: crd.GVR(), Namespace: ns, Name: "gadget-1", Finalizers: []string{fin}}
	if err := s.AddFinalizer(ctx, g, fin, ManagerGadgetOperator); err != nil {
		return Scenario{}, err
	}
	crdObj := Object{Resource: crdGVR, Name: crd.Name(), Finalizers: []string{"customresourcecleanup.apiextensions.k8s.io"}}
	if err := s.Delete(ctx, crdObj, nil); err != nil {
		return Scenario{}, err
	}
	// The CRD's own finalizer controller, inside kube-apiserver, deletes the instances.
	if err := s.WaitTerminating(ctx, crdObj, g); err != nil {
		return Scenario{}, err
	}
	return Scenario{
		Name:        "crd-waiting-on-instances",
		Description: fmt.Sprintf("CRD %s waits for gadget %s/gadget-1", crd.Name(), ns),
		Stuck:       []Object{crdObj, g},
	}, nil
}

// LoadBalancerCRD is a cluster-scoped CRD.
func (s *Seeder) LoadBalancerCRD() CRD {
	return CRD{Group: s.Group("lb"), Kind: "LoadBalancer", Plural: "loadbalancers", Singular: "loadbalancer", Short: []string{"clb"}, Cluster: true, Versions: []string{"v1"}}
}

// ClusterScoped seeds a cluster-scoped custom resource whose operator is gone.
func (s *Seeder) ClusterScoped(ctx context.Context) (Scenario, error) {
	crd := s.LoadBalancerCRD()
	if err := s.EnsureCRD(ctx, crd); err != nil {
		return Scenario{}, err
	}
	name := s.Name("edge-lb")
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": crd.Group + "/v1", "kind": "LoadBalancer",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"ports": []any{int64(443)}},
	}}
	if err := s.createUnstructured(ctx, crd.GVR(), u); err != nil {
		return Scenario{}, err
	}
	fin := crd.Group + "/release"
	o := Object{Resource: crd.GVR(), Name: name, Finalizers: []string{fin}}
	if err := s.AddFinalizer(ctx, o, fin, ManagerLBOperator); err != nil {
		return Scenario{}, err
	}
	if err := s.terminate(ctx, o); err != nil {
		return Scenario{}, err
	}
	return Scenario{
		Name:        "cluster-scoped",
		Description: fmt.Sprintf("cluster-scoped loadbalancer %s waits for its operator", name),
		Stuck:       []Object{o},
	}, nil
}

// Healthy seeds objects that carry finalizers but are not being deleted. No tool may list
// them as stuck.
func (s *Seeder) Healthy(ctx context.Context) (Scenario, error) {
	ns := s.Name("healthy")
	if err := s.Namespace(ctx, ns); err != nil {
		return Scenario{}, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"mode": "prod"}}
	if _, err := s.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: ManagerKubectl}); err != nil && !apierrors.IsAlreadyExists(err) {
		return Scenario{}, fmt.Errorf("creating configmap %s/settings: %w", ns, err)
	}
	cmObj := Object{Resource: gvrConfigMaps, Namespace: ns, Name: "settings", Finalizers: []string{s.ConfigExporterFinalizer()}}
	if err := s.AddFinalizer(ctx, cmObj, s.ConfigExporterFinalizer(), ManagerConfigExporter); err != nil {
		return Scenario{}, err
	}
	w, err := s.Database(ctx, ns, "live-db")
	if err != nil {
		return Scenario{}, err
	}
	claim, err := s.claimWithPod(ctx, ns, "cache", "cache-0")
	if err != nil {
		return Scenario{}, err
	}
	return Scenario{
		Name:        "healthy",
		Description: fmt.Sprintf("namespace %s: a configmap, a database and a claim in use, all with finalizers, none deleted", ns),
		Healthy:     []Object{cmObj, w, claim, {Resource: gvrNamespaces, Name: ns}},
	}, nil
}

// All runs every scenario, in the order the demo shows them.
func (s *Seeder) All(ctx context.Context) ([]Scenario, error) {
	// The database operator writes every database of its two scenarios before any is
	// deleted, as an operator that ran and was then uninstalled did: its write after a
	// deletion began, in a later second, would be the operator alive (writing elsewhere),
	// and the causes would depend on the clock.
	healthy, err := s.Healthy(ctx)
	if err != nil {
		return nil, err
	}
	out := []Scenario{healthy}
	var gone []Object
	for _, step := range []func(context.Context) (Scenario, error){s.orphanedOperator, s.retiredDatabases} {
		sc, err := step(ctx)
		if err != nil {
			return out, err
		}
		out, gone = append(out, sc), append(gone, sc.Stuck...)
	}
	if err := s.terminate(ctx, gone...); err != nil {
		return out, err
	}
	for _, sc := range out {
		s.logf("seeded %s: %s", sc.Name, sc.Description)
	}
	steps := []func(context.Context) (Scenario, error){
		s.PVCInUse,
		s.ForegroundDeletion,
		s.CRDWaitingOnInstances,
		s.ClusterScoped,
		s.BoundVolume,
		s.WebhookBlocking,
		s.FailingController,
		s.BusyController,
		s.UnownedFinalizer,
		s.UnavailableAPIService,
	}
	for _, step := range steps {
		sc, err := step(ctx)
		if err != nil {
			return out, err
		}
		s.logf("seeded %s: %s", sc.Name, sc.Description)
		out = append(out, sc)
	}
	return out, nil
}
