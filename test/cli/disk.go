package cli

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// FullDisk mounts a small tmpfs for the test, creates an empty audit log on it (0600, as
// --audit-log would) and fills the rest of the disk, so that every write to the log fails
// with ENOSPC, as on a full disk. free gives the disk its room back. It skips the test
// when no tmpfs can be mounted (mounting needs root).
func FullDisk(t *testing.T) (log string, free func()) {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Skipf("a full disk is a tmpfs filled to the brim, and mounting one failed (it needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	log = filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fill := filepath.Join(dir, "filler")
	filler, err := os.Create(fill)
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
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("{}\n"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write to the audit log on the full disk: %v, want ENOSPC", err)
	}
	return log, func() {
		if err := os.Remove(fill); err != nil {
			t.Fatal(err)
		}
	}
}

// FullDiskLog is the audit log of FullDisk, on a disk that stays full.
func FullDiskLog(t *testing.T) string {
	t.Helper()
	log, _ := FullDisk(t)
	return log
}
