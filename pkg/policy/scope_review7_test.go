package policy

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The seventh attack review of #38 (of 340df57): both tests failed before their fixes
// (no allowance between the two clocks; the warning matches the preset's finalizers
// against the rule's globs).

// TestASuccessfulReconcileThatNeverFoundTheObjectDoesNotConfirmAReport (wrongful removal,
// race of reportSkew): 340df57 takes Synced ReconcileSuccess as proof that the report
// within the skew is after the usage. crossplane-runtime v2.4.0 reconciler.go marks
// ReconcileSuccess without any observe that found the resource: under managementPolicies
// [Observe, Delete] (a supported set, policies.go line 96; it holds Delete, so the preset
// does not call it retained), an observe in the new cluster that finds nothing skips the
// create (ShouldCreate false), is not up to date, and ends at !ShouldUpdate ->
// MarkConditions(ReconcileSuccess) (line ~1525), leaving Ready and status.atProvider as
// they were in old-cluster. The sixth review's sequence with this policy in place of a
// Synced-only error passes the fix.
func TestASuccessfulReconcileThatNeverFoundTheObjectDoesNotConfirmAReport(t *testing.T) {
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	m := recordedManifest{"v1", "ConfigMap", "team-a", "in-old-cluster"}
	stuck := recordedObject("stuck", m, m, false, "", map[string]any{"managementPolicies": []any{"Observe", "Delete"}})
	_ = unstructured.SetNestedField(stuck.Object, "uid-in-old-cluster", "status", "atProvider", "manifest", "metadata", "uid")
	// The usage (recordedUsage) was made at now-3h, for workload; the report, in old-cluster, 2 s before.
	report := now.Add(-3*time.Hour - 2*time.Second).UTC().Format(time.RFC3339)
	_ = unstructured.SetNestedSlice(stuck.Object, []any{
		map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": report},
		map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": report},
	}, "status", "conditions")
	if got := recordedVerify(t, doc, stuck); got.Gone() {
		t.Errorf("WRONGFUL REMOVAL: ReconcileSuccess of a reconcile in workload that never found the object confirms a report from old-cluster: %s %s %q",
			got.Verdict, got.Status, got.Evidence)
	}
}

// TestAGlobRuleOfAPresetsFinalizersIsWarnedOf (a missed warning): compile.go asks
// p.Matches(pattern) of each of the rule's finalizer patterns, matching the preset's
// globs against the pattern's text; a rule glob wider than the preset's literal name
// (finalizer.managedresource.*, *.crossplane.io, *) removes the preset's finalizer
// without the warning.
func TestAGlobRuleOfAPresetsFinalizersIsWarnedOf(t *testing.T) {
	for _, glob := range []string{"finalizer.managedresource.*", "\"*.crossplane.io\"", "\"*\""} {
		doc := strings.Replace(recordedPolicy("{.spec.forProvider.manifest.metadata.namespace}", "{.metadata.name}"), "  preset: crossplane-managed\n", "  finalizers: ["+glob+"]\n", 1)
		_, warnings := compile(t, doc)
		if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "without preset: crossplane-managed") }) {
			t.Errorf("finalizers [%s]: no warning: %q", glob, warnings)
		}
	}
}
