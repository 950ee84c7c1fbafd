package policy

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The sixth attack review of #38 (of 328de27): the first test failed before its fix (a
// report within the skew counts only with a reconcile that succeeded); the second is an
// over-refusal the tool keeps, on purpose.

// TestAUsageRemadeWithinTheSkewOfAReportIsNotUsed (wrongful removal, race): the Ready
// dating is the only guard against a usage remade for another ProviderConfig (a move
// that generation 1 does not show), and reportSkew lets a usage made up to 2 s after
// the last report count as older than it. A person with edit rights on Objects only can
// make both happen within 2 s: an edit of spec.readiness makes the provider observe the
// object in old-cluster and turn Ready (Available <-> Unavailable) at T; then, scripted,
// crossplane.io/paused: "true", `kubectl delete --cascade=orphan` (the GC strips the
// usage's owner reference and the providerconfig reconciler deletes it), providerConfigRef
// workload, and paused removed: the next connect makes the usage for workload at T+1..2 s.
// A Synced-only error there (connect failed, observe failed: forbidden in workload)
// leaves Ready, and status.atProvider, as they were in old-cluster (crossplane-runtime
// v2.4.0 reconciler.go lines 1159, 1193 mark only ReconcileError). The rule asks workload,
// vouched for by its control: 404, while old-cluster's ConfigMap remains.
func TestAUsageRemadeWithinTheSkewOfAReportIsNotUsed(t *testing.T) {
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	m := recordedManifest{"v1", "ConfigMap", "team-a", "in-old-cluster"}
	stuck := recordedObject("stuck", m, m, false, "", nil)
	_ = unstructured.SetNestedField(stuck.Object, "uid-in-old-cluster", "status", "atProvider", "manifest", "metadata", "uid")
	// The usage (recordedUsage) was made at now-3h; the report in old-cluster 2 s before.
	report := now.Add(-3*time.Hour - 2*time.Second).UTC().Format(time.RFC3339)
	_ = unstructured.SetNestedSlice(stuck.Object, []any{
		map[string]any{"type": "Ready", "status": "False", "reason": "Unavailable", "lastTransitionTime": report},
		map[string]any{"type": "Synced", "status": "False", "reason": "ReconcileError",
			"message": "observe failed: cannot get object: configmaps \"in-old-cluster\" is forbidden", "lastTransitionTime": now.Add(-3 * time.Hour).UTC().Format(time.RFC3339)},
	}, "status", "conditions")
	if got := recordedVerify(t, doc, stuck); got.Gone() {
		t.Errorf("WRONGFUL REMOVAL: a usage remade for workload 2 s after the report in old-cluster counts as older than it; the record is old-cluster's, whose ConfigMap remains: %s %s %q",
			got.Verdict, got.Status, got.Evidence)
	}
}

// TestADeletingWhoseSyncedChangedSinceIsUnknown (an over-refusal, chosen): Ready's
// lastTransitionTime is kept while the reason stays (SetConditions ignores an equal
// condition), but Synced is rewritten by every later reconcile. The provider found the
// ConfigMap and requested the delete (Deleting + ReconcileSuccess, an hour ago, after the
// usage), then lost its cluster's credentials in the seconds before it could see the
// delete done: every reconcile since marks only Synced (connect failed), and the
// Deleting can no longer be told from the one the reconciler marks after an observe that
// found nothing (TestADeletingAfterANotFoundObserveIsNotAReport, a wrongful removal).
// The review found it an over-refusal; the tool errs on the side of Unknown, and
// docs/presets.md says so.
func TestADeletingWhoseSyncedChangedSinceIsUnknown(t *testing.T) {
	doc := recordedPolicy(recordedDocumented, "{identity.manifestName}")
	m := recordedManifest{"v1", "ConfigMap", "team-a", "gone"}
	stuck := recordedObject("stuck", m, m, false, "", nil)
	_ = unstructured.SetNestedSlice(stuck.Object, []any{
		map[string]any{"type": "Ready", "status": "False", "reason": "Deleting", "lastTransitionTime": now.Add(-time.Hour).UTC().Format(time.RFC3339)},
		map[string]any{"type": "Synced", "status": "False", "reason": "ReconcileError",
			"message": "connect failed: cannot get credentials: secrets \"workload-kubeconfig\" not found", "lastTransitionTime": now.Add(-30 * time.Minute).UTC().Format(time.RFC3339)},
	}, "status", "conditions")
	if got := recordedVerify(t, doc, stuck); got.Gone() || !strings.Contains(got.Evidence, "does not say that the provider found the resource to delete it") {
		t.Errorf("a Deleting whose Synced changed since: %s %q", got.Verdict, got.Evidence)
	}
}
