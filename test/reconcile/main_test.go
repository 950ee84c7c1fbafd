// Package reconcile tests `kubectl finalize reconcile` and `kubectl finalize rbac`
// against a real control plane: passes, the breaker, dry runs, the generated RBAC as a
// ServiceAccount, SIGTERM, leader election and metrics.
package reconcile

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

var (
	cp *controlplane.ControlPlane
	// binary is kubectl-finalize, built for the tests that need a process of its own.
	binary string
	// auditLog is the API server's audit log of ServiceAccounts' requests.
	auditLog controlplane.AuditLog
)

func TestMain(m *testing.M) {
	controlplane.Main(m, controlplane.APIServer(), &cp, cli.BuildInto(&binary), controlplane.AuditServiceAccounts(&auditLog))
}

// object creates a configmap with finalizer and an "instance" annotation, deleted when
// stuck is set.
func object(t *testing.T, ns, name, finalizer, instance string, stuck bool) *corev1.ConfigMap {
	t.Helper()
	return fixture.Create(t, cp.Kube(t).CoreV1().ConfigMaps(ns), fixture.ConfigMap(name, map[string]string{"instance": instance}, finalizer), stuck)
}

// world is where most tests of a pass start: a namespace and a finalizer of the test's
// own, a cloud, and a live control whose instance exists, so that the rules' provider
// is checked against something that exists.
func world(t *testing.T) (ns, fin string, c *fakecloud.Cloud) {
	t.Helper()
	ns, fin, c = cp.Namespace(t), controlplane.FinalizerOf(t), fakecloud.New(t)
	object(t, ns, "control", fin, "live", false)
	return ns, fin, c
}

func resourceVersion(t *testing.T, ns, name string) string {
	t.Helper()
	cm, err := cp.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return "gone"
	}
	return cm.ResourceVersion
}

// pass runs `reconcile --once -o json` and decodes its report.
func pass(t *testing.T, kubeconfig, policy string, extra ...string) (*finalizev1alpha1.ReconcileReport, cli.Result) {
	t.Helper()
	r := cli.Run(t, kubeconfig, append([]string{"reconcile", "--once", "--policy", policy, "-o", "json"}, extra...)...)
	return cli.Report(t, r), r
}

// action finds the report's action about an object.
func action(t *testing.T, rep *finalizev1alpha1.ReconcileReport, name string) finalizev1alpha1.Removal {
	t.Helper()
	for _, a := range rep.Actions {
		if a.Target.Name == name {
			return a
		}
	}
	t.Fatalf("no action about %s in %+v", name, rep.Actions)
	return finalizev1alpha1.Removal{}
}

// process is a kubectl-finalize running on its own.
type process struct{ *cli.Process }

func start(t *testing.T, kubeconfig string, args ...string) *process {
	t.Helper()
	return &process{cli.Cmd{Path: binary, Args: append([]string{"--kubeconfig", kubeconfig}, args...)}.Start(t)}
}
