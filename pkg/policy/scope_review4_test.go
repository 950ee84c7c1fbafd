package policy

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// The fourth attack review of #38 (of fa256a7 and 98c4bbe): each test failed before its
// fix (a usage older than the last report, vouching drawn per scope, a Gone held back
// for want of a control of its scope failing the pass).

// scopePass runs one pass over v1 Objects (observed in the order given, controls and
// stuck alike) on one fake cluster that is also the rule's cluster, and returns the
// verification of each stuck Object, and the rule statuses.
func scopePass(t *testing.T, doc string, objs []*unstructured.Unstructured, cms ...*unstructured.Unstructured) (map[string]plan.Verification, []finalizev1alpha1.RuleStatus) {
	t.Helper()
	return scopePassWith(t, doc, nil, objs, cms...)
}

// scopePassWith is scopePass whose usages usage changes first.
func scopePassWith(t *testing.T, doc string, usage func(o, u *unstructured.Unstructured), objs []*unstructured.Unstructured, cms ...*unstructured.Unstructured) (map[string]plan.Verification, []finalizev1alpha1.RuleStatus) {
	t.Helper()
	var others []runtime.Object
	for _, o := range objs {
		u := recordedUsage(o, usedProviderConfig(o), recordedProvider)
		if usage != nil {
			usage(o, u)
		}
		others = append(others, u)
	}
	for _, c := range cms {
		others = append(others, c)
	}
	return v1Objects.verifyAll(t, doc, objs, others, nil)
}

// ofProviderConfig is recordedObject through ProviderConfig pc.
func ofProviderConfig(name, pc string, m recordedManifest, live bool) *unstructured.Unstructured {
	return recordedObject(name, m, m, live, "", map[string]any{"providerConfigRef": map[string]any{"name": pc}})
}

// TestAFanOutFillsTheControlsBeforeTheRulesOwn (over-refusal, a regression of 98c4bbe):
// the usual fan-out of a Composition applies one manifest ("shared") through several
// ProviderConfigs. The rule asks the cluster of ProviderConfig workload. Three Objects of
// other clusters are drawn first: each finds the workload cluster's "shared" (another UID
// than it recorded) and vouches for nothing, rightly. Before 98c4bbe the second and third
// asked the same request and were skipped, so the workload control (its own manifest,
// "live-w") was drawn and vouched for workload. Since 98c4bbe the key is request + scope +
// instance: the three fill controls.count (3, the default), the workload control is never
// drawn, and every stuck Object of workload is Unknown, pass after pass, on a green pass.
func TestAFanOutFillsTheControlsBeforeTheRulesOwn(t *testing.T) {
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	shared := recordedManifest{"v1", "ConfigMap", "team-a", "shared"}
	var objs []*unstructured.Unstructured
	for _, pc := range []string{"other-1", "other-2", "other-3"} {
		o := ofProviderConfig("a-"+pc, pc, shared, true)
		_ = unstructured.SetNestedField(o.Object, "uid-of-shared-in-"+pc, "status", "atProvider", "manifest", "metadata", "uid")
		objs = append(objs, o)
	}
	objs = append(objs,
		ofProviderConfig("b-workload", "workload", recordedManifest{"v1", "ConfigMap", "team-a", "live-w"}, true),
		ofProviderConfig("stuck", "workload", recordedManifest{"v1", "ConfigMap", "team-a", "gone"}, false))
	got, st := scopePass(t, doc, objs, recordedTarget("ConfigMap", "team-a", "shared"), recordedTarget("ConfigMap", "team-a", "live-w"))
	if v := got["stuck"]; !v.Gone() {
		t.Errorf("OVER-REFUSAL: the live Object of workload, whose recorded ConfigMap the rule finds, was never drawn: three controls of other clusters asking one request filled controls.count: %s %s %q",
			v.Verdict, v.Status, v.Evidence)
		for _, s := range st {
			t.Logf("rule %s: cannotVerify %q, %d controls", s.Rule, s.CannotVerify, len(s.Controls))
		}
	}
}

// TestAGoneHeldBackForWantOfAControlStillFailsThePass (promise 2, a regression of
// 98c4bbe): the rule requires a live control (the default) and no live Object of the type
// carries the finalizer. Before 98c4bbe the Gone of "stuck-gone" stayed a Gone held back
// (Distrusted), which made the rule CannotVerify and the pass exit 1. notVouchedFor now
// turns it into Unknown before Verify records it as held back, so only the rule "every
// stuck object is Unknown" can fail the pass; one other stuck Object the provider answers
// Present for ("stuck-present", whose ConfigMap remains) keeps the pass green while the
// rule can verify nothing.
func TestAGoneHeldBackForWantOfAControlStillFailsThePass(t *testing.T) {
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	objs := []*unstructured.Unstructured{
		ofProviderConfig("stuck-gone", "workload", recordedManifest{"v1", "ConfigMap", "team-a", "gone"}, false),
		ofProviderConfig("stuck-present", "workload", recordedManifest{"v1", "ConfigMap", "team-a", "remains"}, false),
	}
	got, st := scopePass(t, doc, objs, recordedTarget("ConfigMap", "team-a", "remains"))
	if v := got["stuck-gone"]; v.Gone() {
		t.Fatalf("stuck-gone: %s %q", v.Verdict, v.Evidence)
	}
	if len(st) != 1 || st[0].CannotVerify == "" {
		for _, s := range st {
			t.Logf("rule %s: distrust %q", s.Rule, s.Distrust)
		}
		t.Errorf("SILENT PASS: no live control of objects.kubernetes.crossplane.io, the Gone of stuck-gone held back for it (%q), and the rule's status says nothing it cannot verify: %+v",
			got["stuck-gone"].Evidence, st)
	}
	if v := got["stuck-gone"]; !strings.Contains(v.Evidence, "no live") {
		t.Logf("stuck-gone: %s %s %q", v.Verdict, v.Status, v.Evidence)
	}
}

// TestAUsageTheProviderMadeAgainAfterAMoveDoesNotVouch (wrongful removal; 98c4bbe lists a
// usage "deleted by hand" as not held, but no hand is needed): crossplane-runtime v2.4.0
// pkg/reconciler/providerconfig/reconciler.go deletes every ProviderConfigUsage that has
// no controller reference ("it's either stale, or will be recreated next time the
// relevant managed resource connects"), and GC strips or deletes a usage in an orphan or
// foreground deletion of its Object. A metadata-only edit of the usage (its
// ownerReferences, which the API server does not count in generation) or a restore that
// drops them makes the provider delete it; a providerConfigRef changed before the next
// connect is then tracked by a Create, at generation 1. With managementPolicies [Observe,
// Delete] (or a failed create in the new cluster) status.atProvider.manifest.metadata.uid
// is still the object observed through the old ProviderConfig, exactly as in
// TestAControlMovedToAnotherProviderConfigDoesNotVouchForIt.
//
// Here the live control was applied through workload (the rule's cluster, where its
// ConfigMap "live" is), then moved to other-cluster with its usage remade: generation 1,
// created a month after the Object. It vouches for other-cluster, and a stuck Object of
// other-cluster whose ConfigMap exists only there is Gone. What tells the remade usage
// apart is its creationTimestamp: the provider makes a usage at the Object's first
// connect, seconds after the Object is created.
func TestAUsageTheProviderMadeAgainAfterAMoveDoesNotVouch(t *testing.T) {
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	control := ofProviderConfig("control", "other-cluster", recordedManifest{"v1", "ConfigMap", "team-a", "live"}, true)
	_ = unstructured.SetNestedStringSlice(control.Object, []string{"Observe", "Delete"}, "spec", "managementPolicies")
	stuck := ofProviderConfig("stuck", "other-cluster", recordedManifest{"v1", "ConfigMap", "team-a", "in-other-cluster-only"}, false)
	created := metav1.NewTime(now.Add(-30 * 24 * time.Hour))
	for _, o := range []*unstructured.Unstructured{control, stuck} {
		o.SetCreationTimestamp(created)
		// The provider reported each ready a minute after it was made, and never again:
		// with [Observe, Delete], or a failed create, in the new cluster, nothing changes
		// the Ready condition.
		_ = unstructured.SetNestedSlice(o.Object, []any{map[string]any{"type": "Ready", "status": "True", "reason": "Available",
			"lastTransitionTime": created.Add(time.Minute).UTC().Format(time.RFC3339)}}, "status", "conditions")
	}
	got, _ := scopePassWith(t, doc, func(o, u *unstructured.Unstructured) {
		u.SetCreationTimestamp(metav1.NewTime(now.Add(-2 * time.Hour)))
	}, []*unstructured.Unstructured{control, stuck}, recordedTarget("ConfigMap", "team-a", "live"))
	if v := got["stuck"]; v.Gone() {
		t.Errorf("WRONGFUL REMOVAL: a control whose usage the provider made again after its move (generation 1, a month after the Object) vouches for other-cluster with the UID it recorded in the rule's cluster: %s %s %q",
			v.Verdict, v.Status, v.Evidence)
	}
}
