package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

// runTimeout bounds a process that Run waits for: a hung command fails its test, not
// the package's whole run.
const runTimeout = 2 * time.Minute

// Cmd is a program a test runs as a process of its own: kubectl-finalize, kubectl, a
// provider. It is the one way tests start a process; what it printed and its exit code
// come back as a Result.
type Cmd struct {
	Path string
	Args []string
	// Env is added to the test's environment.
	Env []string
	// Stdin is what the process reads on its standard input.
	Stdin string
	// Terminal runs the process on a pseudo-terminal (script(1)), as a person at a
	// terminal runs it: Stdout is then what the terminal showed, stderr included.
	Terminal bool
}

// Kubectl is the kubectl built with cp, as cp's admin.
func Kubectl(cp *controlplane.ControlPlane, args ...string) Cmd {
	return Cmd{Path: filepath.Join(cp.BinDir, "kubectl"), Args: append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...)}
}

func (c Cmd) command(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	if c.Terminal {
		line := quote(c.Path)
		for _, a := range c.Args {
			line += " " + quote(a)
		}
		cmd = exec.CommandContext(ctx, "script", "-qec", line, "/dev/null")
	}
	cmd.Env = append(os.Environ(), c.Env...)
	if c.Stdin != "" {
		cmd.Stdin = strings.NewReader(c.Stdin)
	}
	return cmd
}

func (c Cmd) String() string {
	return strings.Join(append([]string{filepath.Base(c.Path)}, c.Args...), " ")
}

// Run runs the process to its end and returns what it printed and its exit code. A
// process that cannot be started, or still runs after two minutes, fails the test.
func (c Cmd) Run(t testing.TB) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(testContext(t), runTimeout)
	defer cancel()
	cmd := c.command(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s: %v after %s\nstderr: %s", c, ctx.Err(), runTimeout, stderr.String())
	case err != nil && !errors.As(err, &exit):
		t.Fatalf("running %s: %v", c, err)
	}
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: cmd.ProcessState.ExitCode()}
}

// Succeed runs the process and returns what it printed; an exit code other than 0 fails
// the test with what it printed.
func (c Cmd) Succeed(t testing.TB) Result {
	t.Helper()
	r := c.Run(t)
	if r.Code != 0 {
		t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", c, r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// Start starts the process in the background; it is killed when the test ends.
func (c Cmd) Start(t testing.TB) *Process {
	t.Helper()
	p := &Process{Cmd: c.command(context.Background())}
	p.Cmd.Stdout, p.Cmd.Stderr = &p.Stdout, &p.Stderr
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", c, err)
	}
	t.Cleanup(func() { _ = p.Cmd.Process.Kill(); _ = p.Cmd.Wait() })
	return p
}

// Process is a process started in the background, whose output the test reads while it
// runs.
type Process struct {
	Cmd            *exec.Cmd
	Stdout, Stderr Buffer
}

// Wait waits for the process to exit, at most d, and returns its exit code.
func (p *Process) Wait(t testing.TB, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Cmd.Wait() }()
	select {
	case err := <-done:
		// A non-zero exit is an *exec.ExitError; the code tells it.
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("waiting for the process: %v", err)
		}
		return p.Cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("still running after %s; stderr:\n%s", d, p.Stderr.String())
	}
	return -1
}

// Buffer is a buffer a process writes to while the test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// quote quotes s for the shell script(1) runs the command line with.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// testContext is t's context: it ends when the test does.
func testContext(t testing.TB) context.Context {
	if tt, ok := t.(interface{ Context() context.Context }); ok {
		return tt.Context()
	}
	return context.Background()
}
