package controlplane

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Setup prepares a test package before its control plane starts. dir is a temporary
// folder removed after the tests: a setup builds what the tests run into it
// (kubectl-finalize, a provider) and writes the files the control plane's flags name,
// and may change the options the control plane starts with.
type Setup func(dir string, opts *Options) error

// Main is the TestMain of a test package: it runs each setup in order, starts one
// control plane with opts into *out, runs the package's tests, prints the last lines of
// every component's log if a test failed, stops everything and exits with the tests'
// code.
//
//	var cp *controlplane.ControlPlane
//	func TestMain(m *testing.M) { controlplane.Main(m, controlplane.APIServer(), &cp) }
func Main(m *testing.M, opts Options, out **ControlPlane, setups ...Setup) {
	os.Exit(runMain(m, opts, out, setups))
}

// runMain is Main up to the exit, so that its deferred removal runs.
func runMain(m *testing.M, opts Options, out **ControlPlane, setups []Setup) int {
	if len(setups) > 0 {
		dir, err := os.MkdirTemp("", "kubectl-finalize-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		for _, setup := range setups {
			if err := setup(dir, &opts); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	}
	timeout := 2 * time.Minute
	if opts.Node || opts.Nodes > 1 || opts.PodNetwork {
		timeout = 5 * time.Minute // the node's images are built first, cold on a fresh machine
		if opts.Log == nil {
			opts.Log = os.Stderr // the node's start is slow enough to show its steps
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cp, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the control plane: %v\n", err)
		return 1
	}
	*out = cp
	code := m.Run()
	if code != 0 {
		cp.Logs(os.Stderr, 100)
	}
	cp.Stop()
	return code
}

// Kube returns a typed admin client.
func (cp *ControlPlane) Kube(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// slug is t's name as lower-case letters, digits and dashes.
func slug(t testing.TB) string {
	return strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
}

// FinalizerOf is a finalizer of t's own, so that a pass of one test never sees another
// test's objects.
func FinalizerOf(t testing.TB) string { return slug(t) + ".example.com/cleanup" }

// Namespace creates a namespace for t, named after the test, and deletes it when t ends.
// Objects the test left stuck stay behind in a Terminating namespace of their own, so
// they never leak into another test's namespace.
func (cp *ControlPlane) Namespace(t testing.TB) string {
	t.Helper()
	base := slug(t)
	if len(base) > 40 {
		base = strings.TrimRight(base[:40], "-")
	}
	ns, err := cp.Kube(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: base + "-", Labels: map[string]string{"kubectl-finalize.test/name": base}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace for %s: %v", t.Name(), err)
	}
	t.Cleanup(func() {
		_ = cp.Kube(t).CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	if cp.Node != nil {
		// With a node, the ServiceAccount admission plugin refuses pods until the
		// serviceaccount controller has made the namespace's "default" ServiceAccount.
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := cp.Kube(t).CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("namespace %s has no default ServiceAccount: %v", ns.Name, err)
		}
	}
	return ns.Name
}

// RequireControllerManager makes sure kube-controller-manager runs DefaultControllers.
func (cp *ControlPlane) RequireControllerManager(t testing.TB) {
	t.Helper()
	if cp.ControllerManagerRunning() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cp.StartControllerManager(ctx); err != nil {
		t.Fatalf("starting kube-controller-manager: %v", err)
	}
}

// RequireNoControllerManager makes sure kube-controller-manager is not running.
func (cp *ControlPlane) RequireNoControllerManager(t testing.TB) {
	t.Helper()
	cp.StopControllerManager()
}

// ControllerManagerRunning reports whether kube-controller-manager is running.
func (cp *ControlPlane) ControllerManagerRunning() bool {
	if cp.kcm == nil {
		return false
	}
	done, _ := cp.kcm.exited()
	return !done
}
