package doctor

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

var (
	now        = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	configmaps = coreResource("configmaps", "ConfigMap", true)
	databases  = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "db.example.com", Version: "v1", Resource: "databases"}, Kind: "Database", Namespaced: true}
	namespaces = coreResource("namespaces", "Namespace", false)
)

// stuck builds a stuck object deleted an hour ago; its owners are resolved as the scan's
// pipeline would.
func stuck(r kube.Resource, ns, name string, finalizers ...string) *kube.Object {
	ts := metav1.NewTime(now.Add(-time.Hour))
	meta := &metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), DeletionTimestamp: &ts, Finalizers: finalizers}
	o := kube.NewObject(r, meta, nil)
	owner.NewResolver(owner.Builtin(), []string{"db.example.com"}).Annotate([]*kube.Object{o})
	return o
}

// managedBy records that db-operator wrote the finalizers of o at t.
func managedBy(o *kube.Object, t time.Time) *kube.Object { return writtenBy(o, "db-operator", t) }

// writtenBy records that manager wrote the finalizers of o at t.
func writtenBy(o *kube.Object, manager string, t time.Time) *kube.Object {
	fields := `{"f:metadata":{"f:finalizers":{`
	for i, f := range o.Meta.Finalizers {
		if i > 0 {
			fields += ","
		}
		fields += `"v:\"` + f + `\"":{}`
	}
	fields += `}}}`
	o.Meta.ManagedFields = append(o.Meta.ManagedFields, metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
		Time: &metav1.Time{Time: t}, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)})
	owner.NewResolver(owner.Builtin(), []string{"db.example.com"}).Annotate([]*kube.Object{o})
	return o
}

// workloadResources are the workload types a scan of the whole cluster lists.
var workloadResources = []kube.Resource{
	{GroupVersionResource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true},
	{GroupVersionResource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, Kind: "StatefulSet", Namespaced: true},
	{GroupVersionResource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, Kind: "DaemonSet", Namespaced: true},
}

// result is the scan of the whole cluster that found objs.
func result(objs ...*kube.Object) *scan.Result {
	return &scan.Result{Objects: objs, Now: now, ManagerActivity: map[string]time.Time{}, Resources: workloadResources, Index: &scan.Index{
		Dependents: map[types.UID][]scan.Dependent{}, Counts: map[schema.GroupResource]int64{},
		NamespaceLabels: map[string]map[string]string{}, Content: map[string]*scan.NamespaceContent{},
	}}
}

// deny makes the fake API server answer SubjectAccessReviews of its verbs with "no",
// and every other with "yes".
type deny struct {
	metav1.TypeMeta
	verbs []string
	// asked counts the reviews.
	asked int
	// err, when set, is the answer to every review.
	err error
	// namespaced makes a denial hold at cluster scope only: a review in a namespace is
	// allowed (a RoleBinding there).
	namespaced bool
}

func (d *deny) DeepCopyObject() runtime.Object { c := *d; return &c }

// failList makes the fake API server fail every list of resource with err, as it does
// a list its conversion webhook cannot convert.
type failList struct {
	metav1.TypeMeta
	resource string
	err      error
}

func (f *failList) DeepCopyObject() runtime.Object { c := *f; return &c }

func denyReview(verbs ...string) *deny { return &deny{verbs: verbs} }

func diagnose(t *testing.T, res *scan.Result, objs ...runtime.Object) *Report {
	t.Helper()
	return diagnoseWith(t, Options{}, res, objs...)
}

func diagnoseWith(t *testing.T, opts Options, res *scan.Result, objs ...runtime.Object) *Report {
	t.Helper()
	var typed, dyn []runtime.Object
	var denied []string
	var reviews *deny
	var fails []*failList
	for _, o := range objs {
		switch o := o.(type) {
		case *unstructured.Unstructured:
			dyn = append(dyn, o)
		case *failList:
			fails = append(fails, o)
		case *deny:
			denied, reviews = append(denied, o.verbs...), o
		default:
			typed = append(typed, o)
		}
	}
	kc := kubefake.NewClientset(typed...)
	kc.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		sar.Status.Allowed = !slices.Contains(denied, sar.Spec.ResourceAttributes.Verb)
		if reviews != nil {
			reviews.asked++
			if reviews.err != nil {
				return true, nil, reviews.err
			}
			if reviews.namespaced && sar.Spec.ResourceAttributes.Namespace != "" {
				sar.Status.Allowed = true
			}
		}
		return true, sar, nil
	})
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		apiServicesResource.GroupVersionResource:                        "APIServiceList",
		{Group: "apps", Version: "v1", Resource: "deployments"}:         "DeploymentList",
		{Group: "apps", Version: "v1", Resource: "statefulsets"}:        "StatefulSetList",
		{Group: "apps", Version: "v1", Resource: "daemonsets"}:          "DaemonSetList",
		volumeSnapshotsResource.GroupVersionResource:                    "VolumeSnapshotList",
		volumeAttachmentsResource.GroupVersionResource:                  "VolumeAttachmentList",
		crdsResource.GroupVersionResource:                               "CustomResourceDefinitionList",
		databases.GroupVersion().WithResource("databases"):              "DatabaseList",
		{Group: "db.example.com", Version: "v2", Resource: "databases"}: "DatabaseList",
		{Group: "db.example.com", Version: "v2", Resource: "dbs"}:       "DatabaseList",
	}, dyn...)
	for _, f := range fails {
		dc.PrependReactor("list", f.resource, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, f.err })
	}
	d := &Doctor{Kube: kc, Dynamic: dc, Options: opts}
	rep, err := d.Diagnose(context.Background(), res)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func wantCause(t *testing.T, rep *Report, o *kube.Object, reason string, says ...string) {
	t.Helper()
	c := rep.Cause(o)
	if c == nil || c.Reason != reason {
		t.Fatalf("%s: cause %+v, want %s", o.Ref(), c, reason)
	}
	for _, s := range says {
		if !strings.Contains(c.Message, s) && !strings.Contains(c.NextStep, s) {
			t.Errorf("%s: cause %q, next %q: does not say %q", o.Ref(), c.Message, c.NextStep, s)
		}
	}
	if c.NextStep == "" {
		t.Errorf("%s: no next step", o.Ref())
	}
}

func wantRoot(t *testing.T, rep *Report, reason string, subject finalizev1alpha1.Subject, objects int) {
	t.Helper()
	for _, r := range rep.Roots {
		if r.Reason == reason && r.Subject == subject {
			if len(r.Objects) != objects {
				t.Errorf("root %s %v explains %d objects, want %d", reason, subject, len(r.Objects), objects)
			}
			return
		}
	}
	t.Errorf("no root cause %s %v among %+v", reason, subject, rep.Roots)
}

func TestWithoutTheIndexTheDoctorRefuses(t *testing.T) {
	res := result(stuck(configmaps, "a", "cfg", "a.example.com/x"))
	res.Index = nil
	if _, err := (&Doctor{}).Diagnose(context.Background(), res); !errors.Is(err, ErrNoIndex) {
		t.Fatalf("got %v, want ErrNoIndex", err)
	}
}

func TestForegroundDeletionWaitsForItsDependents(t *testing.T) {
	o := stuck(configmaps, "a", "owner", metav1.FinalizerDeleteDependents)
	res := result(o)
	res.Index.Dependents[o.Meta.UID] = []scan.Dependent{{Seen: scan.Seen{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: "child", UID: "uid-child"}}, BlockOwnerDeletion: true}}
	rep := diagnose(t, res)
	wantCause(t, rep, o, finalizev1alpha1.ReasonDependentsRemaining, "it waits for 1 dependent with blockOwnerDeletion: configmaps/child -n a (not deleted yet)")
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerInactive, controllerSubject(gcOwner), 1)
}

func TestAClaimWaitsForThePodsThatUseIt(t *testing.T) {
	claim := stuck(claimsResource, "a", "data", finalizerPVC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-0", UID: "uid-web-0"},
		Spec:   corev1.PodSpec{NodeName: "node-a", Volumes: []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	rep := diagnose(t, result(claim), pod)
	wantCause(t, rep, claim, finalizev1alpha1.ReasonPodsUsingClaim, "web-0 (Succeeded on node node-a; a finished pod holds the claim until it is deleted)", "delete pod web-0 -n a")
	wantRoot(t, rep, finalizev1alpha1.ReasonPodsUsingClaim, finalizev1alpha1.Subject{Kind: "Pod", Namespace: "a", Name: "web-0"}, 1)
}

func TestACRDWaitsForItsInstances(t *testing.T) {
	crd := stuck(crdsResource, "", "databases.db.example.com", finalizerCRD)
	instance := stuck(databases, "a", "orders", "db.example.com/finalizer")
	res := result(crd, instance)
	res.Index.Counts[databases.GroupResource()] = 2
	rep := diagnose(t, res)
	wantCause(t, rep, crd, finalizev1alpha1.ReasonInstancesRemaining, "2 instances of the CRD remain, 1 of them stuck")
	if got := rep.Diagnosis(crd).Items; len(got) != 2 || got[1].Target.Name != "orders" {
		t.Errorf("the CRD's tree holds its stuck instance: %+v", got)
	}
}

func TestAControllerThatWroteNothingSinceTheDeletionIsInactive(t *testing.T) {
	a := managedBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	b := managedBy(stuck(databases, "b", "users", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	res := result(a, b)
	res.ManagerActivity["db-operator"] = now.Add(-2 * time.Hour)
	res.Index.Workloads = []scan.Workload{{Kind: "Deployment", Namespace: "ops", Name: "db-operator"}}
	dep := &unstructured.Unstructured{}
	dep.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	dep.SetNamespace("ops")
	dep.SetName("db-operator")
	_ = unstructured.SetNestedField(dep.Object, int64(1), "spec", "replicas")
	rep := diagnose(t, res, dep)
	wantCause(t, rep, a, finalizev1alpha1.ReasonControllerInactive, "db-operator has written nothing since the deletion began 60m ago (its last write in the cluster: 120m ago; only the writes of db-operator, which wrote the finalizer, count)", "Deployment ops/db-operator has 0/1 ready replicas")
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerInactive, controllerSubject("db-operator"), 2)
	if len(rep.Roots) != 1 {
		t.Errorf("one dead operator is one root cause: %+v", rep.Roots)
	}

	// A manager of the same name writing to other objects does not revive a Deployment
	// none of whose replicas is ready ("manager" is the name of many programs): it is
	// inactive, its Deployment named, and the writes are context. It is never said that
	// no workload of it was found.
	res.ManagerActivity["db-operator"] = now.Add(-time.Minute)
	rep = diagnose(t, res, dep)
	wantCause(t, rep, a, finalizev1alpha1.ReasonControllerInactive, "Deployment ops/db-operator has 0/1 ready replicas",
		"db-operator has written nothing to this object since the deletion began 60m ago",
		"db-operator also wrote elsewhere 60s ago (another instance or another program of that name)")
	if c := rep.Cause(a); strings.Contains(c.Message, "was found") || strings.Contains(c.Message, "not found") {
		t.Errorf("a workload found is said not found: %s", c.Message)
	}

	// With no workload found at all, writes elsewhere prove it runs somewhere (outside
	// the cluster, perhaps), not that it works on these: it runs and ignores them.
	res.Index.Workloads = nil
	rep = diagnose(t, res)
	wantCause(t, rep, a, finalizev1alpha1.ReasonControllerIdle, "it wrote to other objects 60s ago, which proves it runs, not that it works on this one", "has written nothing to this object since the deletion began 60m ago",
		"no workload of it was found in the cluster")
	res.Index.Workloads = []scan.Workload{{Kind: "Deployment", Namespace: "ops", Name: "db-operator"}}

	// Writing to the object itself is progress.
	managedBy(a, now.Add(-time.Minute))
	rep = diagnose(t, res, dep)
	wantCause(t, rep, a, finalizev1alpha1.ReasonProgressing, "db-operator is active: it last wrote this object 60s ago")
}

func TestWarningEventsMeanTheControllerIsFailing(t *testing.T) {
	o := managedBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "e1"}, Type: corev1.EventTypeWarning, Reason: "DeleteFailed",
		Note: "instance i-123: access denied", ReportingController: "db-operator", EventTime: metav1.NewMicroTime(now.Add(-5 * time.Minute)),
		Regarding: corev1.ObjectReference{UID: o.Meta.UID}}
	rep := diagnose(t, result(o), ev)
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerFailing, "db-operator reports DeleteFailed: instance i-123: access denied (once, last 5m ago)")
}

func TestAWebhookWithoutABackendBlocksEveryUpdate(t *testing.T) {
	o := stuck(configmaps, "a", "cfg", "a.example.com/x")
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "guard.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ops", Name: "guard"}},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}}}
	ignored := vwc.DeepCopy()
	ignored.Name = "lenient"
	ignored.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	rep := diagnose(t, result(o), vwc, ignored)
	wantCause(t, rep, o, finalizev1alpha1.ReasonWebhookBlocking, "ValidatingWebhookConfiguration guard (webhook guard.example.com): service ops/guard does not exist")
	wantRoot(t, rep, finalizev1alpha1.ReasonWebhookBlocking, finalizev1alpha1.Subject{Kind: "ValidatingWebhookConfiguration", Name: "guard"}, 1)
	if strings.Contains(rep.Cause(o).Message, "lenient") {
		t.Errorf("a webhook that fails open blocks nothing: %s", rep.Cause(o).Message)
	}
}

func TestANamespaceWithoutConditionsAfterTheGraceHasNoController(t *testing.T) {
	ts := metav1.NewTime(now.Add(-time.Hour))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "uid-team-a", DeletionTimestamp: &ts}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}}
	o := kube.NewObject(namespaces, &ns.ObjectMeta, ns)
	owner.NewResolver(owner.Builtin(), nil).Annotate([]*kube.Object{o})
	rep := diagnose(t, result(o))
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerInactive, "no deletion conditions 60m after the deletion began")

	// With its conditions and a stuck object inside, it waits for that object.
	ns.Status.Conditions = []corev1.NamespaceCondition{{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue, Message: "Some content in the namespace has finalizers remaining: a.example.com/x in 1 resource instances"}}
	o = kube.NewObject(namespaces, &ns.ObjectMeta, ns)
	owner.NewResolver(owner.Builtin(), nil).Annotate([]*kube.Object{o})
	child := stuck(configmaps, "team-a", "cfg", "a.example.com/x")
	rep = diagnose(t, result(o, child))
	wantCause(t, rep, o, finalizev1alpha1.ReasonNamespaceFinalizersRemaining, "a.example.com/x in 1 resource instances")
	if d := rep.Diagnosis(o); len(d.Items) != 2 {
		t.Errorf("the namespace's tree holds its content: %+v", d.Items)
	}
}

// TestNextStepsReadWell writes the cause and next step of one object per cause into a
// golden file (go test ./pkg/doctor -update): what a person reads at 3 a.m. is reviewed
// as text.
func TestNextStepsReadWell(t *testing.T) {
	ts := metav1.NewTime(now.Add(-time.Hour))
	namespace := func(name string, conds ...corev1.NamespaceCondition) *kube.Object {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), DeletionTimestamp: &ts},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}, Status: corev1.NamespaceStatus{Conditions: conds}}
		o := kube.NewObject(namespaces, &ns.ObjectMeta, ns)
		owner.NewResolver(owner.Builtin(), nil).Annotate([]*kube.Object{o})
		return o
	}
	pvBound := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "a", Name: "data", UID: "uid-gone-claim"}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
	apiSvc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": "v1beta1.metrics.k8s.io"},
		"spec":   map[string]any{"group": "metrics.k8s.io", "version": "v1beta1"},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": "False", "reason": "MissingEndpoints", "message": "endpoints for service/metrics-server in \"kube-system\" have no addresses"}}}}}
	catalogOnly := stuck(databases, "a", "crossplane-mr", "finalizer.managedresource.crossplane.io")
	groupOnly := stuck(databases, "a", "group-owned", "db.example.com/from-manifest")
	scenarios := []struct {
		name string
		obj  *kube.Object
		res  func(*scan.Result)
		objs []runtime.Object
	}{
		{"an inactive controller", managedBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), now.Add(-2*time.Hour)), nil, nil},
		{"an active controller", managedBy(managedBy(stuck(databases, "a", "busy", "db.example.com/finalizer"), now.Add(-2*time.Hour)), now.Add(-time.Minute)),
			func(r *scan.Result) { r.ManagerActivity["db-operator"] = now.Add(-time.Minute) }, nil},
		{"a controller that writes only elsewhere", managedBy(stuck(databases, "a", "elsewhere", "db.example.com/finalizer"), now.Add(-2*time.Hour)),
			func(r *scan.Result) { r.ManagerActivity["db-operator"] = now.Add(-time.Minute) }, nil},
		{"a running controller that does nothing", managedBy(stuck(databases, "a", "idle", "db.example.com/finalizer"), now.Add(-2*time.Hour)), withWorkload,
			[]runtime.Object{deployment("ops", "db-operator", 1, 1, "db-operator")}},
		{"a running controller that may not patch", managedBy(stuck(databases, "a", "locked", "db.example.com/finalizer"), now.Add(-2*time.Hour)), withWorkload,
			[]runtime.Object{deployment("ops", "db-operator", 1, 1, "db-operator"), denyReview("patch", "update")}},
		{"a Flux Kustomization whose controller is scaled to zero", fluxObject("apps", "kustomize-controller"), func(r *scan.Result) {
			r.Index.Workloads = []scan.Workload{{Kind: "Deployment", Namespace: "flux-system", Name: "kustomize-controller"}}
		}, []runtime.Object{deployment("flux-system", "kustomize-controller", 0, 0, "kustomize-controller")}},
		{"a Service restored with a cloud finalizer", lbService(), nil, nil},
		{"a catalogue owner nothing locates", catalogOnly, nil, nil},
		{"an API group owner", groupOnly, nil, nil},
		{"nobody known", stuck(configmaps, "a", "mystery", "mystery.vendor.example/final"), nil, nil},
		{"a claim in use", stuck(claimsResource, "a", "data", finalizerPVC), nil, []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "db-0"},
			Spec: corev1.PodSpec{NodeName: "node-a", Volumes: []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}}},
		{"a bound volume", stuck(coreResource("persistentvolumes", "PersistentVolume", false), "", "pv-1", finalizerPV), nil, []runtime.Object{pvBound}},
		{"a foreground deletion", stuck(configmaps, "a", "owner", metav1.FinalizerDeleteDependents), func(r *scan.Result) {
			r.Index.Dependents["uid-owner"] = []scan.Dependent{{Seen: scan.Seen{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: "child", UID: "uid-child"}, Deleting: true}, BlockOwnerDeletion: true}}
		}, nil},
		{"an orphaning without the garbage collector", stuck(configmaps, "a", "parent", metav1.FinalizerOrphanDependents), nil, nil},
		{"a namespace without its controller", namespace("ns-quiet"), nil, nil},
		{"a namespace whose content has finalizers", namespace("ns-content", corev1.NamespaceCondition{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue,
			Message: "Some content in the namespace has finalizers remaining: db.example.com/finalizer in 1 resource instances"}), nil, nil},
		{"a namespace whose conditions lag", namespace("ns-lag", corev1.NamespaceCondition{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse, Reason: "ContentRemoved", Message: "All content successfully removed"}),
			func(r *scan.Result) {
				r.Index.Content["ns-lag"] = &scan.NamespaceContent{Count: 3, Deleting: 1, ByType: map[string]int64{"pods": 1, "configmaps": 2}, Sample: []scan.Seen{
					{Ref: kube.Ref{Resource: podsResource, Namespace: "ns-lag", Name: "web-0"}, Deleting: true}, {Ref: kube.Ref{Resource: configmaps, Namespace: "ns-lag", Name: "cfg-1"}}, {Ref: kube.Ref{Resource: configmaps, Namespace: "ns-lag", Name: "cfg-2"}}}}
			}, nil},
		{"an unavailable APIService", namespace("ns-discovery", corev1.NamespaceCondition{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionTrue,
			Message: "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"}), nil, []runtime.Object{apiSvc}},
		{"a conversion webhook down", blockedNamespace("ns-conversion", convFailed), nil, []runtime.Object{conversionCRDObject("", "v1"), convDown()}},
		{"a conversion webhook down, objects at two versions", blockedNamespace("ns-conversion-2", convFailed), nil, []runtime.Object{conversionCRDObject("", "v1", "v2"), convDown()}},
		{"a claim snapshots are taken from", stuck(claimsResource, "a", "data", finalizerSnapshotSource), nil, []runtime.Object{
			snapshot("a", "nightly", "data", map[string]any{"readyToUse": false, "error": map[string]any{"message": "Failed to create snapshot: rpc error: code = Internal"}}),
			snapshot("a", "weekly", "data", map[string]any{"readyToUse": true})}},
		{"an attached volume", stuck(coreResource("persistentvolumes", "PersistentVolume", false), "", "pv-1", "external-attacher/csi-example-com"), nil, []runtime.Object{
			attachment("csi-1", "pv-1", "node-a", map[string]any{"attached": true})}},
	}
	var b strings.Builder
	for _, sc := range scenarios {
		res := result(sc.obj)
		if sc.res != nil {
			sc.res(res)
		}
		c := diagnose(t, res, sc.objs...).Cause(sc.obj)
		fmt.Fprintf(&b, "## %s\n%s: %s\nNext: %s\n\n", sc.name, c.Reason, c.Message, c.NextStep)
		for _, bad := range []string{" is really gone is done", "..", " , ", "  "} {
			if strings.Contains(c.Message+c.NextStep, bad) {
				t.Errorf("%s: %q in %q / %q", sc.name, bad, c.Message, c.NextStep)
			}
		}
	}
	golden(t, "next-steps.golden", []byte(b.String()))
}

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/doctor -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test ./pkg/doctor -update if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestWarningsAreReadInTheFewestLists: with stuck objects in three namespaces and few
// events in the cluster, the warnings are read in one cluster-wide list; with more events
// than three pages hold, one list per namespace. Either way each object gets its own.
func TestWarningsAreReadInTheFewestLists(t *testing.T) {
	for _, tt := range []struct {
		events      int64
		wantListsIn []string
	}{
		{10, []string{""}},
		{5000, []string{"a", "b", "c"}},
	} {
		var objs []*kube.Object
		var evs []runtime.Object
		for _, ns := range []string{"a", "b", "c"} {
			o := managedBy(stuck(databases, ns, "orders-"+ns, "db.example.com/finalizer"), now.Add(-2*time.Hour))
			objs = append(objs, o)
			evs = append(evs, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e-" + ns}, Type: corev1.EventTypeWarning, Reason: "DeleteFailed",
				Note: "in " + ns, ReportingController: "db-operator", EventTime: metav1.NewMicroTime(now.Add(-5 * time.Minute)),
				Regarding: corev1.ObjectReference{UID: o.Meta.UID}})
		}
		res := result(objs...)
		res.Index.Counts[schema.GroupResource{Resource: "events"}] = tt.events
		kc := kubefake.NewClientset(evs...)
		d := &Doctor{Kube: kc, Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			apiServicesResource.GroupVersionResource:                 "APIServiceList",
			{Group: "apps", Version: "v1", Resource: "deployments"}:  "DeploymentList",
			{Group: "apps", Version: "v1", Resource: "statefulsets"}: "StatefulSetList",
			{Group: "apps", Version: "v1", Resource: "daemonsets"}:   "DaemonSetList",
			volumeSnapshotsResource.GroupVersionResource:             "VolumeSnapshotList",
			volumeAttachmentsResource.GroupVersionResource:           "VolumeAttachmentList",
		}), Options: Options{ChunkSize: 500}}
		rep, err := d.Diagnose(context.Background(), res)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			wantCause(t, rep, o, finalizev1alpha1.ReasonControllerFailing, "DeleteFailed: in "+o.Meta.Namespace)
		}
		var listed []string
		for _, a := range kc.Actions() {
			if a.GetVerb() == "list" && a.GetResource().Resource == "events" {
				listed = append(listed, a.GetNamespace())
			}
		}
		slices.Sort(listed)
		if !slices.Equal(listed, tt.wantListsIn) {
			t.Errorf("%d events in the cluster: warnings listed in namespaces %q, want %q", tt.events, listed, tt.wantListsIn)
		}
	}
}

// deployment is a Deployment of replicas, ready of them ready, whose pods run as
// ServiceAccount sa, with env in its container.
func deployment(ns, name string, replicas, ready int64, sa string, env ...corev1.EnvVar) *unstructured.Unstructured {
	dep := &unstructured.Unstructured{}
	dep.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	dep.SetNamespace(ns)
	dep.SetName(name)
	_ = unstructured.SetNestedField(dep.Object, replicas, "spec", "replicas")
	_ = unstructured.SetNestedField(dep.Object, ready, "status", "readyReplicas")
	_ = unstructured.SetNestedField(dep.Object, sa, "spec", "template", "spec", "serviceAccountName")
	_ = unstructured.SetNestedStringMap(dep.Object, map[string]string{"app.kubernetes.io/name": name, "control-plane": "controller-manager"}, "spec", "selector", "matchLabels")
	container := map[string]any{"name": "manager", "image": "example.com/" + name}
	var vars []any
	for _, e := range env {
		vars = append(vars, map[string]any{"name": e.Name, "value": e.Value})
	}
	if len(vars) > 0 {
		container["env"] = vars
	}
	_ = unstructured.SetNestedSlice(dep.Object, []any{container}, "spec", "template", "spec", "containers")
	return dep
}

// withWorkload: the scan indexed Deployment ops/db-operator.
func withWorkload(r *scan.Result) {
	r.Index.Workloads = []scan.Workload{{Kind: "Deployment", Namespace: "ops", Name: "db-operator"}}
}

var kustomizations = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}, Kind: "Kustomization", Namespaced: true}

// fluxObject is a Kustomization whose finalizers.fluxcd.io manager wrote two hours ago.
func fluxObject(name, manager string) *kube.Object {
	return writtenBy(stuck(kustomizations, "flux-system", name, "finalizers.fluxcd.io"), manager, now.Add(-2*time.Hour))
}

// lbService is a Service whose cloud finalizer came from a manifest (restored from a
// cloud cluster).
func lbService() *kube.Object {
	return writtenBy(stuck(coreResource("services", "Service", true), "web", "frontend", "service.kubernetes.io/load-balancer-cleanup"), "kubectl-client-side-apply", now.Add(-2*time.Hour))
}

// TestTheWriterIsTheControllerWhenTheCatalogueNamesNoWorkload: Flux's catalogue entry
// names no workload; the kustomize-controller that wrote finalizers.fluxcd.io is the
// controller, measured by its writes and its Deployment. A finalizer only a generic
// client wrote is located by the catalogue's hint.
func TestTheWriterIsTheControllerWhenTheCatalogueNamesNoWorkload(t *testing.T) {
	written := fluxObject("apps", "kustomize-controller")
	applied := fluxObject("infra", "kubectl-client-side-apply")
	res := result(written, applied)
	res.ManagerActivity["kustomize-controller"] = now.Add(-2 * time.Hour)
	res.ManagerGroupActivity = map[scan.ManagerGroup]time.Time{{Manager: "kustomize-controller", Group: kustomizations.Group}: now.Add(-2 * time.Hour)}
	res.Index.Workloads = []scan.Workload{{Kind: "Deployment", Namespace: "flux-system", Name: "kustomize-controller"}}
	rep := diagnose(t, res, deployment("flux-system", "kustomize-controller", 0, 0, "kustomize-controller"))
	wantCause(t, rep, written, finalizev1alpha1.ReasonControllerInactive, "kustomize-controller has written nothing since the deletion began 60m ago",
		"its Deployment flux-system/kustomize-controller has 0/0 ready replicas", "bring kustomize-controller back")
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerInactive, controllerSubject("kustomize-controller"), 1)
	wantCause(t, rep, applied, finalizev1alpha1.ReasonUnknown, "the finalizer was written by kubectl-client-side-apply, a client that applies manifests for people",
		"kubectl get deployments -n flux-system")
	if c := rep.Cause(applied); strings.Contains(c.Message, "no field manager wrote") {
		t.Errorf("a finalizer a client wrote is said written by nobody: %s", c.Message)
	}
}

// TestOnlyTheOwnersWarningsMeanFailing: the volume controller's warnings about a claim
// held by the snapshot controller's finalizer are context, not the claim's cause.
func TestOnlyTheOwnersWarningsMeanFailing(t *testing.T) {
	claim := writtenBy(stuck(claimsResource, "a", "data", "snapshot.storage.kubernetes.io/pvc-as-source-protection"), "snapshot-controller", now.Add(-2*time.Hour))
	volumeWarning := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "e1"}, Type: corev1.EventTypeWarning, Reason: "ProvisioningFailed",
		Note: "storageclass.storage.k8s.io \"fast\" not found", DeprecatedSource: corev1.EventSource{Component: "persistentvolume-controller"},
		DeprecatedLastTimestamp: metav1.NewTime(now.Add(-time.Minute)), DeprecatedCount: 12, Regarding: corev1.ObjectReference{UID: claim.Meta.UID}}
	rep := diagnose(t, result(claim), volumeWarning)
	c := rep.Cause(claim)
	if c.Reason == finalizev1alpha1.ReasonControllerFailing {
		t.Fatalf("the volume controller's warnings blamed on the snapshot controller: %+v", c)
	}
	wantCause(t, rep, claim, c.Reason, "also: persistentvolume-controller reports ProvisioningFailed: storageclass.storage.k8s.io \"fast\" not found (12 times, last 60s ago; it owns none of the object's finalizers)")
	if strings.Contains(c.NextStep, "persistentvolume-controller") {
		t.Errorf("the next step sends the reader to the volume controller: %s", c.NextStep)
	}

	// The owner's own warning is the cause.
	snapshotWarning := volumeWarning.DeepCopy()
	snapshotWarning.Name, snapshotWarning.Reason, snapshotWarning.Note = "e2", "SnapshotPending", "snapshot orders-snap is not ready"
	snapshotWarning.DeprecatedSource.Component = "snapshot-controller"
	rep = diagnose(t, result(claim), volumeWarning, snapshotWarning)
	wantCause(t, rep, claim, finalizev1alpha1.ReasonControllerFailing, "snapshot-controller reports SnapshotPending", "also: persistentvolume-controller reports ProvisioningFailed")
}

// TestWorkloadsDoNotDependOnTheScope: a scan limited to the object's namespace indexed
// no workload; the controller's Deployment in another namespace is still found.
func TestWorkloadsDoNotDependOnTheScope(t *testing.T) {
	o := managedBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	dep := deployment("ops", "db-operator", 1, 0, "db-operator")
	full := result(o)
	withWorkload(full)
	narrow := result(o)
	narrow.Namespaces, narrow.Resources = []string{"a"}, nil
	for name, res := range map[string]*scan.Result{"the cluster": full, "namespace a": narrow} {
		rep := diagnose(t, res, dep)
		c := rep.Cause(o)
		if !strings.Contains(c.Message, "its Deployment ops/db-operator has 0/1 ready replicas") || strings.Contains(c.Message, "was found") {
			t.Errorf("scanning %s: %s", name, c.Message)
		}
	}
	rep := diagnose(t, narrow, dep)
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerInactive, "db-operator has written nothing in namespace a, the only one scanned")
}

// TestARunningControllerThatDoesNothing: a ready controller that has not written to the
// object is asked about: its ServiceAccount's permissions and the namespaces it watches.
func TestARunningControllerThatDoesNothing(t *testing.T) {
	o := managedBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	res := result(o)
	withWorkload(res)
	// Scoped to other namespaces, it does not run for this object (#34).
	scoped := deployment("ops", "db-operator", 2, 1, "operator-sa", corev1.EnvVar{Name: "WATCH_NAMESPACE", Value: "ops,b"})
	rep := diagnose(t, res, scoped)
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerInactive, "not running for this object: Deployment ops/db-operator: its pod template sets env WATCH_NAMESPACE to ops,b: it may not watch namespace a",
		"let db-operator watch namespace a")
	dep := deployment("ops", "db-operator", 2, 1, "operator-sa", corev1.EnvVar{Name: "WATCH_NAMESPACE", Value: "ops,a"})
	rep = diagnose(t, res, dep)
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerIdle, "db-operator runs (its Deployment ops/db-operator has 1/2 ready replicas)",
		"SubjectAccessReviews allow its ServiceAccount ops/operator-sa to list and watch databases.db.example.com cluster-wide and to patch them in namespace a: its permissions do not stop it seeing the object or removing its finalizer (whether it watches namespace a is another matter)",
		"kubectl logs -n ops -l app.kubernetes.io/name=db-operator,control-plane=controller-manager --all-containers --prefix --tail=-1 --since=61m",
		"kubectl auth can-i patch databases.db.example.com -n a --as system:serviceaccount:ops:operator-sa")
	if c := rep.Cause(o); strings.Contains(c.NextStep, "bring db-operator back") || strings.Contains(c.Message, "permissions are not why") || strings.Contains(c.NextStep, "deploy/db-operator") {
		t.Errorf("a running controller is to be brought back, its permissions said beyond what was checked, or one pod's logs read: %s / %s", c.Message, c.NextStep)
	}
	// A selector without matchLabels: the logs by kind and name.
	bare := dep.DeepCopy()
	unstructured.RemoveNestedField(bare.Object, "spec", "selector")
	rep = diagnose(t, res, bare)
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerIdle, "kubectl logs -n ops deploy/db-operator --all-containers --since=61m")
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerIdle, controllerSubject("db-operator"), 1)

	rep = diagnose(t, res, dep, denyReview("watch"))
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerForbidden, "ServiceAccount ops/operator-sa (of Deployment ops/db-operator) may not watch databases.db.example.com in namespace a (it never sees the object)")
	rep = diagnose(t, res, dep, denyReview("patch", "update"))
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerForbidden, "may not patch or update databases.db.example.com in namespace a (it cannot remove its finalizer)", "grant what it lacks")
}

// TestProgressIsRecentAndAboutThisObject: a write to the object is progress for the
// progress window, and no longer.
func TestProgressIsRecentAndAboutThisObject(t *testing.T) {
	// Deleted an hour ago; the operator wrote to it 10 minutes later, and not since.
	o := managedBy(managedBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), now.Add(-2*time.Hour)), now.Add(-50*time.Minute))
	res := result(o)
	withWorkload(res)
	res.ManagerActivity["db-operator"] = now.Add(-50 * time.Minute)
	dep := deployment("ops", "db-operator", 1, 1, "db-operator")
	rep := diagnose(t, res, dep)
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerIdle, "last wrote this object 50m ago, 10m after the deletion began, and nothing since", "the progress window (15m)")
	rep = diagnoseWith(t, Options{ProgressWindow: time.Hour}, res, dep)
	wantCause(t, rep, o, finalizev1alpha1.ReasonProgressing, "it last wrote this object 50m ago", "only after 60m without a write to the object")

	// Deleted five minutes ago, and the ready operator has not written to it yet: not
	// proven.
	fresh := managedBy(stuck(databases, "a", "fresh", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	fresh.Meta.DeletionTimestamp = &metav1.Time{Time: now.Add(-5 * time.Minute)}
	res = result(fresh)
	withWorkload(res)
	rep = diagnose(t, res, dep)
	wantCause(t, rep, fresh, finalizev1alpha1.ReasonProgressing, "db-operator runs (its Deployment ops/db-operator has 1/1 ready replicas), and the deletion began 5m ago: it has not written to this object since")
}

// TestPermissionsAreAskedPerTypeAndNamespace: twenty idle objects of one type in one
// namespace cost the five reviews of one, not a hundred.
func TestPermissionsAreAskedPerTypeAndNamespace(t *testing.T) {
	var objs []*kube.Object
	for i := range 20 {
		objs = append(objs, managedBy(stuck(databases, "a", fmt.Sprintf("db-%02d", i), "db.example.com/finalizer"), now.Add(-2*time.Hour)))
	}
	res := result(objs...)
	withWorkload(res)
	reviews := denyReview()
	rep := diagnose(t, res, deployment("ops", "db-operator", 1, 1, "db-operator"), reviews)
	for _, o := range objs {
		wantCause(t, rep, o, finalizev1alpha1.ReasonControllerIdle, "allow its ServiceAccount ops/db-operator to list and watch databases.db.example.com cluster-wide and to patch them in namespace a")
	}
	if reviews.asked != 5 {
		t.Errorf("%d SubjectAccessReviews, want 5 (list, watch, patch, update, update finalizers)", reviews.asked)
	}
}

// TestAnUnreadWorkloadIsNotAnAbsentOne: when the doctor may not list StatefulSets, it
// says so, and never that no StatefulSet of the controller's name exists.
func TestAnUnreadWorkloadIsNotAnAbsentOne(t *testing.T) {
	o := managedBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	res := result(o)
	res.Namespaces, res.Resources = []string{"a"}, nil
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		apiServicesResource.GroupVersionResource:                 "APIServiceList",
		{Group: "apps", Version: "v1", Resource: "deployments"}:  "DeploymentList",
		{Group: "apps", Version: "v1", Resource: "statefulsets"}: "StatefulSetList",
		{Group: "apps", Version: "v1", Resource: "daemonsets"}:   "DaemonSetList",
	})
	dyn.PrependReactor("list", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "", errors.New("RBAC"))
	})
	if _, err := (&Doctor{Kube: kubefake.NewClientset(), Dynamic: dyn}).Diagnose(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	// As a real scan finds it: the operator's own write of the object, two hours ago.
	res.ManagerActivity["db-operator"] = now.Add(-2 * time.Hour)
	rep, err := (&Doctor{Kube: kubefake.NewClientset(), Dynamic: dyn}).Diagnose(context.Background(), res)
	if err != nil {
		t.Fatal(err)
	}
	wantCause(t, rep, o, finalizev1alpha1.ReasonUnknown, "whether it runs cannot be told", "get the read the doctor could not make")
	c := rep.Cause(o)
	if strings.Contains(c.Message, "was found") || !strings.Contains(c.Message, "its StatefulSets could not be read, so whether it runs in the cluster is not known") {
		t.Errorf("cause %s: %s", c.Reason, c.Message)
	}
	if strings.Contains(c.NextStep, "bring db-operator back") {
		t.Errorf("an unread workload is taken for an absent one: %s", c.NextStep)
	}
	if len(rep.Warnings) == 0 || !strings.Contains(rep.Warnings[0], "could not look for statefulsets named db-operator") {
		t.Errorf("warnings %q", rep.Warnings)
	}
}

// TestAnOperatorsOwnWarningUnderAnotherNameIsFailing: a kubebuilder
// operator writes as "manager" and records Events as "database-controller". Its own
// DeleteFailed warning is the cause (ControllerFailing), never context "it owns none of
// the object's finalizers", and the next step never removes the finalizer.
func TestAnOperatorsOwnWarningUnderAnotherNameIsFailing(t *testing.T) {
	o := writtenBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), "manager", now.Add(-2*time.Hour))
	res := result(o)
	res.ManagerActivity["manager"] = now.Add(-2 * time.Hour)
	ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "e1"}, Type: corev1.EventTypeWarning, Reason: "DeleteFailed",
		Note: "AccessDenied: not authorized to delete instance db-123", ReportingController: "database-controller", EventTime: metav1.NewMicroTime(now.Add(-5 * time.Minute)),
		Regarding: corev1.ObjectReference{UID: o.Meta.UID}}
	rep := diagnose(t, res, ev)
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerFailing, "database-controller reports DeleteFailed: AccessDenied: not authorized to delete instance db-123",
		"taken as manager's", "fix what database-controller reports")
	c := rep.Cause(o)
	if strings.Contains(c.NextStep, "kubectl finalize remove") || strings.Contains(c.Message, "owns none") {
		t.Errorf("the operator's own warning is not its failure: %s / %s", c.Message, c.NextStep)
	}
	wantRoot(t, rep, finalizev1alpha1.ReasonControllerFailing, controllerSubject("manager"), 1)

	// Proven the owner's: the Event was written by the field manager that wrote the
	// finalizer; or it reports from a pod of the owner's workload.
	written := ev.DeepCopy()
	written.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate}}
	rep = diagnose(t, res, written)
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerFailing, "(its Event was written by field manager manager, which wrote db.example.com/finalizer)")
	if c := rep.Cause(o); strings.Contains(c.Message, "taken as") {
		t.Errorf("a proven owner's warning is said taken as its: %s", c.Message)
	}
	// A Deployment that merely shares the name many programs write as ("manager") is no
	// workload of the owner (#34): a pod of it proves nothing.
	fromPod := ev.DeepCopy()
	fromPod.ReportingInstance = "manager-7d9f8c-x2x4z"
	res.Index.Workloads = []scan.Workload{{Kind: "Deployment", Namespace: "ops", Name: "manager"}}
	rep = diagnose(t, res, fromPod, deployment("ops", "manager", 1, 1, "manager"))
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerFailing, "taken as manager's, not proven")
	res.Index.Workloads = nil

	// A Kubernetes component's warning on the same object stays context.
	kubelet := ev.DeepCopy()
	kubelet.Name, kubelet.ReportingController, kubelet.Reason, kubelet.Note = "e2", "kubelet", "FailedMount", "volume not found"
	kubelet.EventTime = metav1.NewMicroTime(now.Add(-time.Minute))
	rep = diagnose(t, res, kubelet)
	if c := rep.Cause(o); c.Reason == finalizev1alpha1.ReasonControllerFailing {
		t.Errorf("the kubelet's warning blamed on the operator: %s", c.Message)
	}
	wantCause(t, rep, o, rep.Cause(o).Reason, "also: kubelet reports FailedMount: volume not found (once, last 60s ago; it owns none of the object's finalizers)")
}

// TestAWorkloadThatCannotBeReadIsUnread: the scan indexed the operator's
// Deployment, and reading it fails (not NotFound): the Deployment is unread, not absent.
func TestAWorkloadThatCannotBeReadIsUnread(t *testing.T) {
	o := managedBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	res := result(o)
	withWorkload(res)
	res.ManagerActivity["db-operator"] = now.Add(-2 * time.Hour)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		apiServicesResource.GroupVersionResource:                 "APIServiceList",
		{Group: "apps", Version: "v1", Resource: "deployments"}:  "DeploymentList",
		{Group: "apps", Version: "v1", Resource: "statefulsets"}: "StatefulSetList",
		{Group: "apps", Version: "v1", Resource: "daemonsets"}:   "DaemonSetList",
	}, deployment("ops", "db-operator", 1, 1, "db-operator"))
	dyn.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	})
	rep, err := (&Doctor{Kube: kubefake.NewClientset(), Dynamic: dyn}).Diagnose(context.Background(), res)
	if err != nil {
		t.Fatal(err)
	}
	wantCause(t, rep, o, finalizev1alpha1.ReasonUnknown, "its Deployments could not be read", "whether it runs cannot be told")
	if c := rep.Cause(o); strings.Contains(c.Message, "was found") || strings.Contains(c.NextStep, "bring db-operator back") {
		t.Errorf("a Deployment that could not be read is taken for an absent one: %s / %s", c.Message, c.NextStep)
	}
}

// TestANarrowScanClaimsNoInactivity: a scan of one namespace measured
// the operator's writes there only; with no workload of it in the cluster, whether it
// runs is not known, and the next step says how to measure its writes cluster-wide.
func TestANarrowScanClaimsNoInactivity(t *testing.T) {
	o := managedBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	res := result(o)
	res.Namespaces, res.Resources = []string{"a"}, nil
	res.ManagerActivity["db-operator"] = now.Add(-2 * time.Hour)
	rep := diagnose(t, res)
	wantCause(t, rep, o, finalizev1alpha1.ReasonUnknown, "in namespace a, the only one scanned", "its writes elsewhere in the cluster were not measured",
		"run the doctor as someone who may list every type in every namespace")
	// The whole cluster scanned: inactive.
	full := result(o)
	full.ManagerActivity["db-operator"] = now.Add(-2 * time.Hour)
	wantCause(t, diagnose(t, full), o, finalizev1alpha1.ReasonControllerInactive, "its last write in the cluster: 120m ago")
}

// TestAWriterTheCatalogueDoesNotNameIsNotTheController: velero restored a
// Service with the cloud service controller's finalizer. The catalogue names the owner:
// velero only added the finalizer, and is not measured as the controller.
func TestAWriterTheCatalogueDoesNotNameIsNotTheController(t *testing.T) {
	o := writtenBy(stuck(coreResource("services", "Service", true), "web", "frontend", "service.kubernetes.io/load-balancer-cleanup"), "velero", now.Add(-2*time.Hour))
	res := result(o)
	res.ManagerActivity["velero"] = now.Add(-time.Minute)
	res.Index.Workloads = []scan.Workload{{Kind: "Deployment", Namespace: "velero", Name: "velero"}}
	rep := diagnose(t, res, deployment("velero", "velero", 1, 1, "velero"))
	wantCause(t, rep, o, finalizev1alpha1.ReasonUnknown, "service controller (cloud-controller-manager) is expected to remove service.kubernetes.io/load-balancer-cleanup",
		"the finalizer was written by velero, which the catalogue does not name as its owner", "whether the cluster has a cloud provider at all")
	if c := rep.Cause(o); strings.Contains(c.Message, "velero runs") || strings.Contains(c.Message, "velero has written") {
		t.Errorf("velero is measured as the service controller: %s", c.Message)
	}
}

// TestReviewsAreAskedClusterWideFirstAndFailuresOnce: a controller whose
// idle objects are spread over three namespaces and allowed cluster-wide costs the five
// reviews of one namespace; denied cluster-wide and allowed in a namespace, it is asked
// there too, and not Forbidden. An authorizer that times out is asked once, not once per
// object.
func TestReviewsAreAskedClusterWideFirstAndFailuresOnce(t *testing.T) {
	var objs []*kube.Object
	for i := range 12 {
		objs = append(objs, managedBy(stuck(databases, fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("db-%02d", i), "db.example.com/finalizer"), now.Add(-2*time.Hour)))
	}
	res := result(objs...)
	withWorkload(res)
	dep := deployment("ops", "db-operator", 1, 1, "db-operator")
	reviews := denyReview()
	rep := diagnose(t, res, dep, reviews)
	for _, o := range objs {
		wantCause(t, rep, o, finalizev1alpha1.ReasonControllerIdle, "to list and watch databases.db.example.com cluster-wide and to patch them in namespace "+o.Meta.Namespace)
	}
	if reviews.asked != 5 {
		t.Errorf("%d SubjectAccessReviews for three namespaces allowed cluster-wide, want 5", reviews.asked)
	}

	local := denyReview("patch")
	local.namespaced = true
	rep = diagnose(t, res, dep, local)
	wantCause(t, rep, objs[0], finalizev1alpha1.ReasonControllerIdle, "to list and watch databases.db.example.com cluster-wide and to patch them in namespace ns-0")
	if local.asked != 5+3 {
		t.Errorf("%d SubjectAccessReviews, want 8 (five cluster-wide, patch again in each of three namespaces)", local.asked)
	}

	// list and watch allowed in the namespace only: a cluster-wide informer is refused.
	listLocal := denyReview("list", "watch")
	listLocal.namespaced = true
	rep = diagnose(t, res, dep, listLocal)
	wantCause(t, rep, objs[0], finalizev1alpha1.ReasonControllerIdle,
		"to list and watch databases.db.example.com in namespace ns-0 only, not cluster-wide, and to patch them there: if it watches every namespace",
		"its informer's cluster-wide list is refused", "kubectl auth can-i list databases.db.example.com -A --as system:serviceaccount:ops:db-operator")
	if c := rep.Cause(objs[0]); strings.Contains(c.Message, "do not stop it seeing") {
		t.Errorf("namespace-only list and watch said to let it see the object: %s", c.Message)
	}

	timeout := denyReview()
	timeout.err = apierrors.NewTimeoutError("authorization webhook timed out", 0)
	rep = diagnose(t, res, dep, timeout)
	wantCause(t, rep, objs[0], finalizev1alpha1.ReasonControllerIdle, "could not be checked")
	if timeout.asked != 1 {
		t.Errorf("a timing-out authorizer was asked %d times, want 1", timeout.asked)
	}
}

// TestASharedManagerNamesWritesCountOnlyInItsGroup: "manager" is the field manager of
// every kubebuilder operator. Its writes to ConfigMaps say nothing about the operator of
// databases.db.example.com; its writes to other databases do. A specific name's writes
// count in every group.
func TestASharedManagerNamesWritesCountOnlyInItsGroup(t *testing.T) {
	o := writtenBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), "manager", now.Add(-2*time.Hour))
	res := result(o)
	res.ManagerActivity["manager"] = now.Add(-time.Minute)
	res.ManagerGroupActivity = map[scan.ManagerGroup]time.Time{{Manager: "manager", Group: ""}: now.Add(-time.Minute), {Manager: "manager", Group: "db.example.com"}: now.Add(-2 * time.Hour)}
	rep := diagnose(t, res)
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerInactive, "manager has written nothing since the deletion began 60m ago",
		"manager wrote to objects of other API groups 60s ago, which is not counted: many programs write as manager, so only its writes to the object's own API group count")

	res.ManagerGroupActivity[scan.ManagerGroup{Manager: "manager", Group: "db.example.com"}] = now.Add(-time.Minute)
	rep = diagnose(t, res)
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerIdle, "it wrote to other objects of API group db.example.com 60s ago, which proves it runs, not that it works on this one")

	specific := managedBy(stuck(databases, "a", "users", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	res = result(specific)
	res.ManagerActivity["db-operator"] = now.Add(-time.Minute)
	res.ManagerGroupActivity = map[scan.ManagerGroup]time.Time{{Manager: "db-operator", Group: ""}: now.Add(-time.Minute)}
	rep = diagnose(t, res)
	wantCause(t, rep, specific, finalizev1alpha1.ReasonControllerIdle, "it wrote to other objects 60s ago, which proves it runs")
}

// TestAServiceControllerIsNotProvenByItsProcess: a Service's load-balancer-cleanup
// finalizer, written by kube-controller-manager (its in-tree service controller, before the
// cloud provider was removed). kube-controller-manager writes all the time elsewhere, which
// says nothing of whether a service controller runs: the cause is Unknown, with how to find
// out, never Progressing (#34).
func TestAServiceControllerIsNotProvenByItsProcess(t *testing.T) {
	svc := writtenBy(stuck(coreResource("services", "Service", true), "apps", "frontend", "service.kubernetes.io/load-balancer-cleanup"), "kube-controller-manager", now.Add(-2*time.Hour))
	svc.Meta.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
	res := result(svc)
	res.ManagerActivity["kube-controller-manager"] = now.Add(-time.Second)
	rep := diagnose(t, res)
	wantCause(t, rep, svc, finalizev1alpha1.ReasonUnknown,
		"the finalizer was written by kube-controller-manager, a process of many controllers, whose writes say nothing of whether the one that removes it runs",
		"whether the cluster has a cloud provider at all")
}

// TestANarrowedReportKeepsTheCausesOfTheWholeCluster: narrowing a report to the objects of
// one namespace keeps their causes as measured on the whole cluster, and each root cause
// lists the kept objects it explains, and no other.
func TestANarrowedReportKeepsTheCausesOfTheWholeCluster(t *testing.T) {
	a := managedBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	b := managedBy(stuck(databases, "b", "users", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	res := result(a, b)
	res.ManagerActivity["db-operator"] = now.Add(-2 * time.Hour)
	rep := diagnose(t, res)
	narrow, err := res.Narrow(scan.Options{Namespace: "a"})
	if err != nil {
		t.Fatal(err)
	}
	got := rep.Narrow(narrow)
	if got.Cause(a) != rep.Cause(a) {
		t.Errorf("the cause of %s changed: %+v", a.Meta.Name, got.Cause(a))
	}
	d := got.Diagnosis(nil)
	if len(d.Items) != 1 || d.Items[0].Target.Name != "orders" {
		t.Fatalf("items %+v", d.Items)
	}
	if len(d.RootCauses) != 1 || len(d.RootCauses[0].Objects) != 1 || d.RootCauses[0].Objects[0].Name != "orders" {
		t.Errorf("root causes %+v", d.RootCauses)
	}
	if full := rep.Diagnosis(nil); len(full.RootCauses) != 1 || len(full.RootCauses[0].Objects) != 2 {
		t.Errorf("narrowing changed the report it narrows: %+v", full.RootCauses)
	}
	if one := got.Diagnosis(a); len(one.RootCauses) != 1 || len(one.RootCauses[0].Objects) != 1 {
		t.Errorf("the diagnosis of %s: %+v", a.Meta.Name, one.RootCauses)
	}
}

// TestTwoUnreadableObjectsOfOneKindInTwoGroups: objects nobody can read whose kind,
// namespace and name are alike, in two API groups, are two root causes, each found by
// its own diagnosis, though a root cause's subject names no group.
func TestTwoUnreadableObjectsOfOneKindInTwoGroups(t *testing.T) {
	res := result()
	a := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "a.example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}
	b := a
	b.Group = "b.example.com"
	res.Unreadable = []scan.Unreadable{{Resource: a, Namespace: "x", Name: "w", Message: "proto: wrong wireType"}, {Resource: b, Namespace: "x", Name: "w", Message: "no matching prefix found"}}
	rep := diagnose(t, res)
	if len(rep.Roots) != 2 {
		t.Fatalf("%d root causes, want 2: %+v", len(rep.Roots), rep.Roots)
	}
	for _, r := range []kube.Resource{a, b} {
		d := rep.UnreadableDiagnosis(r, "x", "w")
		if d == nil || len(d.Items) != 1 || len(d.RootCauses) != 1 || len(d.RootCauses[0].Objects) != 1 || d.RootCauses[0].Objects[0].APIVersion != r.GroupVersion().String() {
			t.Errorf("%s: %+v", r, d)
		}
	}
}
