package bench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

// overdueNode is the node the overdue pods are bound to; no Node of that name exists,
// and the benchmark's control plane runs no pod garbage collector to delete them.
const overdueNode = "bench-gone-node"

// podMargin is the --pod-grace-margin of scan and doctor: with overdue pods, 1 s, so
// that they are listed without waiting the default 2 minutes.
func podMargin() []string {
	if *overdue == 0 {
		return nil
	}
	return []string{"--pod-grace-margin", "1s"}
}

// overduePods creates n pods bound to a node that does not exist, one per namespace in
// turn (bench-0000, bench-0001, ...), deletes them with a grace period of 1 s, and
// returns once the grace period and the margin of every one are over.
func overduePods(ctx context.Context, cp *controlplane.ControlPlane, n, namespaces int) error {
	if n == 0 {
		return nil
	}
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	var last time.Time
	for i := range n {
		ns := fmt.Sprintf("bench-%04d", i%max(namespaces, 1))
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("overdue-%05d", i)},
			Spec: corev1.PodSpec{NodeName: overdueNode, TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}}},
		}
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		got, err := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("overdue pod %s/%s is gone at once: %w", ns, pod.Name, err)
		}
		if got.DeletionTimestamp.After(last) {
			last = got.DeletionTimestamp.Time
		}
	}
	select {
	case <-time.After(time.Until(last.Add(2 * time.Second))):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
