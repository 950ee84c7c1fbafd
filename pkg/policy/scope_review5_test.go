package policy

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The fifth attack review of #38 (of aca9336): the first, third and fourth tests failed
// before their fixes (a Deleting counts only with the Synced of a found resource; the
// count named; a report dated up to reportSkew before its usage).

// TestADeletingAfterANotFoundObserveIsNotAReport (wrongful removal): crossplaneReported
// takes a Ready condition whose reason is Deleting as a report of a found resource ("from
// the managed reconciler's delete of a resource that exists"). crossplane-runtime v2.4.0
// pkg/reconciler/managed/reconciler.go also marks Deleting when the observe did NOT find
// the resource: with !observation.ResourceExists, a failed UnpublishConnection (line 1293)
// or RemoveFinalizer (line 1309) marks xpv2.Deleting() + ReconcileError. provider-kubernetes
// v1.3.1 RemoveFinalizer first removes its finalizer from every spec.references object,
// and a Get that fails with anything but NotFound (a CRD removed: no kind match;
// forbidden) fails it on every pass: the stuck Object this tool is for. Observe returns
// ResourceExists: false before setAtProvider, so status.atProvider keeps the object
// observed through the ProviderConfig before.
//
// The Object was applied through old-cluster (its ConfigMap "in-old-cluster" is there,
// recorded with its UID, reported Available a month ago). Its usage was deleted (the
// providerconfig reconciler deletes one without a controller reference; GC in an orphan
// deletion) and its providerConfigRef moved to workload, the rule's cluster. It is
// deleted; the next connect remakes the usage for workload (generation 1, 3h ago), the
// observe in workload finds nothing, RemoveFinalizer fails and Ready turns Deleting (1h
// ago, after the usage). The rule asks workload: 404, vouched for by workload's control.
func TestADeletingAfterANotFoundObserveIsNotAReport(t *testing.T) {
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	m := recordedManifest{"v1", "ConfigMap", "team-a", "in-old-cluster"}
	stuck := recordedObject("stuck", m, m, false, "", map[string]any{
		"references": []any{map[string]any{"dependsOn": map[string]any{"apiVersion": "example.org/v1", "kind": "Removed", "name": "x"}}}})
	_ = unstructured.SetNestedField(stuck.Object, "uid-in-old-cluster", "status", "atProvider", "manifest", "metadata", "uid")
	_ = unstructured.SetNestedSlice(stuck.Object, []any{
		map[string]any{"type": "Ready", "status": "False", "reason": "Deleting", "lastTransitionTime": now.Add(-time.Hour).UTC().Format(time.RFC3339)},
		map[string]any{"type": "Synced", "status": "False", "reason": "ReconcileError", "message": "cannot remove finalizer: cannot get referenced resource: no matches for kind \"Removed\"",
			"lastTransitionTime": now.Add(-time.Hour).UTC().Format(time.RFC3339)},
	}, "status", "conditions")
	if got := recordedVerify(t, doc, stuck); got.Gone() {
		t.Errorf("WRONGFUL REMOVAL: Ready Deleting, marked after an observe through the new ProviderConfig that found nothing (a failed RemoveFinalizer), dates a usage remade for it as older than a report of the object found; the record is the old cluster's, whose ConfigMap remains: %s %s %q",
			got.Verdict, got.Status, got.Evidence)
	}
}

// TestControlsCountZeroFailsEveryPassWithAScopedGone (loud, misleading): controls.count 0
// collects no candidate (Controls.Observe), so vouchFor can never draw one, and under
// requireLive (the default) every scoped Gone is recorded in scopeHeldBack: the rule is
// CannotVerify, pass after pass, saying "no live control ... showed", while live Objects
// of the ProviderConfig exist and the cause is the count.
func TestControlsCountZeroFailsEveryPassWithAScopedGone(t *testing.T) {
	doc := strings.Replace(recordedPolicy(recordedDocumented, "{identity.manifestName}"), "  minAge: 1m\n", "  minAge: 1m\n  controls: {count: 0}\n", 1)
	objs := []*unstructured.Unstructured{
		ofProviderConfig("live", "workload", recordedManifest{"v1", "ConfigMap", "team-a", "live"}, true),
		ofProviderConfig("stuck", "workload", recordedManifest{"v1", "ConfigMap", "team-a", "gone"}, false),
	}
	got, st := scopePass(t, doc, objs, recordedTarget("ConfigMap", "team-a", "live"))
	t.Logf("stuck: %s %s %q", got["stuck"].Verdict, got["stuck"].Status, got["stuck"].Evidence)
	for _, s := range st {
		if s.CannotVerify != "" && !strings.Contains(s.CannotVerify, "count") {
			t.Errorf("rule %s fails the pass without naming controls.count 0, its cause, while a live Object of workload exists: %q", s.Rule, s.CannotVerify)
		}
	}
}

// TestAReportInTheSecondOfTheUsageIsUsed (no over-refusal): the ordinary Object's first
// Available comes at the observe after its create, often in the second its usage was
// made; creationTimestamp and lastTransitionTime are both whole seconds.
func TestAReportInTheSecondOfTheUsageIsUsed(t *testing.T) {
	m := recordedManifest{"v1", "ConfigMap", "team-a", "gone"}
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	for _, at := range []string{
		now.Add(-3 * time.Hour).UTC().Format(time.RFC3339),                           // the usage's second
		now.Add(-3*time.Hour + 400*time.Millisecond).UTC().Format(time.RFC3339Nano),  // a fraction into it
		now.Add(-3 * time.Hour).In(time.FixedZone("x", 2*3600)).Format(time.RFC3339), // another zone
	} {
		o := recordedObject("stuck", m, m, false, "", nil)
		_ = unstructured.SetNestedSlice(o.Object, []any{map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": at}}, "status", "conditions")
		if got := recordedVerify(t, doc, o); !got.Gone() {
			t.Errorf("OVER-REFUSAL at %s: %s %q", at, got.Verdict, got.Evidence)
		}
	}
}

// TestAProviderClockBehindTheAPIServersIsUnknown (an over-refusal, chosen): the usage's
// creationTimestamp is the API server's clock, the Ready condition's lastTransitionTime
// the provider pod's (metav1.Now() in xpv2.Available()). The ordinary Object's first
// Available follows its usage by well under a second (Connect, Create, requeue,
// Observe); a provider clock behind, across a second boundary, dates the report before
// the usage. The fifth review found it an over-refusal, and 328de27 allowed 2 s; the
// sixth and seventh showed a usage made again within those 2 s passing, with a Synced
// failed or one that succeeded without finding anything ([Observe, Delete]). No
// allowance is kept: such an Object is Unknown until its Ready next changes.
func TestAProviderClockBehindTheAPIServersIsUnknown(t *testing.T) {
	m := recordedManifest{"v1", "ConfigMap", "team-a", "gone"}
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	o := recordedObject("stuck", m, m, false, "", nil)
	_ = unstructured.SetNestedSlice(o.Object, []any{
		map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": now.Add(-3*time.Hour - time.Second).UTC().Format(time.RFC3339)},
		map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
	}, "status", "conditions")
	if got := recordedVerify(t, doc, o); got.Gone() || !strings.Contains(got.Evidence, "after its operator last reported on the resource") {
		t.Errorf("a report one second before the usage: %s %q", got.Verdict, got.Evidence)
	}
}
