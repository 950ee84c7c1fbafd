// Package bench measures kubectl-finalize against a real control plane. Each variant runs
// in a child process of its own, so its peak RSS is its own; the benchmark reports time,
// API requests, response bytes and peak RSS side by side.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var (
	variant    = flag.String("bench.variant", "", "internal: the variant a child process runs")
	kubeconfig = flag.String("bench.kubeconfig", "", "internal: the cluster a child process scans")
)

// Size of the seeded cluster.
const (
	namespaces       = 20
	configMapsPerNS  = 250
	stuckEvery       = 20   // one configmap in 20 is stuck
	configMapPayload = 4096 // bytes of data per configmap
)

// result is what a child process measured.
type result struct {
	Seconds  float64 `json:"seconds"`
	Requests int64   `json:"requests"`
	Bytes    int64   `json:"bytes"`
	MaxRSSKB int64   `json:"maxRSSKB"`
	Stuck    int     `json:"stuck"`
}

// counting counts requests and response bytes.
type counting struct {
	next     http.RoundTripper
	requests atomic.Int64
	bytes    atomic.Int64
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	resp, err := c.next.RoundTrip(req)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.bytes}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// TestMain runs a child's variant, or the benchmarks.
func TestMain(m *testing.M) {
	flag.Parse()
	if *variant != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

func child() int {
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.QPS, cfg.Burst = 100, 200 // the plugin's defaults
	cfg.WarningHandler = rest.NoWarnings{}
	ct := &counting{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { ct.next = rt; return ct })
	ctx := context.Background()
	began := time.Now()
	stuck := 0
	switch *variant {
	case "kubectl-finalize":
		s := &scan.Scanner{
			Discovery: discovery.NewDiscoveryClientForConfigOrDie(cfg),
			Metadata:  metadata.NewForConfigOrDie(cfg),
			Kube:      kubernetes.NewForConfigOrDie(cfg),
		}
		res, err := s.Scan(ctx, scan.Options{ChunkSize: scan.DefaultChunkSize, Concurrency: scan.DefaultConcurrency})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		stuck = len(res.Objects)
	case "naive":
		// What "kubectl api-resources | xargs kubectl get -A -o json" does: every type,
		// full objects, one unpaged list after another.
		dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
		dyn := dynamic.NewForConfigOrDie(cfg)
		lists, _ := discovery.ServerPreferredResources(dc)
		for _, l := range lists {
			gv, _ := schema.ParseGroupVersion(l.GroupVersion)
			for _, r := range l.APIResources {
				if strings.Contains(r.Name, "/") || !contains(r.Verbs, "list") {
					continue
				}
				items, err := dyn.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{})
				if err != nil {
					continue
				}
				for _, u := range items.Items {
					if u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) > 0 {
						stuck++
					}
				}
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown variant %q\n", *variant)
		return 2
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	out := result{Seconds: time.Since(began).Seconds(), Requests: ct.requests.Load(), Bytes: ct.bytes.Load(), MaxRSSKB: ru.Maxrss, Stuck: stuck}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

var (
	clusterOnce sync.Once
	cluster     *controlplane.ControlPlane
	clusterErr  error
	wantStuck   int
)

// seeded starts a control plane with namespaces*configMapsPerNS configmaps of
// configMapPayload bytes, one in stuckEvery stuck.
func seeded(b *testing.B) *controlplane.ControlPlane {
	b.Helper()
	clusterOnce.Do(func() {
		ctx := context.Background()
		cluster, clusterErr = controlplane.Start(ctx, controlplane.Options{})
		if clusterErr != nil {
			return
		}
		kube := kubernetes.NewForConfigOrDie(cluster.Config)
		payload := strings.Repeat("x", configMapPayload)
		var wg sync.WaitGroup
		errs := make(chan error, namespaces)
		for n := range namespaces {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ns := fmt.Sprintf("bench-%02d", n)
				if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
				for i := range configMapsPerNS {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)}, Data: map[string]string{"payload": payload}}
					if i%stuckEvery == 0 {
						cm.Finalizers = []string{"bench.example.com/hold"}
					}
					if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
						errs <- err
						return
					}
					if i%stuckEvery == 0 {
						if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
							errs <- err
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		clusterErr = <-errs
		wantStuck = namespaces * configMapsPerNS / stuckEvery
	})
	if clusterErr != nil {
		b.Fatal(clusterErr)
	}
	return cluster
}

// BenchmarkScan compares the scan engine with the naive full listing, on a cluster of
// 5,000 configmaps of 4 KiB each, 250 of them stuck.
func BenchmarkScan(b *testing.B) {
	cp := seeded(b)
	for _, v := range []string{"kubectl-finalize", "naive"} {
		b.Run(v, func(b *testing.B) {
			var total result
			for range b.N {
				cmd := exec.Command(os.Args[0], "-bench.variant="+v, "-bench.kubeconfig="+cp.AdminKubeconfig)
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				if err := cmd.Run(); err != nil {
					b.Fatalf("%s: %v\n%s", v, err, errOut.String())
				}
				var r result
				if err := json.Unmarshal(out.Bytes(), &r); err != nil {
					b.Fatalf("%s: %v: %q", v, err, out.String())
				}
				if r.Stuck < wantStuck {
					b.Fatalf("%s found %d stuck objects, want at least %d", v, r.Stuck, wantStuck)
				}
				total.Seconds += r.Seconds
				total.Requests += r.Requests
				total.Bytes += r.Bytes
				total.MaxRSSKB = max(total.MaxRSSKB, r.MaxRSSKB)
			}
			n := float64(b.N)
			b.ReportMetric(total.Seconds/n, "s/scan")
			b.ReportMetric(float64(total.Requests)/n, "requests/scan")
			b.ReportMetric(float64(total.Bytes)/n/1e6, "MB-read/scan")
			b.ReportMetric(float64(total.MaxRSSKB)/1024, "MB-peak-RSS")
		})
	}
}
