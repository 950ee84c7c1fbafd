// Package reconcile tests `kubectl finalize reconcile` and `kubectl finalize rbac`
// against a real control plane: passes, the breaker, dry runs, the generated RBAC as a
// ServiceAccount, SIGTERM, leader election and metrics.
package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var (
	cp *controlplane.ControlPlane
	// binary is kubectl-finalize, built for the tests that need a process of its own.
	binary string
	// auditLog is the API server's audit log of ServiceAccounts' requests.
	auditPolicy, auditLog string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var dir string
	var err error
	if binary, dir, err = cli.BuildTemp("kubectl-finalize-reconcile-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The API server's audit log records every request of a ServiceAccount: it shows
	// which of the verbs the generated RBAC grants a pass uses.
	auditPolicy = filepath.Join(dir, "audit-policy.yaml")
	auditLog = filepath.Join(dir, "audit.log")
	if err := os.WriteFile(auditPolicy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: None
`), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return controlplane.RunMain(m, controlplane.Options{APIServerFlags: map[string]string{
		"audit-policy-file": auditPolicy, "audit-log-path": auditLog, "audit-log-mode": "blocking"}}, &cp)
}

// object creates a configmap with finalizer and an "instance" annotation, deleted when
// stuck is set.
func object(t *testing.T, ns, name, finalizer, instance string, stuck bool) *corev1.ConfigMap {
	t.Helper()
	c := cp.Kube(t).CoreV1().ConfigMaps(ns)
	cm, err := c.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{finalizer},
		Annotations: map[string]string{"instance": instance}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.Patch(context.Background(), name, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if stuck {
		if err := c.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if cm, err = c.Get(t.Context(), name, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return cm
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

// syncBuffer is a buffer a process writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is a kubectl-finalize running on its own.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
}

func start(t *testing.T, kubeconfig string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(binary, append([]string{"--kubeconfig", kubeconfig}, args...)...)}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return p
}

// wait waits for the process to exit, at most d.
func (p *process) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		// A non-zero exit is an *exec.ExitError; the code tells it.
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("waiting for the process: %v", err)
		}
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("still running after %s; stderr:\n%s", d, p.stderr.String())
	}
	return -1
}
