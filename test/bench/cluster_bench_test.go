// Package bench measures kubectl-finalize against a real control plane, side by side
// with the listing floor and the shell idiom. The commands run as child processes, so
// each one's peak RSS is its own, and reach the API server through a counting proxy
// (test/apiproxy), so requests and bytes are counted the same way for all of them.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/test/apiproxy"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

var (
	objects     = flag.Int("bench.objects", seed.DefaultProfile.Objects, "objects in the seeded cluster")
	crds        = flag.Int("bench.crds", seed.DefaultProfile.CRDs, "custom resource types in the seeded cluster")
	maxCR       = flag.Int("bench.cr-bytes", 50<<10, "largest custom resource payload, in bytes")
	minCR       = flag.Int("bench.cr-min-bytes", 1<<10, "smallest custom resource payload, in bytes (sizes are log-uniform in between)")
	overdue     = flag.Int("bench.overdue-pods", 0, "pods whose deletion waits for the kubelet of a node that does not exist, one per namespace in turn; scan and doctor then run with --pod-grace-margin 1s")
	profiles    = flag.String("bench.profile-dir", "", "if set, scan and doctor write a profile of their last run there (--profile, see -bench.profile): VARIANT.pprof")
	profileKind = flag.String("bench.profile", "allocs", "the profile -bench.profile-dir keeps: allocs (go tool pprof -sample_index=alloc_space), heap or cpu")
	pluginEnv   = flag.String("bench.plugin-env", "", "environment variables for scan and doctor, comma-separated (GOGC=50,GODEBUG=gctrace=1); with -bench.profile-dir their stderr is kept there too, as VARIANT.stderr")
	variants    = flag.String("bench.variants", "floor,scan,doctor,shell,floor-nolimit,scan-nolimit,doctor-nolimit", "the variants to run, comma-separated (the floor is always run); reconcile, with -bench.stuck, plans the removal of the mass-stuck objects (reconcile --once --dry-run)")
)

// TestMain runs the benchmarks and then prints the side-by-side table.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if env != nil {
		env.report(os.Stdout)
		env.cp.Stop()
		_ = os.RemoveAll(env.dir)
	}
	os.Exit(code)
}

// benchEnv is the seeded cluster, the proxy in front of it and the binaries.
type benchEnv struct {
	cp         *controlplane.ControlPlane
	proxy      *apiproxy.Proxy
	dir        string
	kubeconfig string
	plugin     string
	floor      string
	// rusage starts each variant and reports its own peak RSS (test/bench/rusage).
	rusage  string
	stats   seed.ScaleStats
	results map[string]measured
	order   []string
	// policy is the reconcile variant's, massStuck how many objects it matches.
	policy    string
	massStuck int
}

// measured is one variant, averaged over its runs.
type measured struct {
	seconds           float64
	requests, bytes   int64
	lists, unpaged    int64
	maxRSSKB, outRows int64
	// runsRSSKB is the peak RSS of each timed run, and maxRSSKB the worst of them.
	runsRSSKB []int64
	anonKB    int64          // peak anonymous memory (heap, stacks), sampled
	pages     map[string]int // pages listed per collection path, in the last run
}

var (
	envOnce sync.Once
	env     *benchEnv
	envErr  error
)

func setup(b *testing.B) *benchEnv {
	b.Helper()
	envOnce.Do(func() {
		e := &benchEnv{results: map[string]measured{}}
		// Shared by every run of the benchmark (-count), so not b.TempDir; TestMain removes it.
		if e.dir, envErr = os.MkdirTemp("", "kubectl-finalize-bench-"); envErr != nil { //nolint:usetesting // see above
			return
		}
		e.plugin = filepath.Join(e.dir, "kubectl-finalize")
		e.floor = filepath.Join(e.dir, "floor")
		e.rusage = filepath.Join(e.dir, "rusage")
		// Built as releases are (goreleaser's flags), so the resident executable is the
		// one users run.
		release := []string{"-trimpath", "-ldflags=-s -w"}
		for _, build := range [][]string{
			append([]string{"build", "-o", e.plugin}, append(release, "github.com/kubectl-finalize/kubectl-finalize/cmd/kubectl-finalize")...),
			append([]string{"build", "-o", e.floor}, append(release, "github.com/kubectl-finalize/kubectl-finalize/test/bench/floor")...),
			append([]string{"build", "-o", e.rusage}, append(release, "github.com/kubectl-finalize/kubectl-finalize/test/bench/rusage")...),
			{"build", "-modfile=../../hack/tools/go.mod", "-o", filepath.Join(e.dir, "jq"), "github.com/itchyny/gojq/cmd/gojq"},
		} {
			cmd := exec.Command("go", build...)
			// Static, as goreleaser builds them, whatever the caller's environment: with
			// cgo, Go's plugin package (which kustomize links) makes the linker export
			// every symbol, and the plugin is a 58 MB executable instead of 45 MB.
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				envErr = fmt.Errorf("go %s: %w\n%s", strings.Join(build, " "), err, out)
				return
			}
		}
		ctx := context.Background()
		e.cp, envErr = controlplane.Start(ctx, controlplane.Options{
			EtcdFlags: map[string]string{"quota-backend-bytes": fmt.Sprint(8 << 30)},
		})
		if envErr != nil {
			return
		}
		env = e
		p := seed.DefaultProfile
		p.Objects, p.CRDs, p.MaxCRBytes = *objects, *crds, *maxCR
		p.MinCRBytes = min(*minCR, p.MaxCRBytes)
		if e.stats, envErr = seed.Scale(ctx, e.cp.Config, p); envErr != nil {
			return
		}
		if envErr = overduePods(ctx, e.cp, *overdue, e.stats.Namespaces); envErr != nil {
			return
		}
		mass, err := seedMassStuck(ctx, e.cp, *massStuck, *operators, e.stats.Namespaces)
		if envErr = err; envErr != nil {
			return
		}
		e.stats.Stuck += mass
		if e.massStuck = mass; mass > 0 && slices.Contains(strings.Split(*variants, ","), "reconcile") {
			if e.policy, envErr = massPolicy(e.dir, fakecloud.New(b), mass); envErr != nil {
				return
			}
		}
		if e.proxy, envErr = apiproxy.Start(e.cp.Config); envErr != nil {
			return
		}
		if e.kubeconfig, envErr = e.proxy.WriteKubeconfig(e.dir); envErr != nil {
			return
		}
		// A file just written sits in the page cache in large folios, and a process that
		// maps it is charged for whole folios: a binary fresh from the linker shows up to
		// 15 MB more RSS than the same binary read back from disk. Every executable starts
		// from disk, as it does for a user.
		// Then one untimed start of each reads it back, so no variant pays for the disk.
		jq, kubectl := filepath.Join(e.dir, "jq"), filepath.Join(e.cp.BinDir, "kubectl")
		if envErr = evict(e.plugin, e.floor, jq, kubectl); envErr != nil {
			return
		}
		for _, warm := range [][]string{{e.plugin, "version"}, {e.floor, "-h"}, {jq, "--version"}, {kubectl, "version", "--client"}} {
			if out, err := exec.Command(warm[0], warm[1:]...).CombinedOutput(); err != nil && warm[0] != e.floor {
				envErr = fmt.Errorf("%s: %w\n%s", strings.Join(warm, " "), err, out)
				return
			}
		}
	})
	if envErr != nil {
		b.Fatal(envErr)
	}
	return env
}

// command is how a variant runs, and how many rows of output it must print: one per
// stuck object, or the count itself.
func (e *benchEnv) command(v string) *exec.Cmd {
	switch v {
	case "floor":
		return exec.Command(e.floor, "-kubeconfig", e.kubeconfig)
	case "scan":
		return exec.Command(e.plugin, append([]string{"scan", "-o", "json", "--kubeconfig", e.kubeconfig}, podMargin()...)...)
	case "doctor":
		return exec.Command(e.plugin, append([]string{"doctor", "-o", "json", "--kubeconfig", e.kubeconfig}, podMargin()...)...)
	case "reconcile":
		// The plan of every mass-stuck object, each verified (a GET of it, a request to
		// the provider), nothing written; the client's rate is raised so that the GETs
		// of ten thousand candidates do not set the pace.
		return exec.Command(e.plugin, "reconcile", "--once", "--dry-run", "--policy", e.policy, "-o", "json", "--kubeconfig", e.kubeconfig, "--qps", "2000", "--burst", "4000")
	// The same without client-side rate limiting: the API server sets the pace.
	case "floor-nolimit":
		return exec.Command(e.floor, "-kubeconfig", e.kubeconfig, "-qps", "-1")
	case "scan-nolimit":
		return exec.Command(e.plugin, append([]string{"scan", "-o", "json", "--kubeconfig", e.kubeconfig, "--qps", "-1"}, podMargin()...)...)
	case "doctor-nolimit":
		return exec.Command(e.plugin, append([]string{"doctor", "-o", "json", "--kubeconfig", e.kubeconfig, "--qps", "-1"}, podMargin()...)...)
	case "shell":
		// The idiom of the blog posts: every type, full objects, one kubectl after
		// another, filtered by jq.
		c := exec.Command("bash", "-o", "pipefail", "-c", `kubectl api-resources --verbs=list -o name | xargs -n1 kubectl get -A -o json | jq -c '.items[] | select(.metadata.deletionTimestamp != null and ((.metadata.finalizers // []) | length > 0)) | [.kind, .metadata.namespace, .metadata.name]'`)
		c.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig, "PATH="+e.cp.BinDir+string(os.PathListSeparator)+e.dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		return c
	}
	panic(v)
}

// rows counts what a variant found.
func rows(v string, out []byte) (int64, error) {
	switch strings.TrimSuffix(v, "-nolimit") {
	case "floor":
		var n int64
		_, err := fmt.Sscan(string(out), &n)
		return n, err
	case "scan", "doctor":
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		err := json.Unmarshal(out, &list)
		return int64(len(list.Items)), err
	case "reconcile":
		var rep struct {
			Actions []json.RawMessage `json:"actions"`
		}
		err := json.Unmarshal(out, &rep)
		return int64(len(rep.Actions)), err
	default:
		return int64(bytes.Count(out, []byte("\n"))), nil
	}
}

// BenchmarkCluster runs scan, doctor, the listing floor and the shell idiom on one seeded
// cluster (-bench.objects, -bench.crds) and reports, for each, wall time, API requests,
// bytes read and peak RSS; TestMain prints them side by side with the ratios.
func BenchmarkCluster(b *testing.B) {
	e := setup(b)
	for _, v := range []string{"floor", "scan", "doctor", "reconcile", "shell", "floor-nolimit", "scan-nolimit", "doctor-nolimit"} {
		if v != "floor" && !slices.Contains(strings.Split(*variants, ","), v) || v == "reconcile" && e.policy == "" {
			continue
		}
		b.Run(v, func(b *testing.B) {
			if v != "shell" {
				// One untimed run first, so no variant pays for the first reading of its
				// executable or for the API server's first serving of a list.
				e.run(b, v)
			}
			var total measured
			for range b.N {
				r := e.run(b, v)
				total.seconds += r.seconds
				total.requests += r.requests
				total.bytes += r.bytes
				total.lists += r.lists
				total.unpaged += r.unpaged
				total.outRows = r.outRows
				total.maxRSSKB = max(total.maxRSSKB, r.maxRSSKB)
				total.runsRSSKB = append(total.runsRSSKB, r.maxRSSKB)
				total.anonKB = max(total.anonKB, r.anonKB)
				total.pages = r.pages
			}
			if paths := e.proxy.UnpagedPaths(); len(paths) > 0 && v != "shell" {
				b.Logf("lists without a limit so far: %v", paths)
			}
			n := float64(b.N)
			m := measured{seconds: total.seconds / n, requests: total.requests / int64(b.N), bytes: total.bytes / int64(b.N),
				lists: total.lists / int64(b.N), unpaged: total.unpaged / int64(b.N), maxRSSKB: total.maxRSSKB, runsRSSKB: total.runsRSSKB, outRows: total.outRows,
				anonKB: total.anonKB, pages: total.pages}
			if _, seen := e.results[v]; !seen {
				e.order = append(e.order, v)
			}
			e.results[v] = m
			b.ReportMetric(m.seconds, "s/run")
			b.ReportMetric(float64(m.requests), "requests/run")
			b.ReportMetric(float64(m.bytes)/1e6, "MB-read/run")
			b.ReportMetric(float64(m.maxRSSKB)/1024, "MB-peak-RSS")
			b.ReportMetric(float64(m.anonKB)/1024, "MB-peak-anon")
			b.ReportMetric(float64(m.unpaged), "unpaged-lists/run")
		})
	}
}

// run runs variant v once and measures it.
func (e *benchEnv) run(b *testing.B, v string) measured {
	b.Helper()
	cmd := e.command(v)
	plugin := strings.HasPrefix(v, "scan") || strings.HasPrefix(v, "doctor") || v == "reconcile"
	if *profiles != "" && plugin {
		cmd.Args = append(cmd.Args, "--profile", *profileKind, "--profile-output", filepath.Join(*profiles, v+".pprof"))
	}
	if plugin {
		// The plugin runs with its own GOGC (cmd/kubectl-finalize) unless -bench.plugin-env
		// sets one: a GOGC exported by whoever runs the benchmark is not measured.
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") })
		if *pluginEnv != "" {
			cmd.Env = append(cmd.Env, strings.Split(*pluginEnv, ",")...)
		}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// Started by rusage, whose report is the variant's own peak RSS; this process's is
	// tens of MB once it has read a variant's output, and a process it starts directly
	// counts it (test/bench/rusage).
	cmd.Args = append([]string{e.rusage, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = e.rusage
	report, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = report.Close() }()
	cmd.ExtraFiles = []*os.File{w}
	// Its own process group, so the sampler sees the whole pipeline of the shell idiom.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	before := e.proxy.Counts()
	began := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	_ = w.Close()
	lines := bufio.NewScanner(report)
	var pid int
	if !lines.Scan() {
		_ = cmd.Wait()
		b.Fatalf("%s: rusage did not start it\n%s", v, errOut.String())
	}
	if _, err := fmt.Sscanf(lines.Text(), "pid %d", &pid); err != nil {
		_ = cmd.Wait()
		b.Fatalf("%s: rusage said %q: %v", v, lines.Text(), err)
	}
	// The group is rusage's (the pid of cmd); rusage itself is left out.
	var anon func() int64
	if v == "shell" {
		anon = sampleGroupAnon(cmd.Process.Pid, cmd.Process.Pid)
	} else {
		anon = sampleAnon(pid)
	}
	err = cmd.Wait()
	elapsed := time.Since(began)
	peakAnon := anon()
	var maxRSSKB int64
	if !lines.Scan() {
		b.Fatalf("%s: rusage reported no peak RSS: %v\n%s", v, err, errOut.String())
	}
	if _, err := fmt.Sscanf(lines.Text(), "maxrss %d", &maxRSSKB); err != nil {
		b.Fatalf("%s: rusage said %q: %v", v, lines.Text(), err)
	}
	c := e.proxy.Counts().Sub(before)
	pages := e.proxy.ListsSince(before)
	var exit *exec.ExitError
	if err != nil && (v != "shell" || !errors.As(err, &exit)) { // xargs exits 123 when a type fails
		b.Fatalf("%s: %v\n%s", v, err, errOut.String())
	}
	if *profiles != "" && plugin {
		if err := os.WriteFile(filepath.Join(*profiles, v+".stderr"), errOut.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	n, err := rows(v, out.Bytes())
	if err != nil {
		b.Fatalf("%s: reading its output: %v", v, err)
	}
	want := int64(e.stats.Stuck)
	if v == "reconcile" {
		want = int64(e.massStuck) // its rule matches those alone
	}
	if n < want {
		b.Fatalf("%s found %d stuck objects, %d were seeded\n%s", v, n, e.stats.Stuck, errOut.String())
	}
	m := measured{seconds: elapsed.Seconds(), requests: c.Requests, bytes: c.Bytes, lists: c.Lists, unpaged: c.Unpaged,
		outRows: n, anonKB: peakAnon, pages: pages, maxRSSKB: maxRSSKB}
	return m
}

// report prints the variants side by side, with their ratios to the floor.
func (e *benchEnv) report(w *os.File) {
	if len(e.results) == 0 {
		return
	}
	// A variant is compared with the floor that has the same client-side rate limit.
	floorOf := func(v string) measured {
		if f, ok := e.results["floor-nolimit"]; ok && strings.HasSuffix(v, "-nolimit") {
			return f
		}
		return e.results["floor"]
	}
	fmt.Fprintf(w, "\ncluster: %d objects (%d stuck) in %d namespaces, %d CRDs, %.0f MB of payload, seeded in %s; %s, %d CPUs\n",
		e.stats.Objects, e.stats.Stuck, e.stats.Namespaces, e.stats.CRDs, float64(e.stats.Bytes)/1e6, e.stats.Duration.Round(time.Second), runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU())
	fmt.Fprintln(w, "| variant | wall time | × floor | API requests | lists (unpaged) | MB read | × floor | peak RSS | × floor | peak anon | × floor | found |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	ratio := func(a, b float64) string {
		if b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	for _, v := range e.order {
		m, fl := e.results[v], floorOf(v)
		fmt.Fprintf(w, "| %s | %.2f s | %s | %d | %d (%d) | %.1f | %s | %.0f MB | %s | %.0f MB | %s | %d |\n", v, m.seconds, ratio(m.seconds, fl.seconds),
			m.requests, m.lists, m.unpaged, float64(m.bytes)/1e6, ratio(float64(m.bytes), float64(fl.bytes)),
			float64(m.maxRSSKB)/1024, ratio(float64(m.maxRSSKB), float64(fl.maxRSSKB)),
			float64(m.anonKB)/1024, ratio(float64(m.anonKB), float64(fl.anonKB)), m.outRows)
	}
	e.reportGoal(w, floorOf)
	// Where a variant's lists differ from the floor's: a collection it reads in more (or
	// fewer) pages, or one it adds or skips.
	for _, v := range e.order {
		if strings.HasPrefix(v, "floor") || v == "shell" {
			continue
		}
		mine, floor := byCollection(e.results[v].pages), byCollection(floorOf(v).pages)
		var diff []string
		for _, path := range slices.Sorted(maps.Keys(mergeKeys(mine, floor))) {
			if d := mine[path] - floor[path]; d != 0 {
				diff = append(diff, fmt.Sprintf("%s %+d", path, d))
			}
		}
		if len(diff) > 0 {
			fmt.Fprintf(w, "\n%s lists, beyond the floor's: %s\n", v, strings.Join(diff, ", "))
		}
	}
}

// reportGoal prints, beside each variant's figures, #36's goal for a cluster with many
// stuck objects: a peak RSS of at most 1.5 × the floor's plus 2 KB per stuck object, and
// for scan and doctor a wall time of at most 1.3 × the floor's (reconcile's plan sends a
// request per candidate, so only its memory has a goal).
func (e *benchEnv) reportGoal(w *os.File, floorOf func(string) measured) {
	if e.stats.Stuck < 1000 {
		return
	}
	fmt.Fprintf(w, "\ngoal for %d stuck objects (#36): peak RSS at most 1.5 × the floor's + 2 KB per stuck object; wall time at most 1.3 × the floor's\n", e.stats.Stuck)
	fmt.Fprintln(w, "| variant | peak RSS | each run | bound | memory | wall time × floor | time |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	verdict := func(got, bound float64, format string) string {
		if got <= bound {
			return "within"
		}
		return "over by " + fmt.Sprintf(format, got-bound)
	}
	for _, v := range e.order {
		if strings.HasPrefix(v, "floor") || v == "shell" {
			continue
		}
		m, fl := e.results[v], floorOf(v)
		rss, bound := float64(m.maxRSSKB)/1024, 1.5*float64(fl.maxRSSKB)/1024+2*float64(e.stats.Stuck)/1024
		times, timeVerdict := "–", "–"
		if fl.seconds > 0 && v != "reconcile" {
			times = fmt.Sprintf("%.2f", m.seconds/fl.seconds)
			timeVerdict = verdict(m.seconds/fl.seconds, 1.3, "%.2f × floor")
		}
		var runs []string
		for _, kb := range m.runsRSSKB {
			runs = append(runs, fmt.Sprintf("%.0f", float64(kb)/1024))
		}
		fmt.Fprintf(w, "| %s | %.0f MB | %s MB | %.0f MB | %s | %s | %s |\n", v, rss, strings.Join(runs, ", "), bound, verdict(rss, bound, "%.0f MB"), times, timeVerdict)
	}
}

// byCollection sums pages over namespaces: /api/v1/namespaces/NS/events counts as
// /api/v1/namespaces/*/events.
func byCollection(pages map[string]int) map[string]int {
	out := map[string]int{}
	for path, n := range pages {
		parts := strings.Split(path, "/")
		for i := range len(parts) - 2 {
			if parts[i] == "namespaces" {
				parts[i+1] = "*"
				break
			}
		}
		out[strings.Join(parts, "/")] += n
	}
	return out
}

// mergeKeys returns a set of the keys of a and b.
func mergeKeys(a, b map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
