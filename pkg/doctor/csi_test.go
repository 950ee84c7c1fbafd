package doctor

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// diagnoseStorage diagnoses res with these VolumeSnapshots and VolumeAttachments served.
func diagnoseStorage(t *testing.T, res *scan.Result, objs ...runtime.Object) *Report {
	t.Helper()
	d := &Doctor{Kube: kubefake.NewClientset(), Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		apiServicesResource.GroupVersionResource:                "APIServiceList",
		{Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList",
		volumeSnapshotsResource.GroupVersionResource:            "VolumeSnapshotList",
		volumeAttachmentsResource.GroupVersionResource:          "VolumeAttachmentList",
	}, objs...)}
	rep, err := d.Diagnose(context.Background(), res)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func snapshot(ns, name, source string, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"namespace": ns, "name": name, "uid": "uid-" + name},
		"spec":     map[string]any{"source": map[string]any{"persistentVolumeClaimName": source}}}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func attachment(name, pv, node string, status map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
		"metadata": map[string]any{"name": name, "uid": "uid-" + name},
		"spec":     map[string]any{"attacher": "csi.example.com", "nodeName": node, "source": map[string]any{"persistentVolumeName": pv}},
		"status":   status}}
}

func TestAClaimWaitsForTheSnapshotsTakenFromIt(t *testing.T) {
	claim := stuck(claimsResource, "a", "data", finalizerSnapshotSource)
	rep := diagnoseStorage(t, result(claim),
		snapshot("a", "nightly", "data", map[string]any{"readyToUse": false, "error": map[string]any{"message": "Failed to create snapshot: rpc error: code = Internal"}}),
		snapshot("a", "fresh", "data", nil),
		snapshot("a", "weekly", "data", map[string]any{"readyToUse": true}),
		snapshot("a", "elsewhere", "logs", map[string]any{"readyToUse": false}),
		snapshot("b", "other-namespace", "data", map[string]any{"readyToUse": false}))
	wantCause(t, rep, claim, finalizev1alpha1.ReasonSnapshotsUsingClaim,
		"2 VolumeSnapshots taken from the claim are not ready: nightly (not ready: Failed to create snapshot: rpc error: code = Internal), fresh (not ready, no status yet)",
		"; already ready: weekly", "kubectl describe volumesnapshot nightly -n a")
	c := rep.Cause(claim)
	if strings.Contains(c.Message, "elsewhere") || strings.Contains(c.Message, "other-namespace") {
		t.Errorf("only snapshots of this claim count: %s", c.Message)
	}
	if len(c.Blockers) != 2 || c.Blockers[0].Target.Kind != "VolumeSnapshot" || c.Blockers[0].Target.Name != "nightly" {
		t.Errorf("blockers %+v", c.Blockers)
	}
	wantRoot(t, rep, finalizev1alpha1.ReasonSnapshotsUsingClaim, finalizev1alpha1.Subject{Kind: "VolumeSnapshot", Namespace: "a", Name: "nightly"}, 1)

	// Every snapshot ready: the snapshot-controller should have let go.
	claim = stuck(claimsResource, "a", "data", finalizerSnapshotSource)
	rep = diagnoseStorage(t, result(claim), snapshot("a", "weekly", "data", map[string]any{"readyToUse": true}))
	c = rep.Cause(claim)
	if c.Reason == finalizev1alpha1.ReasonSnapshotsUsingClaim || !strings.Contains(c.Message, "every VolumeSnapshot taken from the claim is ready (weekly)") {
		t.Errorf("all ready: %s: %s", c.Reason, c.Message)
	}
}

func TestAVolumeWaitsForItsAttachments(t *testing.T) {
	pv := stuck(coreResource("persistentvolumes", "PersistentVolume", false), "", "pv-1", "external-attacher/csi-example-com")
	rep := diagnoseStorage(t, result(pv),
		attachment("csi-1", "pv-1", "node-a", map[string]any{"attached": true}),
		attachment("csi-2", "pv-1", "node-b", map[string]any{"attached": true, "detachError": map[string]any{"message": "rpc error: code = DeadlineExceeded"}}),
		attachment("csi-3", "pv-2", "node-a", map[string]any{"attached": true}))
	wantCause(t, rep, pv, finalizev1alpha1.ReasonVolumeStillAttached,
		"2 VolumeAttachments still attach the volume: csi-1 (on node node-a, attached), csi-2 (on node node-b, attached; detach failed: rpc error: code = DeadlineExceeded)",
		"kubectl get pods -A -o wide --field-selector spec.nodeName=node-a")
	c := rep.Cause(pv)
	if len(c.Blockers) != 2 || c.Blockers[1].Target.Kind != "VolumeAttachment" || c.Blockers[1].Target.Name != "csi-2" {
		t.Errorf("blockers %+v", c.Blockers)
	}
	wantRoot(t, rep, finalizev1alpha1.ReasonVolumeStillAttached, finalizev1alpha1.Subject{Kind: "VolumeAttachment", Name: "csi-1"}, 1)

	// An attachment stuck itself is waited for, and explains the volume with its own cause.
	pv = stuck(coreResource("persistentvolumes", "PersistentVolume", false), "", "pv-1", "external-attacher/csi-example-com")
	va := stuck(volumeAttachmentsResource, "", "csi-1", "external-attacher/csi-example-com")
	rep = diagnoseStorage(t, result(pv, va), attachment("csi-1", "pv-1", "node-a", map[string]any{"attached": true}))
	wantCause(t, rep, pv, finalizev1alpha1.ReasonVolumeStillAttached, "csi-1 (on node node-a, attached)")
	if d := rep.Diagnosis(pv); len(d.Items) != 2 {
		t.Errorf("the volume's tree holds its attachment: %+v", d.Items)
	}
}
