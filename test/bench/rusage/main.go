// Command rusage runs a command and reports its peak RSS, as the cluster benchmark needs
// it: the command's own.
//
// A process's peak RSS (getrusage's ru_maxrss) is the largest of what each address space
// it ran in reached, and the first of them is its parent's: Go starts a process with
// clone(CLONE_VM|CLONE_VFORK), the child runs in the parent's memory until it execs, and
// at the exec Linux keeps the high-water RSS of that memory (fs/exec.c, exec_mmap). A
// benchmark that has read a command's output of 10 MB is a parent of 80 MB, and every
// command it starts after that has a peak RSS of at least 80 MB. rusage is that parent
// instead: a few MB, so what wait4 says of its child is the child's own peak.
//
//	rusage PROGRAM [ARG...]
//
// On file descriptor 3 it writes "pid N" once the child has started (the benchmark samples
// its anonymous memory) and "maxrss KB" once it has exited. Its exit code is the child's,
// or 128 plus the signal that killed it. Its own memory (about 2.3 MB) is a floor of the
// figure, not added to it. For a pipeline (the shell idiom), the kernel reports the
// largest single process of those waited for, not their sum.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rusage PROGRAM [ARG...]")
		os.Exit(2)
	}
	// The report is a pipe its starter reads. Without one, the runtime may have opened a
	// file of its own as descriptor 3 (Go reads the cgroup's CPU limit at start).
	var st syscall.Stat_t
	if err := syscall.Fstat(3, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		fmt.Fprintln(os.Stderr, "rusage: file descriptor 3, for the report, is not a pipe")
		os.Exit(2)
	}
	report := os.NewFile(3, "report")
	// The child must not hold the report open: the benchmark reads it to its end.
	syscall.CloseOnExec(3)
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "rusage: %v\n", err)
		os.Exit(127)
	}
	fmt.Fprintf(report, "pid %d\n", cmd.Process.Pid)
	err := cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintf(os.Stderr, "rusage: %v\n", err)
		os.Exit(127)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "rusage: no resource usage for the child")
		os.Exit(127)
	}
	fmt.Fprintf(report, "maxrss %d\n", ru.Maxrss)
	status := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if status.Signaled() {
		os.Exit(128 + int(status.Signal()))
	}
	os.Exit(status.ExitStatus())
}
