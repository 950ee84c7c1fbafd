package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
)

// The mass-stuck shape (#36): an operator uninstalled before its custom resources, or a
// tenant deleted at once, leaves thousands of objects stuck, each held by the finalizer of
// an operator that is gone and that wrote it under its own field manager.
var (
	massStuck = flag.Int("bench.stuck", 0, "ConfigMaps stuck at once on top of the profile's, held by the finalizers of -bench.stuck-operators dead operators, one per namespace in turn")
	operators = flag.Int("bench.stuck-operators", 20, "the dead operators of -bench.stuck: each writes its own finalizer under its own field manager")
)

// seedMassStuck creates n ConfigMaps over namespaces bench-0000 onwards, each with the
// finalizer of one of ops operators (opNN.example.com/cleanup, written by field manager
// operator-NN, a few of its own labels and annotations as operators write), and deletes
// them. It returns how many it left stuck.
func seedMassStuck(ctx context.Context, cp *controlplane.ControlPlane, n, ops, namespaces int) (int, error) {
	if n == 0 {
		return 0, nil
	}
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return 0, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			op := i % max(ops, 1)
			ns := fmt.Sprintf("bench-%04d", i%max(namespaces, 1))
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: fmt.Sprintf("mass-%06d", i),
					Finalizers: []string{fmt.Sprintf("op%02d.example.com/cleanup", op)},
					Labels:     map[string]string{"app.kubernetes.io/managed-by": fmt.Sprintf("operator-%02d", op), "app.kubernetes.io/instance": fmt.Sprintf("tenant-%d", i%50)},
					Annotations: map[string]string{fmt.Sprintf("op%02d.example.com/last-applied-generation", op): fmt.Sprint(i % 7),
						// The instance the reconcile variant's provider says is deleted.
						"instance": fmt.Sprintf("slow-mass-%06d", i)},
				},
				Data: map[string]string{"config": fmt.Sprintf("tenant %d of operator %02d", i%50, op)},
			}
			manager := fmt.Sprintf("operator-%02d", op)
			if _, err := kube.CoreV1().ConfigMaps(ns).Create(gctx, cm, metav1.CreateOptions{FieldManager: manager}); err != nil {
				return err
			}
			return kube.CoreV1().ConfigMaps(ns).Delete(gctx, cm.Name, metav1.DeleteOptions{})
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	// One live object the reconcile variant's rule matches, for its provider's trust check.
	live := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "bench-0000", Name: "mass-control",
		Finalizers: []string{"op00.example.com/cleanup"}, Annotations: map[string]string{"instance": "live"}}}
	if _, err := kube.CoreV1().ConfigMaps(live.Namespace).Create(ctx, live, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	return n, nil
}

// massPolicy writes the policy of the reconcile variant: one rule for the finalizers of
// the mass-stuck operators, verified by cloud, a provider on loopback that says each
// object's instance is deleted, allowed as many removals as there are stuck objects.
func massPolicy(dir string, cloud *fakecloud.Cloud, n int) (string, error) {
	doc := fmt.Sprintf("apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nminAge: 0s\nmaxRemovals: %d\nrules:\n%s", n,
		cloud.Rule("mass", "op*.example.com/cleanup", "  rateLimit: {qps: 5000, burst: 5000}\n"))
	path := filepath.Join(dir, "mass-policy.yaml")
	return path, os.WriteFile(path, []byte(doc), 0o600)
}
