// Package restricted runs docs/deploy/cronjob as shipped under the Pod Security it ships
// with, enforce restricted, on a node with a real pod network (controlplane.Options
// PodNetwork): the pods need no host network, so the namespace keeps its label, and the
// overlay changes only the image, the policy ConfigMap and the RBAC that policy needs.
// The pod reaches the API server at the kubernetes Service's ClusterIP and the test's
// provider at its node's gateway, both inside the network namespace the control plane
// made; TestThePodNetworkIsContained shows that nothing of it is in the machine's own.
package restricted

import (
	"testing"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var (
	cp *controlplane.ControlPlane
	// before is the machine's own network as it was before the control plane started.
	before hostNetwork
)

// The CronJob needs cronjob-controller and job-controller, its pod the ServiceAccount
// controllers: all are NodeControllers, which the node starts.
func TestMain(m *testing.M) {
	controlplane.Main(m, controlplane.WithPodNetwork(), &cp, func(string, *controlplane.Options) error {
		var err error
		before, err = readHostNetwork()
		return err
	})
}
