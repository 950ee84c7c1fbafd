package remove

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
)

// fullDisk mounts a small tmpfs for the test, creates an empty audit log on it (0600,
// as --audit-log would) and fills the rest of the disk, so that every write to the log
// fails with ENOSPC, as on a full disk. It skips the test when no tmpfs can be mounted
// (mounting needs root).
func fullDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Skipf("a full disk is a tmpfs filled to the brim, and mounting one failed (it needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	log := filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer filler.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err = filler.Write(chunk); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the disk: %v, want ENOSPC", err)
	}
	return log
}

// TestRemoveWithAFullAuditLogRemovesNothing: `remove` of three finalizers with the audit
// log on a full disk removes none: the first fails naming the disk's error, the others
// are not attempted, and the command exits 1.
func TestRemoveWithAFullAuditLogRemovesNothing(t *testing.T) {
	audit := fullDisk(t)
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
