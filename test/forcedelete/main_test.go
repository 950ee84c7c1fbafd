// Package forcedelete tests the force deletion of pods whose deletion waits for the
// kubelet of a node whose machine is gone (remove and reconcile with waitsForNode rules)
// against a real control plane. Its kube-controller-manager runs the pod garbage
// collector (podgc) besides the default controllers, as a cluster does: podgc
// force-deletes pods bound to a node that does not exist after a quarantine of 40 s, so
// every scenario here that acts on such a pod acts within that window and checks that it,
// not podgc, deleted the pod. The node lifecycle controller does not run: a Node's Ready
// condition stays what the test wrote.
package forcedelete

import (
	"slices"
	"testing"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	controllers := append(slices.Clone(controlplane.DefaultControllers), "pod-garbage-collector-controller")
	controlplane.Main(m, controlplane.Options{Controllers: controllers}, &cp)
}
