package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/apiproxy"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
)

var (
	benchRemovals = flag.Int("bench.removals", 1000, "stuck objects a pass of BenchmarkVerifiedRemovals removes")
	benchLatency  = flag.Duration("bench.provider-latency", 10*time.Millisecond, "how long the HTTP provider takes to answer")
)

// BenchmarkVerifiedRemovals times one `reconcile --once` over stuck objects whose
// external resources an HTTPS provider, answering in 10 ms, says are gone: the whole pass
// as a CronJob runs it (scan, policy, verification, the breaker, pinned guarded writes,
// an Event and an fsynced audit line per removal), in a process of its own, through a
// proxy that counts its requests. Variants: every limit at its default, then the
// provider's and the client's rate limits raised with one, four and eight writers.
func BenchmarkVerifiedRemovals(b *testing.B) {
	n := *benchRemovals
	fin := "bench.example.com/cleanup"
	c := fakecloud.New(b)
	c.Delay = *benchLatency
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = -1, 0 // seeding is not what is measured
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	proxy, err := apiproxy.Start(cp.Config)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = proxy.Close() })
	dir := b.TempDir()
	kubeconfig, err := proxy.WriteKubeconfig(dir)
	if err != nil {
		b.Fatal(err)
	}
	// The rule's provider rate limit is 50/s by default, a cloud API's kind of quota; this
	// provider is allowed 200/s.
	policies := map[string]string{}
	for name, extra := range map[string]string{"default": "", "fast": "  rateLimit: {qps: 200, burst: 400}\n"} {
		policies[name] = filepath.Join(dir, name+".yaml")
		doc := fmt.Sprintf("apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nminAge: 0s\nmaxRemovals: %d\nrules:\n%s", n, c.Rule("bench", fin, extra))
		if err := os.WriteFile(policies[name], []byte(doc), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for _, v := range []struct {
		name, policy string
		args         []string
	}{
		// Everything at its default: the provider's 50/s and the client's 100 requests/s bound it.
		{"defaults", "default", nil},
		// The provider allowed 200/s, the client 400 requests/s: one writer, then the default four, then eight.
		{"fast-provider-qps-400-1-writer", "fast", []string{"--qps", "400", "--burst", "800", "--write-concurrency", "1"}},
		{"fast-provider-qps-400-4-writers", "fast", []string{"--qps", "400", "--burst", "800"}},
		{"fast-provider-qps-400-8-writers", "fast", []string{"--qps", "400", "--burst", "800", "--write-concurrency", "8"}},
	} {
		policy := policies[v.policy]
		b.Run(v.name, func(b *testing.B) {
			var seconds, requests float64
			for i := range b.N {
				ns := seedStuck(b, kube, fmt.Sprintf("bench-%s-%d", v.name, i), fin, n)
				audit := filepath.Join(b.TempDir(), "audit.jsonl")
				args := append([]string{"reconcile", "--once", "--policy", policy, "-n", ns, "--audit-log", audit, "-o", "json", "--kubeconfig", kubeconfig}, v.args...)
				cmd := exec.Command(binary, args...)
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				before := proxy.Counts()
				began := time.Now()
				err := cmd.Run()
				elapsed := time.Since(began)
				got := proxy.Counts().Sub(before)
				if err != nil {
					b.Fatalf("%v\n%s", err, errOut.String())
				}
				var rep finalizev1alpha1.ReconcileReport
				if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
					b.Fatal(err)
				}
				if removed := rep.Summary[finalizev1alpha1.ResultRemoved]; removed != n {
					b.Fatalf("removed %d of %d: %+v, first: %+v\n%s", removed, n, rep.Summary, rep.Actions[0], errOut.String())
				}
				lines, _ := os.ReadFile(audit)
				if l := strings.Count(string(lines), `"stage":"Complete"`); l != n {
					b.Fatalf("%d audit lines for %d removals", l, n)
				}
				seconds += elapsed.Seconds()
				requests += float64(got.Requests)
			}
			b.ReportMetric(float64(n*b.N)/seconds, "removals/s")
			b.ReportMetric(seconds/float64(b.N), "s/pass")
			b.ReportMetric(requests/float64(n*b.N), "requests/removal")
		})
	}
}

// seedStuck creates n terminating ConfigMaps holding fin in a namespace of their own,
// each naming an instance the cloud answers for slowly, then "deleted", and one live
// object.
func seedStuck(b *testing.B, kube kubernetes.Interface, name, fin string, n int) string {
	b.Helper()
	ctx := context.Background()
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	// A live object the rule matches, so the provider's trust check has one to ask about.
	if _, err := kube.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "control", Finalizers: []string{fin},
		Annotations: map[string]string{"instance": "live"}}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_, _ = kube.CoreV1().ConfigMaps(ns.Name).Patch(context.Background(), "control", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			cms := kube.CoreV1().ConfigMaps(ns.Name)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db-%05d", i), Finalizers: []string{fin},
				Annotations: map[string]string{"instance": fmt.Sprintf("slow-%d", i)}}}
			if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				return err
			}
			return cms.Delete(ctx, cm.Name, metav1.DeleteOptions{})
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return ns.Name
}
