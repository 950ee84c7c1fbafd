// Package ready tests a pod whose Ready node's kubelet does not finish its deletion, on
// a real node that is Ready: one with a pod network (controlplane.Options.PodNetwork),
// whose node lifecycle controller keeps it so while its kubelet reports.
package ready

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.WithPodNetwork(), &cp) }

// TestAReadyNodesKubeletThatCannotUnmountAVolume holds the pod's memory-backed emptyDir
// open from outside the pod, as a stray process on the node would: after stopping the
// container, the kubelet's unmount fails (device or resource busy) and it retries, and
// deletes the pod only once it succeeds. The node stays Ready all along.
func TestAReadyNodesKubeletThatCannotUnmountAVolume(t *testing.T) {
	ns := cp.Namespace(t)
	kube := cp.Kube(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "busy"},
		Spec: corev1.PodSpec{
			NodeName:                      controlplane.NodeName,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "pause", Image: controlplane.PauseImage, ImagePullPolicy: corev1.PullNever,
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}},
		},
	}
	created, err := kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Pods(ns).Delete(context.Background(), "busy", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "busy", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	if err != nil {
		t.Fatalf("pod busy does not run: %v", err)
	}
	// The kubelet mounts the tmpfs in the machine's mount namespace, under its root dir.
	dir := filepath.Join(cp.Node.Dir, "kubelet", "pods", string(created.UID), "volumes", "kubernetes.io~empty-dir", "scratch")
	hold, err := os.Open(dir)
	if err != nil {
		var found []string
		_ = filepath.WalkDir(filepath.Join(cp.Node.Dir, "kubelet", "pods"), func(path string, _ os.DirEntry, _ error) error {
			found = append(found, path)
			return nil
		})
		t.Fatalf("opening the pod's emptyDir on the node: %v; the kubelet's pods hold:\n%s", err, strings.Join(found, "\n"))
	}
	released := false
	release := func() {
		if !released {
			released = true
			_ = hold.Close()
		}
	}
	t.Cleanup(release)

	if err := kube.CoreV1().Pods(ns).Delete(t.Context(), "busy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted, err := kube.CoreV1().Pods(ns).Get(t.Context(), "busy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	due := deleted.DeletionTimestamp.Add(time.Second)
	var cause *finalizev1alpha1.Cause
	var last string
	err = wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Until(due)+30*time.Second, true, func(context.Context) (bool, error) {
		r := cli.Run(t, cp.AdminKubeconfig, "doctor", "-n", ns, "pod/busy", "--pod-grace-margin", "1s", "-o", "json")
		last = r.Stdout + r.Stderr
		var d finalizev1alpha1.Diagnosis
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "{") {
			// Not stuck yet ("is being deleted ... it goes shortly"), or the API
			// server was briefly busy: ask again.
			return false, nil
		}
		if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
			return false, fmt.Errorf("%w: %s", err, last)
		}
		for _, o := range d.Items {
			if o.Target.Name == "busy" && o.Cause != nil && o.WaitsFor != nil {
				// The kubelet reports the container stopped a moment after it is.
				cause = o.Cause
				return cause.Reason != finalizev1alpha1.ReasonKubeletNotFinishing || strings.Contains(cause.Message, "every container stopped"), nil
			}
		}
		return false, nil
	})
	if err != nil && cause == nil {
		t.Fatalf("pod busy is not diagnosed 30 s after its grace period and the margin: %v\n%s", err, last)
	}
	if time.Now().Before(due) {
		t.Fatalf("pod busy was diagnosed before its grace period and the margin were over")
	}
	if cause.Reason != finalizev1alpha1.ReasonKubeletNotFinishing {
		t.Fatalf("cause %s (%s), want %s", cause.Reason, cause.Message, finalizev1alpha1.ReasonKubeletNotFinishing)
	}
	for _, want := range []string{
		"node " + controlplane.NodeName + " is Ready and its kubelet reported",
		"every container stopped, and the kubelet has not released what the pod holds on the node",
		"journalctl -u kubelet | grep " + string(created.UID),
	} {
		if !strings.Contains(cause.Message+cause.NextStep, want) {
			t.Errorf("cause %q, next step %q: does not say %q", cause.Message, cause.NextStep, want)
		}
	}

	// A Ready node's pod is never force-deleted, even by a person who gives a reason:
	// its kubelet answers and may still run what the pod started.
	r := cli.Run(t, cp.AdminKubeconfig, "remove", "pod/busy", "-n", ns, "--yes", "--force-unverified", "--reason", "the node looks fine",
		"--pod-grace-margin", "1s")
	if r.Code != 1 || !strings.Contains(r.Stderr, "Nothing was removed.") ||
		!strings.Contains(r.Stderr, "node "+controlplane.NodeName+" is Ready") || strings.Contains(r.Stderr, "to remove it anyway") {
		t.Errorf("a force deletion on a Ready node: code %d, want 1 refusing it with no flag offered\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := kube.CoreV1().Pods(ns).Get(t.Context(), "busy", metav1.GetOptions{}); err != nil {
		t.Fatalf("pod busy after the refused force deletion: %v", err)
	}

	// What the cause said is what the kubelet does: once the volume is released, it
	// unmounts it and deletes the pod.
	release()
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, "busy", metav1.GetOptions{})
		return err != nil, nil
	})
	if err != nil {
		t.Errorf("pod busy is not gone a minute after its volume was released")
	}
}

// TestAStoppedKubeletsNodeIsNotReadyOnceMarked stops the kubelet of the Ready node, so it
// runs last: its pod's deletion then waits, and once the node lifecycle controller marks
// the node Unknown (after --node-monitor-grace-period, 50 s by default, without a
// heartbeat) the pod is NodeNotReady, with since when and the last heartbeat.
func TestAStoppedKubeletsNodeIsNotReadyOnceMarked(t *testing.T) {
	ns := cp.Namespace(t)
	kube := cp.Kube(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.PodSpec{
			NodeName:                      controlplane.NodeName,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "pause", Image: controlplane.PauseImage, ImagePullPolicy: corev1.PullNever}},
		},
	}
	if _, err := kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Pods(ns).Delete(context.Background(), "web", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	if err != nil {
		t.Fatalf("pod web does not run: %v", err)
	}
	cp.Node.StopKubelet()
	stopped := time.Now()
	if err := kube.CoreV1().Pods(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var cause *finalizev1alpha1.Cause
	var last string
	err = wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		r := cli.Run(t, cp.AdminKubeconfig, "doctor", "-n", ns, "pod/web", "--pod-grace-margin", "1s", "-o", "json")
		last = r.Stdout + r.Stderr
		var d finalizev1alpha1.Diagnosis
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "{") {
			// Not stuck yet ("is being deleted ... it goes shortly"), or the API
			// server was briefly busy: ask again.
			return false, nil
		}
		if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
			return false, fmt.Errorf("%w: %s", err, last)
		}
		for _, o := range d.Items {
			if o.Target.Name == "web" && o.Cause != nil && o.Cause.Reason == finalizev1alpha1.ReasonNodeNotReady {
				cause = o.Cause
				return strings.Contains(cause.Message, "Ready=Unknown"), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod web is not diagnosed NodeNotReady with Ready=Unknown 2 min after the kubelet stopped: %v\n%s", err, last)
	}
	t.Logf("NodeNotReady with Ready=Unknown %s after the kubelet stopped: %s", time.Since(stopped).Round(time.Second), cause.Message)
	for _, want := range []string{
		"node " + controlplane.NodeName + " is NotReady (Ready=Unknown since",
		"NodeStatusUnknown: Kubelet stopped posting node status",
		"its kubelet last reported",
		"kubectl taint nodes " + controlplane.NodeName + " node.kubernetes.io/out-of-service=nodeshutdown:NoExecute",
		"kubectl delete pod -n " + ns + " web --grace-period=0 --force",
	} {
		if !strings.Contains(cause.Message+cause.NextStep, want) {
			t.Errorf("cause %q, next step %q: does not say %q", cause.Message, cause.NextStep, want)
		}
	}
}
