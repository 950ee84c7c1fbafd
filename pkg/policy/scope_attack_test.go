package policy

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// The third attack review of #38 (of fa256a7): each test states the real provider's
// behaviour it reproduces. The first two were wrongful removals and the last an
// over-refusal before their fixes; TestV2ObjectsStillVerify holds the ordinary case.

// moveControl makes the fake cluster's live control look as provider-kubernetes leaves an
// Object whose providerConfigRef was changed from workload to pc while the provider ran,
// and whose new connect did not re-observe its object there:
//
//   - crossplane-runtime v2.4.0 LegacyProviderConfigUsageTracker.Track runs first in
//     Connect and Updates the usage to the new ProviderConfig (AllowUpdateIf: the ref
//     differs), as the provider;
//   - provider-kubernetes v1.3.1 cluster/object Observe returns
//     ExternalObservation{ResourceExists: false} on a NotFound in the new cluster WITHOUT
//     calling setAtProvider, so status.atProvider.manifest (and its metadata.uid) still
//     holds the object it last observed through workload;
//   - with managementPolicies [Observe, Delete] (a supported policy set: "like
//     ObserveOnly, but the external resource is deleted"; not retained, since it has
//     Delete) the managed reconciler neither creates nor updates, and marks the Object
//     ReconcileSuccess (Synced True, observedGeneration current). With the default
//     policies the Create in the new cluster must fail (its namespace missing there, the
//     new cluster unreachable) for the same state; Synced is then False.
func moveControl(t *testing.T, dyn *dynamicfake.FakeDynamicClient, pc string) {
	t.Helper()
	ctx := context.Background()
	objects := dyn.Resource(recordedObjects.GroupVersionResource)
	c, err := objects.Get(ctx, "control", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(c.Object, pc, "spec", "providerConfigRef", "name")
	_ = unstructured.SetNestedStringSlice(c.Object, []string{"Observe", "Delete"}, "spec", "managementPolicies")
	c.SetGeneration(2)
	_ = unstructured.SetNestedSlice(c.Object, []any{
		map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "observedGeneration": int64(2)},
		map[string]any{"type": "Ready", "status": "True", "reason": "Available", "observedGeneration": int64(1)},
	}, "status", "conditions")
	if _, err := objects.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Track's Update of the usage, which the API server counts in its generation (the
	// fake client does not: set here).
	usages := dyn.Resource(recordedUsages)
	u, err := usages.Get(ctx, string(c.GetUID()), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, pc, "providerConfigRef", "name")
	u.SetGeneration(2)
	if _, err := usages.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestAControlMovedToAnotherProviderConfigDoesNotVouchForIt: the live control was applied
// through ProviderConfig workload (the rule's cluster), and its ConfigMap "live" is there.
// Its providerConfigRef is then changed to other-cluster; the provider tracks the move
// (its usage now names other-cluster) but never observes the control's object there, so
// its record still holds the UID of the ConfigMap in the rule's cluster. The rule's
// provider finds that very UID, so the control "vouches" for other-cluster.
//
// A stuck Object of other-cluster, whose ConfigMap exists in other-cluster and not in the
// rule's cluster, is then answered Gone, vouched for, and its finalizer removed: a
// wrongful removal. It must stay Unknown: nothing shows that the rule asks the cluster
// other-cluster applies to.
func TestAControlMovedToAnotherProviderConfigDoesNotVouchForIt(t *testing.T) {
	m := recordedManifest{"v1", "ConfigMap", "team-a", "in-other-cluster-only"}
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	stuck := recordedObject("stuck", m, m, false, "", map[string]any{"providerConfigRef": map[string]any{"name": "other-cluster"}})
	// Without the move, Unknown (the commit's own test, for reference).
	if got := recordedVerify(t, doc, stuck.DeepCopy()); got.Gone() {
		t.Fatalf("before the move: %s %q", got.Verdict, got.Evidence)
	}
	got := recordedVerifyWith(t, doc, stuck, func(dyn *dynamicfake.FakeDynamicClient) { moveControl(t, dyn, "other-cluster") })
	if got.Gone() {
		t.Errorf("WRONGFUL REMOVAL: an Object of ProviderConfig other-cluster is Gone on the word of a control moved there whose record is still the object it observed in the rule's cluster: %s %s %q",
			got.Verdict, got.Status, got.Evidence)
	}
	if !strings.Contains(got.Evidence, "other-cluster") {
		t.Logf("evidence: %q", got.Evidence)
	}
}

// TestRequireLiveFalseIsLiftedByAnEditOfTheControls: under controls.requireLive: false
// the ProviderConfig check holds "once a control answered" (5cb16fe). Anyone who may
// patch the live controls (the same people the spec check distrusts) lifts it by
// changing a control's providerConfigRef while the provider is stopped: the new check
// makes that control decided Unknown (spec and usage disagree), it is skipped, no control
// answers Present, and notVouchedFor returns "" for own.present == 0. An Object of
// another cluster is then removed on the rule's cluster's 404. (Before fa256a7 the same
// edit left the control Present, of another scope, and the Gone Unknown; a manifest edit
// lifted it already.)
func TestRequireLiveFalseIsLiftedByAnEditOfTheControls(t *testing.T) {
	m := recordedManifest{"v1", "ConfigMap", "team-a", "in-other-cluster-only"}
	loose := strings.Replace(recordedPolicy(recordedDocumented, "{identity.manifestName}"), "  minAge: 1m\n", "  minAge: 1m\n  controls: {count: 3, requireLive: false}\n", 1)
	stuck := recordedObject("stuck", m, m, false, "", map[string]any{"providerConfigRef": map[string]any{"name": "other-cluster"}})
	if got := recordedVerify(t, loose, stuck.DeepCopy()); got.Gone() {
		t.Fatalf("before the edit: %s %q", got.Verdict, got.Evidence)
	}
	got := recordedVerifyWith(t, loose, stuck, func(dyn *dynamicfake.FakeDynamicClient) {
		objects := dyn.Resource(recordedObjects.GroupVersionResource)
		c, err := objects.Get(context.Background(), "control", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(c.Object, "typo", "spec", "providerConfigRef", "name")
		if _, err := objects.Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if got.Gone() {
		t.Errorf("WRONGFUL REMOVAL (requireLive: false): one edit of the live control's providerConfigRef lifts the ProviderConfig check for every Object: %s %s %q",
			got.Verdict, got.Status, got.Evidence)
	}
}

// v2's namespaced Objects: the ordinary case must still verify (no over-refusal).
var (
	v2Objects = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "kubernetes.m.crossplane.io", Version: "v1alpha1", Resource: "objects"}, Kind: "Object", Namespaced: true}
	v2Usages  = schema.GroupVersionResource{Group: "kubernetes.m.crossplane.io", Version: "v1alpha1", Resource: "providerconfigusages"}
)

// v2Object is a namespaced Object in team-a, as recordedObject, naming pcRef.
func v2Object(name string, m recordedManifest, live bool, pcRef map[string]any) *unstructured.Unstructured {
	u := recordedObject(name, m, m, live, "", map[string]any{"providerConfigRef": pcRef})
	u.SetAPIVersion("kubernetes.m.crossplane.io/v1alpha1")
	u.SetNamespace("team-a")
	return u
}

// v2Usage is ProviderConfigUsageTracker.Track's usage: in the Object's namespace, named
// by its UID, providerConfigRef {name, kind}.
func v2Usage(o *unstructured.Unstructured, pcRef map[string]any) *unstructured.Unstructured {
	u := recordedUsage(o, "", recordedProvider)
	u.SetAPIVersion("kubernetes.m.crossplane.io/v1alpha1")
	u.SetNamespace(o.GetNamespace())
	_ = unstructured.SetNestedMap(u.Object, pcRef, "providerConfigRef")
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: recordedProvider, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:ownerReferences":{}},"f:providerConfigRef":{".":{},"f:kind":{},"f:name":{}},"f:resourceRef":{".":{},"f:apiVersion":{},"f:kind":{},"f:name":{}}}`)}})
	return u
}

func v2Verify(t *testing.T, controlRef, stuckRef, stuckUsageRef map[string]any) plan.Verification {
	t.Helper()
	doc := header + `rules:
- name: objects
  preset: crossplane-managed
  resources: ["objects.kubernetes.m.crossplane.io"]
  minAge: 1m
  verify:
    kubernetes:
      resource: configmaps
      namespace: "{identity.manifestNamespace}"
      name: "{identity.manifestName}"
`
	live := recordedManifest{"v1", "ConfigMap", "team-a", "live"}
	gone := recordedManifest{"v1", "ConfigMap", "team-a", "gone"}
	control := v2Object("control", live, true, controlRef)
	stuck := v2Object("stuck", gone, false, stuckRef)
	got, _ := objectsCluster{objects: v2Objects, usages: v2Usages}.verifyAll(t, doc, []*unstructured.Unstructured{control, stuck},
		[]runtime.Object{recordedTarget("ConfigMap", "team-a", "live"), v2Usage(control, controlRef), v2Usage(stuck, stuckUsageRef)}, nil)
	return got["stuck"]
}

// TestV2ObjectsStillVerify: a v2 Object of ClusterProviderConfig default, or of its
// namespace's ProviderConfig local, beside a live control of the same, is Gone when its
// ConfigMap is; one of another kind of the same name is not vouched for.
func TestV2ObjectsStillVerify(t *testing.T) {
	cpc := map[string]any{"kind": "ClusterProviderConfig", "name": "default"}
	npc := map[string]any{"kind": "ProviderConfig", "name": "default"}
	if got := v2Verify(t, cpc, cpc, cpc); !got.Gone() {
		t.Errorf("ClusterProviderConfig default: %s %s %q", got.Verdict, got.Status, got.Evidence)
	}
	if got := v2Verify(t, npc, npc, npc); !got.Gone() {
		t.Errorf("ProviderConfig team-a/default: %s %s %q", got.Verdict, got.Status, got.Evidence)
	}
	// The namesake ProviderConfig of the namespace is another cluster than the
	// ClusterProviderConfig of the same name.
	if got := v2Verify(t, cpc, npc, npc); got.Gone() {
		t.Errorf("ProviderConfig team-a/default vouched for by a control of ClusterProviderConfig default: %s %q", got.Verdict, got.Evidence)
	}
	// A usage that disagrees on the kind alone.
	if got := v2Verify(t, cpc, cpc, npc); got.Gone() {
		t.Errorf("a usage of the namespace's ProviderConfig under a spec of the ClusterProviderConfig: %s %q", got.Verdict, got.Evidence)
	}
}

// TestAControlOfAnotherClusterDoesNotHideTheOneOfTheRulesCluster (over-refusal): the same
// manifest applied to two clusters through two ProviderConfigs (one Object each, the
// usual fan-out of a Composition). The rule asks the cluster of ProviderConfig workload.
// The Object of other-cluster is drawn first: the provider finds the workload cluster's
// object (another UID than the one other-cluster's Object recorded), so it vouches for
// nothing, rightly. The Object of workload asks the very same request and runCheck skips
// it (requests[a.request]): it is never counted, workload is never vouched for, and every
// stuck Object of workload is Unknown.
func TestAControlOfAnotherClusterDoesNotHideTheOneOfTheRulesCluster(t *testing.T) {
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	live := recordedManifest{"v1", "ConfigMap", "team-a", "live"}
	other := recordedObject("a-other", live, live, true, "", map[string]any{"providerConfigRef": map[string]any{"name": "other-cluster"}})
	_ = unstructured.SetNestedField(other.Object, "uid-of-live-in-other-cluster", "status", "atProvider", "manifest", "metadata", "uid")
	own := recordedObject("b-workload", live, live, true, "", nil)
	gone := recordedManifest{"v1", "ConfigMap", "team-a", "gone"}
	stuck := recordedObject("stuck", gone, gone, false, "", nil)
	verified, _ := v1Objects.verifyAll(t, doc, []*unstructured.Unstructured{other, own, stuck}, []runtime.Object{recordedTarget("ConfigMap", "team-a", "live"),
		recordedUsage(other, "other-cluster", recordedProvider), recordedUsage(own, "workload", recordedProvider), recordedUsage(stuck, "workload", recordedProvider)}, nil)
	got := verified["stuck"]
	if !got.Gone() {
		t.Errorf("OVER-REFUSAL: the live Object of workload, whose recorded ConfigMap the rule finds, was skipped as a repeated request: %s %s %q", got.Verdict, got.Status, got.Evidence)
	}
}
