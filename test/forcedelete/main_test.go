// Package forcedelete tests the force deletion of pods whose deletion waits for the
// kubelet of a node whose machine is gone (remove and reconcile with waitsForNode rules)
// against a real control plane. Its kube-controller-manager runs the pod garbage
// collector (podgc) besides the default controllers, as a cluster does: podgc
// force-deletes pods bound to a node that does not exist after a quarantine of 40 s, so
// every scenario here that acts on such a pod acts within that window and checks that it,
// not podgc, deleted the pod. The node lifecycle controller does not run: a Node's Ready
// condition stays what the test wrote.
//
// Most scenarios wait: every force deletion watches its node's Lease for 15 s first
// (plan.LeaseWatchFor a node with no Lease). Those that create no Ready node and whose
// rules ask no provider run in parallel (t.Parallel, after the others): a provider's
// controls are drawn from every Ready node in the cluster, so a scenario that makes a
// Ready node, or asks a provider about its controls, runs alone.
package forcedelete

import (
	"testing"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	controlplane.Main(m, controlplane.WithControllers("pod-garbage-collector-controller"), &cp)
}
