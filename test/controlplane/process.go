package controlplane

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one component (etcd, kube-apiserver, kube-controller-manager) with its
// output in a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
}

// startProcess starts bin with args, logging to dir/name.log. A detached process gets a
// session of its own and outlives the caller (the demo); an attached one is killed by
// the kernel if the test binary dies, so no component is ever left behind.
func startProcess(name, bin string, args []string, dir string, detached bool) (*process, error) {
	return startProcessEnv(name, bin, args, dir, detached, nil)
}

// startProcessEnv is startProcess with an environment (nil: this process's).
func startProcessEnv(name, bin string, args []string, dir string, detached bool, env []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	fmt.Fprintf(logFile, "+ %s %s\n", bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// stop asks the process to end and kills it if it has not after a grace period.
func (p *process) stop(grace time.Duration) {
	if p == nil {
		return
	}
	if done, _ := p.exited(); done {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tail writes the last n lines of the process log to w.
func (p *process) tail(w io.Writer, n int) {
	f, err := os.Open(p.logPath)
	if err != nil {
		fmt.Fprintf(w, "(no log for %s: %v)\n", p.name, err)
		return
	}
	defer f.Close()
	lines := make([]string, 0, n)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if len(lines) == n {
			lines = lines[1:]
		}
		lines = append(lines, sc.Text())
	}
	fmt.Fprintf(w, "===== last %d lines of %s (%s) =====\n", len(lines), p.name, p.logPath)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// stopPID stops a detached process by PID: SIGTERM to its session, SIGKILL after grace.
func stopPID(pid int, grace time.Duration) error {
	if pid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return syscall.Kill(-pid, syscall.SIGKILL)
}
