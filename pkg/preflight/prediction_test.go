package preflight

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/admission"
	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/controller"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// record is a Helm record of release app's revision version with status, holding
// manifest: its labels and data.release.
func record(t *testing.T, version int, status, manifest string) (map[string]string, []byte) {
	t.Helper()
	const name = "app"
	data, err := encodeRelease(name, "ops", version, status, manifest)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"owner": "helm", "name": name, "status": status, "version": strconv.Itoa(version)}, data
}

const (
	saManifest     = "---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n"
	deployManifest = saManifest + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-operator\n"
)

func targetNames(ts []Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.String())
	}
	return out
}

// Helm's uninstall deletes the objects of the highest revision, whatever its status: an
// upgrade that failed after creating a new operator Deployment leaves that Deployment to
// the uninstall, and the prediction must see it.
func TestReadReleaseTakesTheLatestRevisionAsHelmUninstallDoes(t *testing.T) {
	l1, d1 := record(t, 1, "deployed", saManifest)
	l2, d2 := record(t, 2, "failed", deployManifest)
	l9, d9 := record(t, 9, "deployed", saManifest)
	kc := fake.NewClientset(
		// A release of the same name in another namespace is another release.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "sh.helm.release.v1.app.v9", Labels: l9}, Type: helmSecretType, Data: map[string][]byte{"release": d9}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "sh.helm.release.v1.app.v1", Labels: l1}, Type: helmSecretType, Data: map[string][]byte{"release": d1}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "sh.helm.release.v1.app.v2", Labels: l2}, Type: helmSecretType, Data: map[string][]byte{"release": d2}},
	)
	rel, targets, warnings, err := readRelease(t.Context(), kc, testMapper(), Release{Namespace: "ops", Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != 2 {
		t.Errorf("revision %d read, want 2 (the latest, which helm uninstall deletes)", rel.Version)
	}
	if got := strings.Join(targetNames(targets), ","); got != "serviceaccounts/app -n ops,deployments.apps/app-operator -n ops" {
		t.Errorf("targets %s: want the failed revision's objects", got)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "revision of helm release app, 2, is failed") {
		t.Errorf("warnings %q", warnings)
	}
}

// HELM_DRIVER=configmap keeps the same records in ConfigMaps.
func TestReadReleaseFromConfigMapStorage(t *testing.T) {
	l1, d1 := record(t, 1, "deployed", deployManifest)
	kc := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "sh.helm.release.v1.app.v1", Labels: l1},
		Data: map[string]string{"release": string(d1)}})
	rel, targets, _, err := readRelease(t.Context(), kc, testMapper(), Release{Namespace: "ops", Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != 1 || len(targets) != 2 {
		t.Errorf("revision %d, targets %v", rel.Version, targetNames(targets))
	}
	if _, _, _, err := readRelease(t.Context(), fake.NewClientset(), testMapper(), Release{Namespace: "ops", Name: "app"}); err == nil ||
		!strings.Contains(err.Error(), "helm release app not found in namespace ops") {
		t.Errorf("no record: %v", err)
	}
}

// Helm keeps an object when its manifest says keep (trimmed, any case), or any other
// resource policy, whatever the live object says: an annotation added by hand does not
// keep it.
func TestManifestSaysWhatHelmKeeps(t *testing.T) {
	manifest := `apiVersion: v1
kind: ServiceAccount
metadata:
  name: kept
  annotations:
    helm.sh/resource-policy: " Keep "
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: deleted
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: prefer-existing
  annotations:
    helm.sh/resource-policy: prefer-existing
`
	got, _, err := manifestObjects(testMapper(), manifest, "ops")
	if err != nil {
		t.Fatal(err)
	}
	// Helm deletes only the objects without a policy: any other value is not deleted.
	if len(got) != 3 || !got[0].keep || got[1].keep || !got[2].keep {
		t.Errorf("keep: %+v", got)
	}
}

// The instances of a CRD deleted go with it, and so do their dependents in other
// namespaces: an operator's Deployment owned by a cluster-scoped custom resource.
func TestGarbageOfTheInstancesOfADeletedCRD(t *testing.T) {
	deploy := schema.GroupResource{Group: "apps", Resource: "deployments"}
	installs := schema.GroupResource{Group: "example.com", Resource: "installs"}
	s := newDeletionSet()
	s.addTarget(ref(crdResource, "CustomResourceDefinition", "", "installs.example.com", "c1"))
	l := newListing(s)
	l.observe(kube.Resource{GroupVersionResource: installs.WithVersion("v1"), Kind: "Install"}, &metav1.ObjectMeta{Name: "main", UID: "i1"}, nil)
	l.observe(kube.Resource{GroupVersionResource: installs.WithVersion("v1"), Kind: "Install", Namespaced: true}, &metav1.ObjectMeta{Namespace: "a", Name: "ns", UID: "i2"}, nil)
	hooks := schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}
	s.collectGarbage([]dependent{
		{ref: ref(deploy, "Deployment", "ops", "operator", "d1"), owners: []types.UID{"i1"}},
		// A cluster-scoped dependent of a namespaced owner: the garbage collector cannot
		// resolve the reference, and keeps it.
		{ref: ref(hooks, "ValidatingWebhookConfiguration", "", "hook", "h1"), owners: []types.UID{"i2"}},
	})
	if !s.has(ref(deploy, "Deployment", "ops", "operator", "d1")) {
		t.Error("the Deployment owned by an instance of the CRD deleted is not deleted")
	}
	if s.has(ref(hooks, "ValidatingWebhookConfiguration", "", "hook", "h1")) {
		t.Error("a cluster-scoped object owned by a namespaced one is deleted")
	}
}

// A service whose workloads cannot be read is not served as far as the prediction
// knows: the prediction is incomplete (exit 3), never safe.
func TestAServiceThatCannotBeReadMakesThePredictionIncomplete(t *testing.T) {
	deploy := schema.GroupResource{Group: "apps", Resource: "deployments"}
	s := newDeletionSet()
	op := ref(deploy, "Deployment", "ops", "hook-server", "d1")
	s.addTarget(op)
	kc := fake.NewClientset()
	kc.PrependReactor("get", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "hook", errors.New("no"))
	})
	r := &run{ctx: t.Context(), p: &Preflight{Clients: &client.Clients{Kube: kc}}, set: s, kept: newListing(s),
		rep: &finalizev1alpha1.PreflightReport{}}
	key := types.NamespacedName{Namespace: "ops", Name: "hook"}
	r.kept.services[key] = ref(schema.GroupResource{Resource: "services"}, "Service", "ops", "hook", "s1")
	r.kept.workloads[nameKey(deploy, "ops", "hook-server")] = op
	if why := r.serviceGone(key); why != "" {
		t.Errorf("serviceGone = %q", why)
	}
	if len(r.rep.Incomplete) != 1 || r.rep.Incomplete[0].Resource != "services" || r.rep.Incomplete[0].Reason != finalizev1alpha1.ReasonForbidden {
		t.Errorf("incomplete %+v: want services Forbidden", r.rep.Incomplete)
	}
}

// A webhook whose failurePolicy is unset fails closed (admissionregistration.k8s.io/v1
// defaults it to Fail); an APIService served by the API server itself (service null)
// loses nothing with a namespace.
func TestAnUnsetFailurePolicyAndALocalAPIService(t *testing.T) {
	s := newDeletionSet()
	s.addTarget(ref(schema.GroupResource{Resource: "namespaces"}, "Namespace", "", "ops", "n1"))
	local := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1.apps", "uid": "a1"}, "spec": map[string]any{"group": "apps", "version": "v1", "service": nil}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		apiServicesResource.GroupVersionResource: "APIServiceList"}, local)
	r := &run{ctx: t.Context(), p: &Preflight{Clients: &client.Clients{Kube: fake.NewClientset(), Dynamic: dyn}}, set: s, kept: newListing(s),
		rep: &finalizev1alpha1.PreflightReport{}}
	key := types.NamespacedName{Namespace: "ops", Name: "hook"}
	r.kept.services[key] = ref(schema.GroupResource{Resource: "services"}, "Service", "ops", "hook", "s1")

	r.rep.Hazards = append(r.rep.Hazards, r.webhookHazard(validatingResource.Ref("", "hook", "v1"), []admissionWebhook{{name: "check.example.com",
		service: &admissionregistrationv1.ServiceReference{Namespace: "ops", Name: "hook"}}})...)
	r.rep.Hazards = append(r.rep.Hazards, apiServiceService{}.find(r)...)
	if len(r.rep.Hazards) != 1 || r.rep.Hazards[0].Reason != finalizev1alpha1.HazardWebhookServiceDeleted || len(r.rep.Incomplete) != 0 {
		t.Errorf("hazards %+v, incomplete %+v: want the webhook's only", r.rep.Hazards, r.rep.Incomplete)
	}
}

// A controller whose workloads cannot be read may be the one the deletion removes: the
// prediction is incomplete (exit 3), not safe.
func TestAControllerWhoseWorkloadsCannotBeReadMakesThePredictionIncomplete(t *testing.T) {
	s := newDeletionSet()
	s.addTarget(ref(schema.GroupResource{Group: "apps", Resource: "deployments"}, "Deployment", "ops", "op", "d1"))
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList", {Group: "apps", Version: "v1", Resource: "statefulsets"}: "StatefulSetList",
		{Group: "apps", Version: "v1", Resource: "daemonsets"}: "DaemonSetList"})
	dyn.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("no"))
	})
	kc := fake.NewClientset()
	r := &run{ctx: t.Context(), p: &Preflight{Clients: &client.Clients{Kube: kc, Dynamic: dyn}}, set: s, kept: newListing(s),
		rep: &finalizev1alpha1.PreflightReport{}, controllers: map[types.UID]map[string]finalizerController{}}
	r.finder = &controller.Finder{Dynamic: dyn, Scan: &scan.Result{}, Warnf: r.warnOnce}
	widgets := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}
	o := kube.NewObject(widgets, &metav1.ObjectMeta{Namespace: "team", Name: "w", UID: "w1", Finalizers: []string{"example.com/cleanup"}}, nil)
	o.Finalizers[0].Owner, o.Finalizers[0].OwnerSource = "op", finalizev1alpha1.OwnerSourceManagedFields
	r.kept.finalized = append(r.kept.finalized, o)

	r.rep.Hazards = append(r.rep.Hazards, controllerDeleted{}.find(r)...)
	if len(r.rep.Hazards) != 0 || len(r.rep.Incomplete) != 3 {
		t.Fatalf("hazards %+v, incomplete %+v: want deployments, statefulsets and daemonsets incomplete", r.rep.Hazards, r.rep.Incomplete)
	}
	if in := r.rep.Incomplete[0]; in.GroupVersion != "apps/v1" || in.Resource != "deployments" || !strings.Contains(in.Message, "of op, which removes finalizers") {
		t.Errorf("incomplete %+v", in)
	}
}

// A webhook called by URL at an in-cluster service's DNS name calls that service.
func TestAWebhookURLThatNamesAService(t *testing.T) {
	for url, want := range map[string]string{
		"https://hook.ops.svc/validate":                    "ops/hook",
		"https://hook.ops.svc:8443/validate":               "ops/hook",
		"https://Hook.Ops.svc.cluster.local./x":            "ops/hook",
		"https://hook.ops.svc.cluster.local:443":           "ops/hook",
		"https://127.0.0.1:9443/validate":                  "",
		"https://hook.example.com/validate":                "",
		"https://ops.svc/validate":                         "",
		"https://a.b.c.svc/validate":                       "",
		"https://hook.ops.svc.example.com/validate":        "",
		"https://hook.ops.svc.cluster.local.example.com/x": "",
	} {
		key, ok := admission.Service(nil, &url)
		if got := map[bool]string{true: key.String()}[ok]; got != want {
			t.Errorf("%s: %q, want %q", url, got, want)
		}
	}

	s := newDeletionSet()
	s.addTarget(ref(schema.GroupResource{Resource: "namespaces"}, "Namespace", "", "ops", "n1"))
	r := &run{ctx: t.Context(), p: &Preflight{Clients: &client.Clients{Kube: fake.NewClientset()}}, set: s, kept: newListing(s),
		rep: &finalizev1alpha1.PreflightReport{}}
	r.kept.services[types.NamespacedName{Namespace: "ops", Name: "hook"}] = ref(schema.GroupResource{Resource: "services"}, "Service", "ops", "hook", "s1")
	url := "https://hook.ops.svc:443/validate"
	r.rep.Hazards = append(r.rep.Hazards, r.webhookHazard(validatingResource.Ref("", "hook", "v1"), []admissionWebhook{{name: "check.example.com", url: &url}})...)
	if len(r.rep.Hazards) != 1 || !strings.Contains(r.rep.Hazards[0].Message, "its service ops/hook is deleted") {
		t.Errorf("hazards %+v", r.rep.Hazards)
	}
}

// The claim of a pod's generic ephemeral volume (POD-VOLUME) deleted while the pod runs.
func TestAnEphemeralVolumesClaimInUse(t *testing.T) {
	claims := schema.GroupResource{Resource: "persistentvolumeclaims"}
	s := newDeletionSet()
	claim := ref(claims, "PersistentVolumeClaim", "app", "web-0-data", "c1")
	s.addTarget(claim)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web-0", UID: "p1"}, Spec: corev1.PodSpec{NodeName: "n1",
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}}}
	r := &run{ctx: t.Context(), p: &Preflight{Clients: &client.Clients{Kube: fake.NewClientset(pod)}}, set: s, kept: newListing(s),
		rep: &finalizev1alpha1.PreflightReport{}}
	r.kept.claims = append(r.kept.claims, claim)
	r.rep.Hazards = append(r.rep.Hazards, claimInUse{}.find(r)...)
	if len(r.rep.Hazards) != 1 || r.rep.Hazards[0].Reason != finalizev1alpha1.HazardClaimInUse || !strings.Contains(r.rep.Hazards[0].Message, "(web-0)") {
		t.Errorf("hazards %+v", r.rep.Hazards)
	}
}

// An APIService blocks every namespace of the deletion only when two facts agree: the
// aggregator's condition says False and this run could not discover its group version.
// One without the other is a warning; an APIService deleted with the rest blocks nothing.
func TestAnUnavailableAPIServiceIsCertainOnlyWhenBothFactsAgree(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	apiService := func(name, group, status string, since time.Duration) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": name, "uid": name},
			"spec":     map[string]any{"group": group, "version": "v1", "service": map[string]any{"namespace": "ops", "name": group}}}}
		if status != "" {
			u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": status,
				"lastTransitionTime": now.Add(-since).Format(time.RFC3339),
				"reason":             "MissingEndpoints", "message": "endpoints for service/" + group + " in \"ops\" have no addresses"}}}
		}
		return u
	}
	for _, c := range []struct {
		name, status string
		since        time.Duration
		undiscovered bool
		deleted      bool
		want         bool
		warns        string
	}{
		{name: "unavailable and undiscovered", status: "False", since: 5 * time.Minute, undiscovered: true, want: true},
		{name: "no condition yet", status: "", undiscovered: true, warns: "has no Available condition yet"},
		{name: "last found available", status: "True", since: time.Hour, undiscovered: true, warns: "v1.metrics.example.com's Available condition says True"},
		{name: "unknown", status: "Unknown", since: time.Hour, undiscovered: true, warns: "Available condition says Unknown"},
		{name: "unavailable for seconds: a rollout", status: "False", since: 10 * time.Second, undiscovered: true, warns: "became unavailable 10s ago"},
		{name: "a stale condition: discovered now", status: "False", since: 5 * time.Minute},
		{name: "deleted with the namespace", status: "False", since: 5 * time.Minute, undiscovered: true, deleted: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newDeletionSet()
			s.addTarget(ref(schema.GroupResource{Resource: "namespaces"}, "Namespace", "", "team-a", "n1"))
			if c.deleted {
				s.addTarget(ref(apiServicesResource.GroupResource(), "APIService", "", "v1.metrics.example.com", "v1.metrics.example.com"))
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				apiServicesResource.GroupVersionResource: "APIServiceList"}, apiService("v1.metrics.example.com", "metrics.example.com", c.status, c.since))
			r := &run{ctx: t.Context(), p: &Preflight{Clients: &client.Clients{Kube: fake.NewClientset(), Dynamic: dyn}}, set: s, kept: newListing(s),
				rep: &finalizev1alpha1.PreflightReport{Targets: []finalizev1alpha1.ObjectReference{ref(schema.GroupResource{Resource: "namespaces"}, "Namespace", "", "team-a", "n1")}},
				res: &scan.Result{Now: now}}
			if c.undiscovered {
				r.res.Incomplete = []finalizev1alpha1.IncompleteResource{{GroupVersion: "metrics.example.com/v1", Reason: finalizev1alpha1.ReasonDiscoveryFailed}}
			}
			hz := alreadyFailing{}.find(r)
			if got := len(hz) == 1 && hz[0].Reason == finalizev1alpha1.HazardAPIServiceUnavailable; got != c.want || (!c.want && len(hz) != 0) {
				t.Fatalf("hazards %+v, want one: %v", hz, c.want)
			}
			if c.want && (len(hz[0].Objects) != 1 || hz[0].Objects[0].Name != "team-a" || !strings.Contains(hz[0].Message, "is unavailable (MissingEndpoints: endpoints for service/metrics.example.com")) {
				t.Errorf("hazard %+v", hz[0])
			}
			if c.warns != "" && !strings.Contains(strings.Join(r.warnings, "\n"), c.warns) {
				t.Errorf("warnings %q, want %q", r.warnings, c.warns)
			}
		})
	}
}
