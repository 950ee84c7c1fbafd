// Package stress holds the tests that try to make kubectl-finalize remove a finalizer on
// a guess, on a real control plane: providers that hang, crash, flood and lie, and a
// chaos run of verified and forced removals against concurrent writers. Their counts
// and bounds are in docs/reliability.md.
package stress

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var (
	cp *controlplane.ControlPlane
	// binary is kubectl-finalize, built so that passes run as processes of their own
	// whose memory can be measured.
	binary string
)

func TestMain(m *testing.M) {
	// The test binary is also the exec provider of these tests.
	if os.Getenv("STRESS_PROVIDER") != "" {
		os.Exit(misbehave(os.Args[1:]))
	}
	controlplane.Main(m, controlplane.APIServer(), &cp, cli.BuildInto(&binary))
}

// measured is one kubectl-finalize process: what it printed, how it ended, how long it
// took and the most memory it held.
type measured struct {
	Stdout, Stderr string
	Code           int
	Took           time.Duration
	// PeakRSS is the process's own high-water mark of resident memory (VmHWM), read
	// every few milliseconds while it runs: its providers are not counted.
	PeakRSS int64
}

// runMeasured runs kubectl-finalize with args against the control plane.
func runMeasured(t *testing.T, env []string, args ...string) measured {
	t.Helper()
	start := time.Now()
	p := cli.Cmd{Path: binary, Args: append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...), Env: env}.Start(t)
	var peak atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if kb := statusKB(p.Cmd.Process.Pid, "VmHWM:"); kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	code := p.Wait(t, 10*time.Minute)
	close(done)
	wg.Wait()
	return measured{Stdout: p.Stdout.String(), Stderr: p.Stderr.String(), Code: code, Took: time.Since(start), PeakRSS: peak.Load() << 10}
}

// statusKB reads a "Name: N kB" line of /proc/pid/status; 0 once the process is gone.
func statusKB(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

// report decodes a pass's JSON report.
func report(t *testing.T, m measured) *finalizev1alpha1.ReconcileReport {
	t.Helper()
	return cli.Report(t, cli.Result{Stdout: m.Stdout, Stderr: m.Stderr, Code: m.Code})
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
