package remove

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
)

// TestRemoveWithAFullAuditLogRemovesNothing: `remove` of three finalizers with the audit
// log on a full disk removes none: the first fails naming the disk's error, the others
// are not attempted, and the command exits 1.
func TestRemoveWithAFullAuditLogRemovesNothing(t *testing.T) {
	audit := cli.FullDiskLog(t)
	ns := cp.Namespace(t)
	for _, name := range []string{"a", "b", "c"} {
		stuckConfigMap(t, ns, name, "a.example.com/x")
	}
	r := cli.Run(t, cp.AdminKubeconfig, args([]string{"remove", "configmap", "a", "b", "c", "-n", ns, "--finalizer", "a.example.com/x", "--yes", "--audit-log", audit}, force)...)
	if r.Code != 1 || !strings.Contains(r.Stderr, "no space left on device") || !strings.Contains(r.Stderr, "2 removals not attempted") {
		t.Errorf("exit %d, want 1 naming the full disk; stdout %q, stderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout, "removed") {
		t.Errorf("stdout reports a removal: %q", r.Stdout)
	}
	for _, name := range []string{"a", "b", "c"} {
		cm, err := cp.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil || !slices.Contains(cm.Finalizers, "a.example.com/x") {
			t.Errorf("configmap %s lost its finalizer although nothing could be audited: %v", name, err)
		}
	}
}
