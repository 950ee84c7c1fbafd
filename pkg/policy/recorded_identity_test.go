package policy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// A provider-kubernetes Object's finalizer must never be removed as Gone while the object
// the provider made (and recorded in status.atProvider.manifest) exists: found by the
// attack review of #38's record check, each case below was removed before its fix.

var (
	recordedObjects = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "kubernetes.crossplane.io", Version: "v1alpha2", Resource: "objects"}, Kind: "Object"}
	recordedCMs     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	recordedSecrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	recordedUsages  = schema.GroupVersionResource{Group: "kubernetes.crossplane.io", Version: "v1alpha1", Resource: "providerconfigusages"}
)

const recordedProvider = "crossplane-kubernetes-provider"

type recordedManifest struct{ apiVersion, kind, ns, name string }

func (m recordedManifest) obj() map[string]any {
	return map[string]any{"apiVersion": m.apiVersion, "kind": m.kind, "metadata": map[string]any{"namespace": m.ns, "name": m.name}}
}

// recordedObject is an Object whose spec names spec and whose provider's record (written by
// recordWriter, or by nameWriter for metadata.name when set) names rec.
func recordedObject(name string, spec, rec recordedManifest, live bool, nameWriter string, extraSpec map[string]any) *unstructured.Unstructured {
	s := map[string]any{"forProvider": map[string]any{"manifest": spec.obj()}, "providerConfigRef": map[string]any{"name": "workload"}}
	for k, v := range extraSpec {
		s[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
		"metadata": map[string]any{"name": name}, "spec": s,
		"status": map[string]any{"atProvider": map[string]any{"manifest": rec.obj()}}}}
	// The provider records the object it observed, its UID included.
	_ = unstructured.SetNestedField(u.Object, "uid-cm-"+rec.name, "status", "atProvider", "manifest", "metadata", "uid")
	// And it reported the object it found, after its usage was made.
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "True", "reason": "Available",
		"lastTransitionTime": now.Add(-2 * time.Hour).UTC().Format(time.RFC3339)}}, "status", "conditions")
	u.SetUID(types.UID("uid-" + name))
	u.SetResourceVersion("7")
	u.SetFinalizers([]string{crossplaneFin})
	if !live {
		ts := metav1.NewTime(now.Add(-time.Hour))
		u.SetDeletionTimestamp(&ts)
	}
	status := `{"f:status":{"f:atProvider":{"f:manifest":{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:name":{},"f:namespace":{},"f:uid":{}}}},"f:conditions":{}}}`
	mf := []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:forProvider":{"f:manifest":{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:name":{},"f:namespace":{}}}}}}`)},
		{Manager: recordedProvider, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{".":{},"v:\"` + crossplaneFin + `\"":{}}}}`)},
	}
	if nameWriter == "" {
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: recordedProvider, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(status)})
	} else {
		mf = append(mf,
			metav1.ManagedFieldsEntry{Manager: recordedProvider, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:atProvider":{"f:manifest":{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:namespace":{},"f:uid":{}}}},"f:conditions":{}}}`)},
			metav1.ManagedFieldsEntry{Manager: nameWriter, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:atProvider":{"f:manifest":{"f:metadata":{"f:name":{}}}}}}`)})
	}
	u.SetManagedFields(mf)
	return u
}

func recordedTarget(kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID("uid-cm-" + name))
	return u
}

// recordedUsage is the provider's ProviderConfigUsage of o, naming providerConfig, its
// providerConfigRef written by writer.
func recordedUsage(o *unstructured.Unstructured, providerConfig, writer string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfigUsage",
		"providerConfigRef": map[string]any{"name": providerConfig},
		"resourceRef":       map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(), "name": o.GetName()}}}
	u.SetName(string(o.GetUID()))
	u.SetGeneration(1) // as the API server makes it
	u.SetCreationTimestamp(metav1.NewTime(now.Add(-3 * time.Hour)))
	u.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(o, o.GroupVersionKind())})
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: writer, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:ownerReferences":{}},"f:providerConfigRef":{".":{},"f:name":{}},"f:resourceRef":{".":{},"f:apiVersion":{},"f:kind":{},"f:name":{}}}`)}})
	return u
}

// usedProviderConfig is the ProviderConfig o's spec names, as the CRD defaults it.
func usedProviderConfig(o *unstructured.Unstructured) string {
	if name, _, _ := unstructured.NestedString(o.Object, "spec", "providerConfigRef", "name"); name != "" {
		return name
	}
	return "default"
}

func recordedPolicy(namespace, name string) string {
	return header + `rules:
- name: objects
  preset: crossplane-managed
  resources: ["objects.kubernetes.crossplane.io"]
  minAge: 1m
  verify:
    kubernetes:
      resource: configmaps
      namespace: "` + namespace + `"
      name: "` + name + `"
`
}

// recordedVerify runs the verifier with a kubernetes provider on the same (fake) cluster,
// a live control whose ConfigMap exists, and returns the stuck Object's verification.
func recordedVerify(t *testing.T, doc string, stuck *unstructured.Unstructured, targets ...*unstructured.Unstructured) plan.Verification {
	t.Helper()
	return recordedVerifyWith(t, doc, stuck, nil, targets...)
}

// recordedVerifyWith is recordedVerify whose fake cluster hook changes first.
func recordedVerifyWith(t *testing.T, doc string, stuck *unstructured.Unstructured, hook func(*dynamicfake.FakeDynamicClient), targets ...*unstructured.Unstructured) plan.Verification {
	t.Helper()
	m := recordedManifest{"v1", "ConfigMap", "team-a", "live"}
	control := recordedObject("control", m, m, true, "", nil)
	others := []runtime.Object{recordedTarget("ConfigMap", "team-a", "live"), recordedUsage(control, usedProviderConfig(control), recordedProvider)}
	// The stuck Object's usage is the provider's, naming its spec's ProviderConfig,
	// unless the case brings its own.
	usage := recordedUsage(stuck, usedProviderConfig(stuck), recordedProvider)
	for _, o := range targets {
		if o == nil {
			continue
		}
		if o.GetKind() == "ProviderConfigUsage" && o.GetName() == string(stuck.GetUID()) {
			usage = nil
		}
		if o.GetKind() == "ConfigMap" && o.GetName() == "live" {
			others = slices.DeleteFunc(others, func(r runtime.Object) bool {
				u := r.(*unstructured.Unstructured)
				return u.GetKind() == "ConfigMap" && u.GetName() == "live"
			})
		}
		others = append(others, o)
	}
	if usage != nil {
		others = append(others, usage)
	}
	got, _ := v1Objects.verifyAll(t, doc, []*unstructured.Unstructured{control, stuck}, others, hook)
	return got[stuck.GetName()]
}

// objectsCluster is a fake cluster of provider-kubernetes Objects of one API (v1's
// cluster-scoped ones, v2's namespaced ones) and their ProviderConfigUsages.
type objectsCluster struct {
	objects kube.Resource
	usages  schema.GroupVersionResource
}

var v1Objects = objectsCluster{objects: recordedObjects, usages: recordedUsages}

// verifyAll builds doc's verifier over a fake cluster holding objs and others, which is
// also the rule's cluster; runs hook on it; observes objs in their order, as a scan would
// (controls and stuck alike); and verifies each stuck one. It returns the verifications
// by name, and the rule statuses.
func (c objectsCluster) verifyAll(t *testing.T, doc string, objs []*unstructured.Unstructured, others []runtime.Object, hook func(*dynamicfake.FakeDynamicClient)) (map[string]plan.Verification, []finalizev1alpha1.RuleStatus) {
	t.Helper()
	p, _ := compile(t, doc)
	ros := slices.Clone(others)
	for _, o := range objs {
		ros = append(ros, o)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		c.objects.GroupVersionResource: "ObjectList", recordedCMs: "ConfigMapList", recordedSecrets: "SecretList", c.usages: "ProviderConfigUsageList"}, ros...)
	if hook != nil {
		hook(dyn)
	}
	scope := meta.RESTScopeRoot
	if c.objects.Namespaced {
		scope = meta.RESTScopeNamespace
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(c.usages.GroupVersion().WithKind("ProviderConfigUsage"), scope)
	mapper.Add(c.objects.GroupVersion().WithKind("Object"), scope)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	v := NewVerifier(p, dyn, provider.Options{Dynamic: dyn, Mapper: mapper})
	v.Clock = testingclock.NewFakePassiveClock(now)
	var stuck []*kube.Object
	for _, o := range objs {
		md := &metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID(), Finalizers: o.GetFinalizers(), DeletionTimestamp: o.GetDeletionTimestamp()}
		v.Controls.Observe(c.objects, md, nil)
		if o.GetDeletionTimestamp() != nil {
			stuck = append(stuck, kube.NewObject(c.objects, md, nil))
		}
	}
	out := map[string]plan.Verification{}
	for _, o := range stuck {
		out[o.Meta.Name] = v.Verify(context.Background(), plan.VerifyRequest{Object: o, Finalizer: finalizev1alpha1.Finalizer{Name: crossplaneFin, Field: finalizev1alpha1.FieldMetadataFinalizers}})
	}
	return out, v.RuleStatuses()
}

// recordedDocumented is docs/presets.md's namespace template.
const recordedDocumented = "{identity.manifestNamespace}"

// TestAnObjectTheProviderDidNotActOnIsNotVerified: whatever changed in the spec's
// manifest after the provider last acted (its name, its kind, its apiVersion, removed or
// rewritten), or a rule that asks about another object than the manifest's (a literal
// namespace), the object the provider made may remain: Unknown, never Gone.
func TestAnObjectTheProviderDidNotActOnIsNotVerified(t *testing.T) {
	documented := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	for _, tc := range []struct {
		name      string
		doc       string
		spec, rec recordedManifest
		exists    *unstructured.Unstructured
		says      string
		// recordWriter, if set, wrote the record's name instead of the provider.
		recordWriter string
	}{
		{"renamed", documented, recordedManifest{"v1", "ConfigMap", "team-a", "never-made"}, recordedManifest{"v1", "ConfigMap", "team-a", "made"},
			recordedTarget("ConfigMap", "team-a", "made"), `but the operator last acted on "made"`, ""},
		{"another kind", documented, recordedManifest{"v1", "ConfigMap", "team-a", "x"}, recordedManifest{"v1", "Secret", "team-a", "x"},
			recordedTarget("Secret", "team-a", "x"), `spec.forProvider.manifest.kind is "ConfigMap", but the operator last acted on "Secret"`, ""},
		{"kind and apiVersion removed", documented, recordedManifest{"", "", "team-a", "x"}, recordedManifest{"v1", "Secret", "team-a", "x"},
			recordedTarget("Secret", "team-a", "x"), `spec.forProvider.manifest.kind is "", but the operator last acted on "Secret"`, ""},
		{"a literal namespace", recordedPolicy("team-a", "{identity.manifestName}"), recordedManifest{"v1", "ConfigMap", "team-b", "x"}, recordedManifest{"v1", "ConfigMap", "team-b", "x"},
			recordedTarget("ConfigMap", "team-b", "x"), `the object names ConfigMap x in namespace team-b, and the rule asks in namespace "team-a"`, ""},
		{"a name the rule adds to", recordedPolicy(recordedDocumented, "{identity.manifestName}-copy"), recordedManifest{"v1", "ConfigMap", "team-a", "x"}, recordedManifest{"v1", "ConfigMap", "team-a", "x"},
			recordedTarget("ConfigMap", "team-a", "x"), `and the rule asks for "x-copy"`, ""},
		{"a record someone else rewrote with the spec", documented, recordedManifest{"v1", "ConfigMap", "team-a", "never-made"}, recordedManifest{"v1", "ConfigMap", "team-a", "never-made"},
			recordedTarget("ConfigMap", "team-a", "made"), "status.atProvider.manifest.metadata.name was last written by kubectl-patch, not by the operator", "kubectl-patch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := recordedVerify(t, tc.doc, recordedObject("stuck", tc.spec, tc.rec, false, tc.recordWriter, nil), tc.exists)
			if got.Gone() || !strings.Contains(got.Evidence, tc.says) {
				t.Errorf("%s %q, want Unknown saying %q", got.Verdict, got.Evidence, tc.says)
			}
		})
	}
	// And the ordinary Gone is Gone.
	if got := recordedVerify(t, documented, recordedObject("stuck", recordedManifest{"v1", "ConfigMap", "team-a", "gone"}, recordedManifest{"v1", "ConfigMap", "team-a", "gone"}, false, "", nil)); !got.Gone() {
		t.Fatalf("a gone ConfigMap is not Gone: %+v", got)
	}
}

// TestAManifestIsReadOnlyAsItsIdentity: a rule with the preset that reads the manifest's
// fields, or the provider's record of them, directly reads around the check that the
// two agree (and that the record is the provider's): refused when the policy loads.
// Under trustIdentityFromAnyWriter the load warning names the record.
func TestAManifestIsReadOnlyAsItsIdentity(t *testing.T) {
	for _, name := range []string{"{.spec.forProvider.manifest.metadata.name}", "{.status.atProvider.manifest.metadata.name}", "{.status.atProvider.manifest.metadata.*}"} {
		spec, errs := Decode([]byte(recordedPolicy(recordedDocumented, name)))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		_, errs, _ = Compile(spec)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "which it trusts only when the two agree and the record is its operator's: write {identity.manifest") {
			t.Errorf("%s: %v", name, errs)
		}
	}
	_, w := compile(t, strings.Replace(recordedPolicy(recordedDocumented, "{identity.manifestName}"), "  minAge: 1m\n", "  minAge: 1m\n  trustIdentityFromAnyWriter: true\n", 1))
	if len(w) != 1 || !strings.Contains(w[0], "status.atProvider.manifest.metadata.name") {
		t.Errorf("trustIdentityFromAnyWriter's warning: %q", w)
	}
}

// TestAnObjectOfAnotherProviderConfigIsNotVouchedFor: the rule asks one cluster, and its
// live control is applied through ProviderConfig workload. An Object applied through
// another ProviderConfig (another cluster, where its ConfigMap may well exist) is not
// vouched for by that control: its Gone is Unknown. Under requireLive: false the rule
// acts without live controls, as it says.
func TestAnObjectOfAnotherProviderConfigIsNotVouchedFor(t *testing.T) {
	m := recordedManifest{"v1", "ConfigMap", "team-a", "elsewhere"}
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	other := recordedObject("stuck", m, m, false, "", map[string]any{"providerConfigRef": map[string]any{"name": "other-cluster"}})
	got := recordedVerify(t, doc, other)
	if got.Gone() || !strings.Contains(got.Evidence, "this object is of ProviderConfig other-cluster") ||
		!strings.Contains(got.Evidence, "no live control of ProviderConfig other-cluster shows that the rule asks there (the live controls drawn are objects.kubernetes.crossplane.io/control (ProviderConfig workload))") {
		t.Errorf("another ProviderConfig: %s %q", got.Verdict, got.Evidence)
	}
	// The control's own ProviderConfig: Gone.
	if got := recordedVerify(t, doc, recordedObject("stuck", m, m, false, "", nil)); !got.Gone() {
		t.Errorf("the control's ProviderConfig: %s %q", got.Verdict, got.Evidence)
	}
	// Left out, the reference is the CRD's default, "default": another one.
	unset := recordedObject("stuck", m, m, false, "", nil)
	unstructured.RemoveNestedField(unset.Object, "spec", "providerConfigRef")
	if got := recordedVerify(t, doc, unset); got.Gone() || !strings.Contains(got.Evidence, "ProviderConfig default") {
		t.Errorf("no providerConfigRef: %s %q", got.Verdict, got.Evidence)
	}
	// requireLive: false does not make a control of another scope vouch for it.
	loose := strings.Replace(doc, "  minAge: 1m\n", "  minAge: 1m\n  controls: {count: 3, requireLive: false}\n", 1)
	if got := recordedVerify(t, loose, other); got.Gone() {
		t.Errorf("requireLive false: %s %q", got.Verdict, got.Evidence)
	}
}

// TestTheProviderConfigIsTheOneTheProviderRecorded: the cluster an Object's manifest was
// applied to is the one of the ProviderConfig the provider last connected through, which
// it records in a ProviderConfigUsage named by the Object's UID. A spec whose
// providerConfigRef changed after the provider stopped names a cluster the provider never
// applied to, where the manifest's object is, of course, not found: Unknown, as is an
// Object with no usage, a usage someone else wrote, and one of another object. Reading
// the usage is a read the verdict needs: a failure is not the object's.
func TestTheProviderConfigIsTheOneTheProviderRecorded(t *testing.T) {
	m := recordedManifest{"v1", "ConfigMap", "team-a", "made-elsewhere"}
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	stuck := func() *unstructured.Unstructured { return recordedObject("stuck", m, m, false, "", nil) }
	other := stuck()
	other.SetUID("uid-another")
	for _, tc := range []struct {
		name  string
		usage *unstructured.Unstructured
		says  string
	}{
		{"moved after the provider stopped", recordedUsage(stuck(), "other-cluster", recordedProvider),
			"the spec names ProviderConfig workload, but its operator last acted through ProviderConfig other-cluster (ProviderConfigUsage uid-stuck)"},
		{"moved, and the move tracked", func() *unstructured.Unstructured {
			u := recordedUsage(stuck(), "workload", recordedProvider)
			u.SetGeneration(2)
			return u
		}(), "ProviderConfigUsage uid-stuck changed since it was made (generation 2): the object was moved between scopes"},
		{"a usage someone else wrote", recordedUsage(stuck(), "workload", "kubectl-edit"),
			"providerConfigRef of ProviderConfigUsage uid-stuck was last written by kubectl-edit, not by the operator"},
		{"a usage of another object", func() *unstructured.Unstructured {
			u := recordedUsage(other, "workload", recordedProvider)
			u.SetName("uid-stuck")
			return u
		}(), "ProviderConfigUsage uid-stuck is not this object's record: its controller is not uid uid-stuck"},
		{"a usage that names another Object", func() *unstructured.Unstructured {
			u := recordedUsage(stuck(), "workload", recordedProvider)
			_ = unstructured.SetNestedField(u.Object, "someone-else", "resourceRef", "name")
			return u
		}(), "it is about Object someone-else, not Object stuck"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := recordedVerify(t, doc, stuck(), tc.usage)
			if got.Gone() || !strings.Contains(got.Evidence, tc.says) {
				t.Errorf("%s %q, want Unknown saying %q", got.Verdict, got.Evidence, tc.says)
			}
		})
	}
	t.Run("no usage", func(t *testing.T) {
		got := recordedVerifyWith(t, doc, stuck(), func(dyn *dynamicfake.FakeDynamicClient) {
			_ = dyn.Resource(recordedUsages).Delete(context.Background(), "uid-stuck", metav1.DeleteOptions{})
		})
		if got.Gone() || !strings.Contains(got.Evidence, "its operator has not recorded where it put the resource (no ProviderConfigUsage uid-stuck)") {
			t.Errorf("%s %q", got.Verdict, got.Evidence)
		}
	})
	t.Run("a usage that cannot be read", func(t *testing.T) {
		got := recordedVerifyWith(t, doc, stuck(), func(dyn *dynamicfake.FakeDynamicClient) {
			dyn.PrependReactor("get", "providerconfigusages", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(recordedUsages.GroupResource(), "uid-stuck", errors.New("RBAC"))
			})
		})
		if got.Gone() || got.Status != plan.Unread || !strings.Contains(got.Evidence, "reading ProviderConfigUsage uid-stuck for preset crossplane-managed") {
			t.Errorf("%s %s %q", got.Verdict, got.Status, got.Evidence)
		}
	})
	// The provider's own usage of the spec's ProviderConfig: Gone.
	if got := recordedVerify(t, doc, stuck()); !got.Gone() {
		t.Errorf("the recorded ProviderConfig: %s %q", got.Verdict, got.Evidence)
	}
}

// TestANamesakeDoesNotVouchForItsProviderConfig: a live control vouches that the rule asks
// the cluster its ProviderConfig applies to only when the provider found the very object
// the operator recorded there (its UID). A namesake in the rule's cluster (another
// object of the same name, not the one provider-kubernetes made) answers Present too,
// and shows nothing: the Gone of an Object of that ProviderConfig stays Unknown.
func TestANamesakeDoesNotVouchForItsProviderConfig(t *testing.T) {
	m := recordedManifest{"v1", "ConfigMap", "team-a", "gone"}
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	namesake := recordedTarget("ConfigMap", "team-a", "live")
	namesake.SetUID("uid-a-namesake")
	got := recordedVerify(t, doc, recordedObject("stuck", m, m, false, "", nil), namesake)
	if got.Gone() || !strings.Contains(got.Evidence, "the provider found uid uid-a-namesake, and its operator recorded uid uid-cm-live: another object of the same name") {
		t.Errorf("a namesake: %s %q", got.Verdict, got.Evidence)
	}
	// The control's record of the UID, written by someone else, vouches for nothing.
	got = recordedVerifyWith(t, doc, recordedObject("stuck", m, m, false, "", nil), func(dyn *dynamicfake.FakeDynamicClient) {
		objects := dyn.Resource(recordedObjects.GroupVersionResource)
		c, err := objects.Get(context.Background(), "control", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mf := c.GetManagedFields()
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: "kubectl-patch", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:atProvider":{"f:manifest":{"f:metadata":{"f:uid":{}}}}}}`)})
		c.SetManagedFields(mf)
		if _, err := objects.Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if got.Gone() || !strings.Contains(got.Evidence, "status.atProvider.manifest.metadata.uid was last written by kubectl-patch, not by the operator") {
		t.Errorf("a UID someone else recorded: %s %q", got.Verdict, got.Evidence)
	}
}

// TestAUsageMadeAfterTheLastReportIsNotUsed: the provider makes an Object's usage at its
// first connect, before it reports the object it found (Ready: Available, Unavailable or
// Deleting). A usage made after that report was made again (the provider deletes one
// whose owner reference is gone and makes it anew at the next connect, perhaps of
// another ProviderConfig), and the record may be from the one before: Unknown. So is an
// Object whose last report does not say the provider found its object (Creating, which a
// failed create sets too), or whose conditions someone else wrote.
func TestAUsageMadeAfterTheLastReportIsNotUsed(t *testing.T) {
	m := recordedManifest{"v1", "ConfigMap", "team-a", "gone"}
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	// ready is the stuck Object with its Ready condition's reason at, and the Synced
	// condition the same mark set.
	ready := func(reason string, at time.Time, synced, message string) *unstructured.Unstructured {
		o := recordedObject("stuck", m, m, false, "", nil)
		_ = unstructured.SetNestedSlice(o.Object, []any{
			map[string]any{"type": "Ready", "status": "False", "reason": reason, "lastTransitionTime": at.UTC().Format(time.RFC3339)},
			map[string]any{"type": "Synced", "status": "False", "reason": synced, "message": message, "lastTransitionTime": at.UTC().Format(time.RFC3339)},
		}, "status", "conditions")
		return o
	}
	for _, tc := range []struct {
		name  string
		stuck *unstructured.Unstructured
		says  string
	}{
		{"a usage made after the last report", ready("Available", now.Add(-4*time.Hour), "ReconcileSuccess", ""), "was made at " + now.Add(-3*time.Hour).UTC().Format(time.RFC3339) + ", after its operator last reported on the resource"},
		{"a report that a failed create makes too", ready("Creating", now.Add(-time.Hour), "ReconcileError", "create failed: boom"), `its Ready condition's reason is "Creating", which does not say that its provider found the resource`},
		{"a Deleting that follows a resource not found", ready("Deleting", now.Add(-time.Hour), "ReconcileError", "cannot remove finalizer"), "does not say that the provider found the resource to delete it"},
		{"no report", func() *unstructured.Unstructured {
			o := recordedObject("stuck", m, m, false, "", nil)
			unstructured.RemoveNestedField(o.Object, "status", "conditions")
			return o
		}(), "it has no Ready condition"},
		{"a report someone else wrote", func() *unstructured.Unstructured {
			o := recordedObject("stuck", m, m, false, "", nil)
			mf := append(o.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: "kubectl-patch", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{}}}`)})
			o.SetManagedFields(mf)
			return o
		}(), "status.conditions was last written by kubectl-patch, not by the operator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recordedVerify(t, doc, tc.stuck); got.Gone() || !strings.Contains(got.Evidence, tc.says) {
				t.Errorf("%s %q, want Unknown saying %q", got.Verdict, got.Evidence, tc.says)
			}
		})
	}
	// Deleting, after the usage was made, with the Synced of a delete requested or failed:
	// the provider found the object to delete it.
	for _, synced := range [][2]string{{"ReconcileSuccess", ""}, {"ReconcileError", "delete failed: cannot delete: forbidden"}} {
		if got := recordedVerify(t, doc, ready("Deleting", now.Add(-time.Hour), synced[0], synced[1])); !got.Gone() {
			t.Errorf("Deleting after the usage, Synced %s: %s %q", synced[0], got.Verdict, got.Evidence)
		}
	}
}

// TestARuleOfAPresetsFinalizersWithoutItIsWarnedOf: a rule that removes the finalizers a
// preset handles without naming it gets none of the preset's checks (whose the identity
// is, what the operator recorded, where it put the resource): the load says so.
func TestARuleOfAPresetsFinalizersWithoutItIsWarnedOf(t *testing.T) {
	doc := strings.Replace(recordedPolicy("{.spec.forProvider.manifest.metadata.namespace}", "{.metadata.name}"), "  preset: crossplane-managed\n", "  finalizers: [finalizer.managedresource.crossplane.io]\n", 1)
	_, warnings := compile(t, doc)
	if !slices.ContainsFunc(warnings, func(w string) bool {
		return strings.Contains(w, "rule objects removes finalizers of Crossplane managed resources (providers) without preset: crossplane-managed")
	}) {
		t.Errorf("warnings %q", warnings)
	}
	if _, warnings := compile(t, recordedPolicy(recordedDocumented, "{identity.manifestName}")); slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "without preset") }) {
		t.Errorf("with the preset: %q", warnings)
	}
}
