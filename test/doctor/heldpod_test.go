package doctor

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/doctor"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// TestAClaimHeldByAPodThatIsHeldItself: a claim is deleted while a pod mounts it, and the
// pod is being deleted too, held by a backup agent's finalizer. Deleting the pod again
// does nothing: the way out is the pod's finalizer and its remover. The claim's cause
// names the pod as a stuck blocker and sends to its cause, and its root cause is the
// pod's (the agent), not "delete the pod".
func TestAClaimHeldByAPodThatIsHeldItself(t *testing.T) {
	const hold = "backup.agent.example/snapshot"
	ctx, kube := t.Context(), cp.Kube(t)
	ns := cp.Namespace(t)
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(""),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No kubelet: a node name is enough for the pod to count as scheduled.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-0", Finalizers: []string{hold}},
		Spec: corev1.PodSpec{NodeName: "node-a",
			Containers: []corev1.Container{{Name: "db", Image: "postgres:17", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{FieldManager: "backup-agent"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		kc := cp.Kube(t)
		_, _ = kc.CoreV1().Pods(ns).Patch(context.Background(), "db-0", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = kc.CoreV1().Pods(ns).Delete(context.Background(), "db-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		_, _ = kc.CoreV1().PersistentVolumeClaims(ns).Patch(context.Background(), "data", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	for _, del := range []func() error{
		// Past its grace period at once: the scan lists it for its finalizer.
		func() error {
			return kube.CoreV1().Pods(ns).Delete(ctx, "db-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		},
		func() error {
			return kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{})
		},
	} {
		if err := del(); err != nil {
			t.Fatal(err)
		}
	}

	rep := diagnose(t, cp, 0)
	claimObj := seed.Object{Resource: gvr("persistentvolumeclaims"), Namespace: ns, Name: "data"}
	podObj := seed.Object{Resource: gvr("pods"), Namespace: ns, Name: "db-0"}
	c := wantCause(t, rep, claimObj, finalizev1alpha1.ReasonPodsUsingClaim,
		"db-0 (Pending on node node-a; already being deleted, and stuck itself)",
		"pod db-0 -n "+ns+" is already being deleted: see its cause")
	if strings.Contains(c.NextStep, "delete pod") {
		t.Errorf("the next step deletes a pod already being deleted: %s", c.NextStep)
	}
	if len(c.Blockers) != 1 || !c.Blockers[0].Stuck || c.Blockers[0].Target.Name != "db-0" {
		t.Errorf("blockers %+v, want the pod, stuck", c.Blockers)
	}
	// The pod's own cause: nobody is known to remove the agent's finalizer (its writer,
	// backup-agent, is its controller by managedFields, and it does not run). The claim
	// is explained by the same root.
	podCause := rep.Cause(find(t, rep, podObj))
	for _, r := range rep.Roots {
		if r.Reason == finalizev1alpha1.ReasonPodsUsingClaim && r.Subject.Namespace == ns && r.Subject.Name == "db-0" {
			t.Errorf("a root cause tells to delete a pod already being deleted: %+v", r)
		}
	}
	wantRoot(t, rep, podCause.Reason, rootSubjectOf(t, rep, podObj), podObj, claimObj)
}

// rootSubjectOf is the subject of the root cause that explains o.
func rootSubjectOf(t *testing.T, rep *doctor.Report, o seed.Object) finalizev1alpha1.Subject {
	t.Helper()
	uid := find(t, rep, o).Meta.UID
	for _, r := range rep.Roots {
		for _, ref := range r.Objects {
			if ref.UID == uid {
				return r.Subject
			}
		}
	}
	t.Fatalf("no root cause explains %s", o)
	return finalizev1alpha1.Subject{}
}
