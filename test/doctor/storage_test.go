package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

var volumeSnapshotsGVR = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}

// volumeSnapshotCRD installs a minimal VolumeSnapshot CRD (snapshot.storage.k8s.io/v1,
// with its status subresource), once, and waits until it is served.
func volumeSnapshotCRD(t *testing.T, plane *controlplane.ControlPlane) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(plane.Config)
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "volumesnapshots.snapshot.storage.k8s.io",
			// As the real CRD does: *.k8s.io groups are protected.
			"annotations": map[string]any{"api-approved.kubernetes.io": "https://github.com/kubernetes-csi/external-snapshotter/pull/814"}},
		"spec": map[string]any{"group": "snapshot.storage.k8s.io", "scope": "Namespaced",
			"names": map[string]any{"kind": "VolumeSnapshot", "listKind": "VolumeSnapshotList", "plural": "volumesnapshots", "singular": "volumesnapshot"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true, "subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		}}}
	if _, err := dyn.Resource(crdsGVR).Create(t.Context(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(volumeSnapshotsGVR).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("VolumeSnapshots are never served: %v", err)
	}
}

// volumeSnapshot creates a VolumeSnapshot of claim in ns, with status if set.
func volumeSnapshot(t *testing.T, dyn dynamic.Interface, ns, name, claim string, status map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"volumeSnapshotClassName": "csi-snapclass", "source": map[string]any{"persistentVolumeClaimName": claim}}}}
	created, err := dyn.Resource(volumeSnapshotsGVR).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{FieldManager: "snapshot-controller"})
	if err != nil {
		t.Fatal(err)
	}
	if status == nil {
		return
	}
	created.Object["status"] = status
	if _, err := dyn.Resource(volumeSnapshotsGVR).Namespace(ns).UpdateStatus(t.Context(), created, metav1.UpdateOptions{FieldManager: "snapshot-controller"}); err != nil {
		t.Fatal(err)
	}
}

// TestStorageProtectionsNameTheirBlocker: a claim that snapshots are being taken from,
// and a volume still attached to a node, each held by its CSI sidecar's finalizer.
func TestStorageProtectionsNameTheirBlocker(t *testing.T) {
	cp.RequireControllerManager(t)
	ctx := t.Context()
	c := cp.Kube(t)
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	ns := cp.Namespace(t)
	volumeSnapshotCRD(t, cp)

	// The claim: one snapshot failing, one not started, one ready, and one of another
	// claim.
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Finalizers: []string{"snapshot.storage.kubernetes.io/pvc-as-source-protection"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(""),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *oneGi()}}},
	}
	fixture.Held(t, c.CoreV1().PersistentVolumeClaims(ns), claim)
	volumeSnapshot(t, dyn, ns, "nightly", "data", map[string]any{"readyToUse": false,
		"error": map[string]any{"message": "Failed to check and update snapshot content: rpc error: code = Internal desc = snapshot quota exceeded"}})
	volumeSnapshot(t, dyn, ns, "fresh", "data", nil)
	volumeSnapshot(t, dyn, ns, "weekly", "data", map[string]any{"readyToUse": true})
	volumeSnapshot(t, dyn, ns, "of-logs", "logs", map[string]any{"readyToUse": false})
	fixture.Delete(t, c.CoreV1().PersistentVolumeClaims(ns), "data")

	// The volume: attached to node-a by csi.example.com.
	pvName := ns + "-pv"
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Finalizers: []string{"external-attacher/csi-example-com"}},
		Spec: corev1.PersistentVolumeSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: *oneGi()},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "vol-0123"}}},
	}
	fixture.Held(t, c.CoreV1().PersistentVolumes(), pv)
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: ns + "-va"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: "node-a", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}}}
	created := fixture.Held(t, c.StorageV1().VolumeAttachments(), va)
	created.Status.Attached = true
	if _, err := c.StorageV1().VolumeAttachments().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.Delete(t, c.CoreV1().PersistentVolumes(), pvName)
	// The protection controllers let go of their own finalizers first.
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		v, err := c.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(pvc.Finalizers) == 1 && len(v.Finalizers) == 1, nil
	})
	if err != nil {
		t.Fatalf("the protection controllers kept their finalizers: %v", err)
	}

	rep := diagnose(t, cp, 0)
	claimObj := seed.Object{Resource: gvr("persistentvolumeclaims"), Namespace: ns, Name: "data"}
	cause := wantCause(t, rep, claimObj, finalizev1alpha1.ReasonSnapshotsUsingClaim,
		"2 VolumeSnapshots taken from the claim are not ready: nightly (not ready: Failed to check and update snapshot content: rpc error: code = Internal desc = snapshot quota exceeded), fresh (not ready, no status yet)",
		"; already ready: weekly", "kubectl describe volumesnapshot nightly -n "+ns)
	if strings.Contains(cause.Message, "of-logs") {
		t.Errorf("a snapshot of another claim: %s", cause.Message)
	}
	if len(cause.Blockers) != 2 || cause.Blockers[0].Target.Kind != "VolumeSnapshot" || cause.Blockers[0].Target.Name != "nightly" || cause.Blockers[0].Target.UID == "" {
		t.Errorf("claim blockers %+v", cause.Blockers)
	}
	wantRoot(t, rep, finalizev1alpha1.ReasonSnapshotsUsingClaim, finalizev1alpha1.Subject{Kind: "VolumeSnapshot", Namespace: ns, Name: "nightly"}, claimObj)

	pvObj := seed.Object{Resource: gvr("persistentvolumes"), Name: pvName}
	cause = wantCause(t, rep, pvObj, finalizev1alpha1.ReasonVolumeStillAttached,
		"1 VolumeAttachment still attaches the volume: "+ns+"-va (on node node-a, attached); external-attacher/csi-example-com keeps it until it is gone",
		"the external-attacher of csi.example.com", "--field-selector spec.nodeName=node-a")
	if len(cause.Blockers) != 1 || cause.Blockers[0].Target.Kind != "VolumeAttachment" || cause.Blockers[0].Target.Name != ns+"-va" {
		t.Errorf("volume blockers %+v", cause.Blockers)
	}
	wantRoot(t, rep, finalizev1alpha1.ReasonVolumeStillAttached, finalizev1alpha1.Subject{Kind: "VolumeAttachment", Name: ns + "-va"}, pvObj)
}
