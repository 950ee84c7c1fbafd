// Package remove tests guarded removal and `kubectl finalize remove` against a real
// control plane.
package remove

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.APIServer(), &cp) }

func remover(t *testing.T) *write.Remover {
	t.Helper()
	return &write.Remover{Metadata: metadata.NewForConfigOrDie(cp.Config), Kube: kubernetes.NewForConfigOrDie(cp.Config)}
}

var namespaces = kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace"}
