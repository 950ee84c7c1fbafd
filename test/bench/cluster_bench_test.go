// Package bench measures kubectl-finalize against a real control plane, side by side
// with the listing floor and the shell idiom. The commands run as child processes, so
// each one's peak RSS is its own, and reach the API server through a counting proxy
// (test/apiproxy), so requests and bytes are counted the same way for all of them.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-finalize/kubectl-finalize/test/apiproxy"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

var (
	variant    = flag.String("bench.variant", "", "internal: the variant a child process runs")
	kubeconfig = flag.String("bench.kubeconfig", "", "internal: the cluster a child process lists")
	objects    = flag.Int("bench.objects", seed.DefaultProfile.Objects, "objects in the seeded cluster")
	crds       = flag.Int("bench.crds", seed.DefaultProfile.CRDs, "custom resource types in the seeded cluster")
	maxCR      = flag.Int("bench.cr-bytes", 50<<10, "largest custom resource payload, in bytes (the smallest is 1 KiB)")
)

// The page size and concurrency of the floor: the plugin's defaults.
const (
	floorChunk       = 500
	floorConcurrency = 8
)

// TestMain runs a child's variant, or the benchmarks and then the side-by-side table.
func TestMain(m *testing.M) {
	flag.Parse()
	if *variant == "floor" {
		os.Exit(floor())
	}
	code := m.Run()
	if env != nil {
		env.report(os.Stdout)
		env.cp.Stop()
		_ = os.RemoveAll(env.dir)
	}
	os.Exit(code)
}

// floor fetches the metadata pages of every listable type, as the scan does, and does
// nothing with them but count the stuck objects. It prints the count.
func floor() int {
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.QPS, cfg.Burst = 100, 200 // the plugin's defaults
	ctx := context.Background()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	lists, _ := discovery.ServerPreferredResources(dc)
	var mu sync.Mutex
	stuck := 0
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(floorConcurrency)
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			res := md.Resource(gv.WithResource(r.Name))
			g.Go(func() error {
				opts := metav1.ListOptions{Limit: floorChunk}
				for {
					page, err := res.List(ctx, opts)
					if err != nil {
						return nil //nolint:nilerr // a type that cannot be listed adds nothing to the floor
					}
					n := 0
					for i := range page.Items {
						if page.Items[i].DeletionTimestamp != nil && len(page.Items[i].Finalizers) > 0 {
							n++
						}
					}
					mu.Lock()
					stuck += n
					mu.Unlock()
					if page.Continue == "" {
						return nil
					}
					opts.Continue = page.Continue
				}
			})
		}
	}
	_ = g.Wait()
	fmt.Println(stuck)
	return 0
}

// benchEnv is the seeded cluster, the proxy in front of it and the binaries.
type benchEnv struct {
	cp         *controlplane.ControlPlane
	proxy      *apiproxy.Proxy
	dir        string
	kubeconfig string
	plugin     string
	stats      seed.ScaleStats
	results    map[string]measured
	order      []string
}

// measured is one variant, averaged over its runs.
type measured struct {
	seconds           float64
	requests, bytes   int64
	lists, unpaged    int64
	maxRSSKB, outRows int64
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
		for _, build := range [][]string{
			{"build", "-o", e.plugin, "github.com/kubectl-finalize/kubectl-finalize/cmd/kubectl-finalize"},
			{"build", "-modfile=../../hack/tools/go.mod", "-o", filepath.Join(e.dir, "jq"), "github.com/itchyny/gojq/cmd/gojq"},
		} {
			if out, err := exec.Command("go", build...).CombinedOutput(); err != nil {
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
		p.MinCRBytes = min(1<<10, p.MaxCRBytes)
		if e.stats, envErr = seed.Scale(ctx, e.cp.Config, p); envErr != nil {
			return
		}
		if e.proxy, envErr = apiproxy.Start(e.cp.Config); envErr != nil {
			return
		}
		e.kubeconfig, envErr = e.proxy.WriteKubeconfig(e.dir)
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
		return exec.Command(os.Args[0], "-bench.variant=floor", "-bench.kubeconfig="+e.kubeconfig)
	case "scan":
		return exec.Command(e.plugin, "scan", "-o", "json", "--kubeconfig", e.kubeconfig)
	case "doctor":
		return exec.Command(e.plugin, "doctor", "-o", "json", "--kubeconfig", e.kubeconfig)
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
	switch v {
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
	default:
		return int64(bytes.Count(out, []byte("\n"))), nil
	}
}

// BenchmarkCluster runs scan, doctor, the listing floor and the shell idiom on one seeded
// cluster (-bench.objects, -bench.crds) and reports, for each, wall time, API requests,
// bytes read and peak RSS; TestMain prints them side by side with the ratios.
func BenchmarkCluster(b *testing.B) {
	e := setup(b)
	for _, v := range []string{"floor", "scan", "doctor", "shell"} {
		b.Run(v, func(b *testing.B) {
			var total measured
			for range b.N {
				cmd := e.command(v)
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				before := e.proxy.Counts()
				began := time.Now()
				err := cmd.Run()
				elapsed := time.Since(began)
				c := e.proxy.Counts().Sub(before)
				var exit *exec.ExitError
				if err != nil && (v != "shell" || !errors.As(err, &exit)) { // xargs exits 123 when a type fails
					b.Fatalf("%s: %v\n%s", v, err, errOut.String())
				}
				n, err := rows(v, out.Bytes())
				if err != nil {
					b.Fatalf("%s: reading its output: %v", v, err)
				}
				if n < int64(e.stats.Stuck) {
					b.Fatalf("%s found %d stuck objects, %d were seeded\n%s", v, n, e.stats.Stuck, errOut.String())
				}
				ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				total.seconds += elapsed.Seconds()
				total.requests += c.Requests
				total.bytes += c.Bytes
				total.lists += c.Lists
				total.unpaged += c.Unpaged
				total.outRows = n
				if ru != nil {
					total.maxRSSKB = max(total.maxRSSKB, ru.Maxrss)
				}
			}
			if paths := e.proxy.UnpagedPaths(); len(paths) > 0 && v != "shell" {
				b.Logf("lists without a limit so far: %v", paths)
			}
			n := float64(b.N)
			m := measured{seconds: total.seconds / n, requests: total.requests / int64(b.N), bytes: total.bytes / int64(b.N),
				lists: total.lists / int64(b.N), unpaged: total.unpaged / int64(b.N), maxRSSKB: total.maxRSSKB, outRows: total.outRows}
			if _, seen := e.results[v]; !seen {
				e.order = append(e.order, v)
			}
			e.results[v] = m
			b.ReportMetric(m.seconds, "s/run")
			b.ReportMetric(float64(m.requests), "requests/run")
			b.ReportMetric(float64(m.bytes)/1e6, "MB-read/run")
			b.ReportMetric(float64(m.maxRSSKB)/1024, "MB-peak-RSS")
			b.ReportMetric(float64(m.unpaged), "unpaged-lists/run")
		})
	}
}

// report prints the variants side by side, with their ratios to the floor.
func (e *benchEnv) report(w *os.File) {
	if len(e.results) == 0 {
		return
	}
	fl := e.results["floor"]
	fmt.Fprintf(w, "\ncluster: %d objects (%d stuck) in %d namespaces, %d CRDs, %.0f MB of payload, seeded in %s; %s, %d CPUs\n",
		e.stats.Objects, e.stats.Stuck, e.stats.Namespaces, e.stats.CRDs, float64(e.stats.Bytes)/1e6, e.stats.Duration.Round(time.Second), runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU())
	fmt.Fprintln(w, "| variant | wall time | × floor | API requests | lists (unpaged) | MB read | × floor | peak RSS | × floor | found |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	ratio := func(a, b float64) string {
		if b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	for _, v := range e.order {
		m := e.results[v]
		fmt.Fprintf(w, "| %s | %.2f s | %s | %d | %d (%d) | %.1f | %s | %.0f MB | %s | %d |\n", v, m.seconds, ratio(m.seconds, fl.seconds),
			m.requests, m.lists, m.unpaged, float64(m.bytes)/1e6, ratio(float64(m.bytes), float64(fl.bytes)),
			float64(m.maxRSSKB)/1024, ratio(float64(m.maxRSSKB), float64(fl.maxRSSKB)), m.outRows)
	}
}
