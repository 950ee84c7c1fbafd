package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

// The receivers of a pass's metrics, the Prometheus Pushgateway and node_exporter, are
// built from test/infra/receivers, a module of their own, into a cache folder outside the
// repository keyed by that module's go.mod and go.sum: cold, with the modules to
// download, under three minutes on two cores; warm, nothing.
var (
	receiversOnce sync.Once
	receiversDir  string
	receiversErr  error
)

func receivers(t *testing.T) string {
	t.Helper()
	receiversOnce.Do(func() { receiversDir, receiversErr = buildReceivers() })
	if receiversErr != nil {
		t.Fatal(receiversErr)
	}
	return receiversDir
}

func buildReceivers() (string, error) {
	module, err := filepath.Abs(filepath.Join("..", "..", "test", "infra", "receivers"))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(module, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dest := filepath.Join(cache, "kubectl-finalize", "receivers", hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(filepath.Join(dest, ".complete")); err == nil {
		return dest, nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dest), ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	build := exec.Command("go", "build", "-trimpath", "-o", tmp+string(filepath.Separator),
		"github.com/prometheus/pushgateway", "github.com/prometheus/node_exporter")
	build.Dir = module
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the metrics receivers in %s: %w\n%s", module, err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", err
	}
	_ = os.RemoveAll(dest)
	if err := os.Rename(tmp, dest); err != nil {
		if _, serr := os.Stat(filepath.Join(dest, ".complete")); serr == nil {
			return dest, nil // another test binary built it at the same time
		}
		return "", err
	}
	return dest, nil
}

// freeAddress is a loopback address nothing listens on, for a receiver to listen on.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// receiver runs one of the receivers on a loopback address until the test ends, and
// returns that address once it answers on path.
func receiver(t *testing.T, name, ready string, args ...string) string {
	t.Helper()
	addr := freeAddress(t)
	p := cli.Cmd{Path: filepath.Join(receivers(t), name), Args: append([]string{"--web.listen-address=" + addr}, args...)}.Start(t)
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get("http://" + addr + ready)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK, nil // not listening yet: try again
	}); err != nil {
		t.Fatalf("%s did not answer on %s:\n%s%s", name, addr, p.Stdout.String(), p.Stderr.String())
	}
	return addr
}

// scrape reads the metrics a receiver exposes.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("the metrics of %s do not parse: %v\n%s", addr, err, b)
	}
	return mfs
}

// sample is the value of the series of family name whose labels include want; ok is
// false when there is none.
func sample(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (value float64, ok bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		case m.GetUntyped() != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// series is one metric a receiver must expose after a pass, with labels, and its value.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

func (s series) String() string { return fmt.Sprintf("%s%v", s.name, s.labels) }

// expect checks each series against what a receiver exposes. A series whose labels
// carry group are also looked up with them.
func expect(t *testing.T, mfs map[string]*dto.MetricFamily, group map[string]string, want ...series) {
	t.Helper()
	for _, s := range want {
		labels := map[string]string{}
		for k, v := range group {
			labels[k] = v
		}
		for k, v := range s.labels {
			labels[k] = v
		}
		if got, ok := sample(mfs, s.name, labels); !ok || got != s.value {
			t.Errorf("%s: got %v (found %v), want %v", s, got, ok, s.value)
		}
	}
}

func absent(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string) {
	t.Helper()
	if v, ok := sample(mfs, name, labels); ok {
		t.Errorf("%s%v is there (%v); want none", name, labels, v)
	}
}

// runOnce runs a pass with the real binary, as a CronJob's pod does, and decodes its
// report.
func runOnce(t *testing.T, policy string, extra ...string) (*finalizev1alpha1.ReconcileReport, int, string) {
	t.Helper()
	p := start(t, cp.AdminKubeconfig, append([]string{"reconcile", "--once", "--policy", policy, "-o", "json"}, extra...)...)
	code := p.Wait(t, 60*time.Second)
	return cli.Report(t, cli.Result{Stdout: p.Stdout.String(), Stderr: p.Stderr.String(), Code: code}), code, p.Stderr.String()
}

// passMetrics are the series the pass of TestMetricsArePushedToAPushgateway and
// TestMetricsAreWrittenForTheTextfileCollector exposes: one finalizer removed, one kept.
func passMetrics(rep *finalizev1alpha1.ReconcileReport) []series {
	return []series{
		{"kubectl_finalize_reconcile_passes_total", map[string]string{"outcome": "ok"}, 1},
		{"kubectl_finalize_reconcile_actions_total", map[string]string{"rule": "dbs", "result": "Removed"}, 1},
		{"kubectl_finalize_reconcile_actions_total", map[string]string{"rule": "dbs", "result": "Kept"}, 1},
		{"kubectl_finalize_provider_verdicts_total", map[string]string{"rule": "dbs", "provider": "http", "verdict": "Gone"}, 1},
		{"kubectl_finalize_provider_verdicts_total", map[string]string{"rule": "dbs", "provider": "http", "verdict": "Present"}, 1},
		{"kubectl_finalize_reconcile_pass_duration_seconds", nil, 1},
		{"kubectl_finalize_reconcile_last_success_timestamp_seconds", nil, float64(rep.CompletionTime.Unix())},
		{"kubectl_finalize_rule_broken", map[string]string{"rule": "dbs"}, 0},
		{"kubectl_finalize_rule_cannot_verify", map[string]string{"rule": "dbs"}, 0},
	}
}

// laterSecond waits until the second after rep's end, so that the last-success time a
// later pass would write differs from rep's.
func laterSecond(rep *finalizev1alpha1.ReconcileReport) {
	time.Sleep(time.Until(rep.CompletionTime.Add(time.Second)))
}

// failedPass sets up a pass that fails (exit 1): rule typo is broken, its provider calls
// a live object gone.
func failedPass(t *testing.T, ns string) string {
	t.Helper()
	fin := controlplane.FinalizerOf(t) + "-typo"
	object(t, ns, "typo-control", fin, "deleted-live", false)
	object(t, ns, "typo-target", fin, "deleted-typo", true)
	return fin
}

// TestMetricsArePushedToAPushgateway: a pass pushes the metrics of continuous mode to a
// real Pushgateway, into the group of its job and grouping labels. A failed pass after it
// replaces the counts but leaves the time of the last success as it was, so that an alert
// on it fires; a Pushgateway that cannot be reached is a warning, and the exit status
// stays the pass's, without the URL's password.
func TestMetricsArePushedToAPushgateway(t *testing.T) {
	ns, fin, c := world(t)
	object(t, ns, "gone", fin, "deleted-1", true)
	object(t, ns, "kept", fin, "present-1", true)
	gateway := receiver(t, "pushgateway", "/-/ready")
	group := map[string]string{"job": "kubectl-finalize", "cluster": ns}
	push := []string{"--metrics-push-url", "http://" + gateway, "--metrics-push-grouping", "cluster=" + ns}

	rep, code, stderr := runOnce(t, cli.WritePolicy(t, "", c.Rule("dbs", fin, "")), push...)
	if code != 0 || rep.Summary[finalizev1alpha1.ResultRemoved] != 1 || strings.Contains(stderr, "Warning: pushing") {
		t.Fatalf("code %d, summary %+v, stderr:\n%s", code, rep.Summary, stderr)
	}
	mfs := scrape(t, gateway)
	expect(t, mfs, group, passMetrics(rep)...)
	if v, ok := sample(mfs, "push_time_seconds", group); !ok || v < float64(rep.CompletionTime.Unix()) {
		t.Errorf("push_time_seconds of the group: %v (found %v)", v, ok)
	}
	// No instance label from the pod: one group, whatever pod pushes.
	if _, ok := sample(mfs, "kubectl_finalize_reconcile_passes_total", map[string]string{"instance": ""}); !ok {
		t.Errorf("the pushed series carry an instance label")
	}

	// A failed pass: its counts replace the first pass's; the last success stays.
	typo := failedPass(t, ns)
	laterSecond(rep)
	failed, code, stderr := runOnce(t, cli.WritePolicy(t, "", c.Rule("dbs", fin, "")+c.Rule("typo", typo, "")), push...)
	if code != 1 || strings.Contains(stderr, "Warning: pushing") {
		t.Fatalf("the failed pass: code %d, stderr:\n%s", code, stderr)
	}
	mfs = scrape(t, gateway)
	expect(t, mfs, group,
		series{"kubectl_finalize_reconcile_passes_total", map[string]string{"outcome": "failed"}, 1},
		series{"kubectl_finalize_rule_broken", map[string]string{"rule": "typo"}, 1},
		series{"kubectl_finalize_rule_broken", map[string]string{"rule": "dbs"}, 0},
		series{"kubectl_finalize_reconcile_actions_total", map[string]string{"rule": "typo", "result": "Kept"}, 1},
		series{"kubectl_finalize_reconcile_last_success_timestamp_seconds", nil, float64(rep.CompletionTime.Unix())},
	)
	absent(t, mfs, "kubectl_finalize_reconcile_passes_total", map[string]string{"cluster": ns, "outcome": "ok"})
	if failed.CompletionTime.Unix() <= rep.CompletionTime.Unix() {
		t.Errorf("the failed pass ended at %s, not after the first (%s): the last success cannot be told apart", failed.CompletionTime, rep.CompletionTime)
	}

	// A pass that cannot run at all (its audit log cannot be opened) pushes that too.
	p := start(t, cp.AdminKubeconfig, append([]string{"reconcile", "--once", "--policy", cli.WritePolicy(t, "", c.Rule("dbs", fin, "")),
		"--audit-log", filepath.Join(t.TempDir(), "missing", "audit.jsonl")}, push...)...)
	if code := p.Wait(t, 60*time.Second); code != 1 {
		t.Fatalf("a pass whose audit log cannot be opened: code %d, stderr:\n%s", code, p.Stderr.String())
	}
	mfs = scrape(t, gateway)
	expect(t, mfs, group,
		series{"kubectl_finalize_reconcile_passes_total", map[string]string{"outcome": "error"}, 1},
		series{"kubectl_finalize_reconcile_last_success_timestamp_seconds", nil, float64(rep.CompletionTime.Unix())},
	)
	absent(t, mfs, "kubectl_finalize_reconcile_passes_total", map[string]string{"cluster": ns, "outcome": "failed"})

	// A Pushgateway nobody listens on: a warning, the pass's own exit status, no password.
	rep, code, stderr = runOnce(t, cli.WritePolicy(t, "", c.Rule("dbs", fin, "")),
		"--metrics-push-url", "http://user:s3cret@"+freeAddress(t), "--metrics-push-job", "other")
	if code != 0 || rep == nil || !strings.Contains(stderr, "Warning: pushing the metrics to http://127.0.0.1:") ||
		!strings.Contains(stderr, "the exit status is the pass's") || strings.Contains(stderr, "s3cret") {
		t.Errorf("an unreachable Pushgateway: code %d, stderr:\n%s", code, stderr)
	}
}

// TestMetricsAreWrittenForTheTextfileCollector: a pass writes the metrics of continuous
// mode to a .prom file that a real node_exporter, with only its textfile collector,
// exposes; no temporary file is left beside it. A failed pass after it carries the time
// of the last success over; a file that cannot be written is a warning, and the exit
// status stays the pass's.
func TestMetricsAreWrittenForTheTextfileCollector(t *testing.T) {
	ns, fin, c := world(t)
	object(t, ns, "gone", fin, "deleted-1", true)
	object(t, ns, "kept", fin, "present-1", true)
	dir := t.TempDir()
	exporter := receiver(t, "node_exporter", "/metrics",
		"--collector.disable-defaults", "--collector.textfile", "--collector.textfile.directory="+dir)
	file := filepath.Join(dir, "kubectl-finalize.prom")

	rep, code, stderr := runOnce(t, cli.WritePolicy(t, "", c.Rule("dbs", fin, "")), "--metrics-textfile", file)
	if code != 0 || rep.Summary[finalizev1alpha1.ResultRemoved] != 1 || strings.Contains(stderr, "Warning: writing") {
		t.Fatalf("code %d, summary %+v, stderr:\n%s", code, rep.Summary, stderr)
	}
	mfs := scrape(t, exporter)
	expect(t, mfs, nil, passMetrics(rep)...)
	expect(t, mfs, nil, series{"node_textfile_scrape_error", nil, 0})
	if _, ok := sample(mfs, "node_textfile_mtime_seconds", map[string]string{"file": file}); !ok {
		if _, ok := sample(mfs, "node_textfile_mtime_seconds", map[string]string{"file": "kubectl-finalize.prom"}); !ok {
			t.Errorf("node_exporter does not report the file's mtime")
		}
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the textfile: %v %v; want mode 0644, for a node-exporter of another user", fi, err)
	}

	typo := failedPass(t, ns)
	laterSecond(rep)
	failed, code, stderr := runOnce(t, cli.WritePolicy(t, "", c.Rule("dbs", fin, "")+c.Rule("typo", typo, "")), "--metrics-textfile", file)
	if code != 1 || failed.CompletionTime.Unix() <= rep.CompletionTime.Unix() {
		t.Fatalf("the failed pass: code %d, ended %s (the first: %s), stderr:\n%s", code, failed.CompletionTime, rep.CompletionTime, stderr)
	}
	mfs = scrape(t, exporter)
	expect(t, mfs, nil,
		series{"kubectl_finalize_reconcile_passes_total", map[string]string{"outcome": "failed"}, 1},
		series{"kubectl_finalize_rule_broken", map[string]string{"rule": "typo"}, 1},
		series{"kubectl_finalize_reconcile_last_success_timestamp_seconds", nil, float64(rep.CompletionTime.Unix())},
		series{"node_textfile_scrape_error", nil, 0},
	)
	absent(t, mfs, "kubectl_finalize_reconcile_passes_total", map[string]string{"outcome": "ok"})
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files beside the textfile: %v; want only kubectl-finalize.prom", names)
	}

	// A folder that does not exist: a warning, the pass's own exit status.
	missing := filepath.Join(dir, "missing", "kubectl-finalize.prom")
	if _, code, stderr = runOnce(t, cli.WritePolicy(t, "", c.Rule("dbs", fin, "")), "--metrics-textfile", missing); code != 0 ||
		!strings.Contains(stderr, "Warning: writing the metrics to "+missing) || !strings.Contains(stderr, "the exit status is the pass's") {
		t.Errorf("an unwritable textfile: code %d, stderr:\n%s", code, stderr)
	}
}

// TestMetricDeliveryFlagsAreValidated: bad values are refused before anything runs
// (exit 2), in kubectl's words.
func TestMetricDeliveryFlagsAreValidated(t *testing.T) {
	policy := cli.WritePolicy(t, "", `- name: dbs
  finalizers: [example.com/x]
  verify: {http: {url: "https://127.0.0.1:1/{.metadata.name}"}}
`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics-push-url", "http://127.0.0.1:9091"}, "--metrics-push-url needs --once"},
		{[]string{"--metrics-textfile", "/tmp/x.prom"}, "--metrics-textfile needs --once"},
		{[]string{"--once", "--metrics-push-url", "127.0.0.1:9091"}, "--metrics-push-url must be an http or https URL"},
		{[]string{"--once", "--metrics-push-url", "ftp://127.0.0.1"}, "--metrics-push-url must be an http or https URL"},
		{[]string{"--once", "--metrics-push-url", "http://u:pw@127.0.0.1:9091/metrics/job/x"}, `without /metrics/job/..., a query or a fragment (the job is --metrics-push-job), got "http://u:xxxxx@127.0.0.1:9091/metrics/job/x"`},
		{[]string{"--once", "--metrics-push-job", "x"}, "--metrics-push-job needs --metrics-push-url"},
		{[]string{"--once", "--metrics-push-grouping", "cluster=a"}, "--metrics-push-grouping needs --metrics-push-url"},
		{[]string{"--once", "--metrics-push-url", "http://127.0.0.1:9091", "--metrics-push-job", ""}, "--metrics-push-job must not be empty"},
		{[]string{"--once", "--metrics-push-url", "http://127.0.0.1:9091", "--metrics-push-grouping", "cluster"}, `--metrics-push-grouping must be KEY=VALUE with KEY a Prometheus label name, got "cluster"`},
		{[]string{"--once", "--metrics-push-url", "http://127.0.0.1:9091", "--metrics-push-grouping", "my-cluster=a"}, "KEY a Prometheus label name"},
		{[]string{"--once", "--metrics-push-url", "http://127.0.0.1:9091", "--metrics-push-grouping", "job=a"}, "--metrics-push-grouping cannot set job: use --metrics-push-job"},
		{[]string{"--once", "--metrics-push-url", "http://127.0.0.1:9091", "--metrics-push-grouping", "cluster="}, "--metrics-push-grouping cluster has an empty value"},
		{[]string{"--once", "--metrics-push-url", "http://127.0.0.1:9091", "--metrics-push-grouping", "a=1", "--metrics-push-grouping", "a=2"}, "--metrics-push-grouping sets a more than once"},
		{[]string{"--once", "--metrics-textfile", "/tmp/metrics.txt"}, `--metrics-textfile must name a file ending in .prom, the only files node-exporter's textfile collector reads, got "/tmp/metrics.txt"`},
	} {
		r := cli.Run(t, cp.AdminKubeconfig, append([]string{"reconcile", "--policy", policy}, tc.args...)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("%s: code %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), r.Code, r.Stderr, tc.want)
		}
		if strings.Contains(r.Stderr, "pw@") {
			t.Errorf("%s: the password is shown: %q", strings.Join(tc.args, " "), r.Stderr)
		}
	}
}

// TestAMistypedPushgatewayURLShowsNoPassword: the Pushgateway URL comes from a Secret
// (docs/reconcile.md), so a typo in it (a scheme with one slash, a colon missing, no
// scheme) must not print its password when the flag is refused. Each of these parses,
// without a user: the password is in the path or the opaque part.
func TestAMistypedPushgatewayURLShowsNoPassword(t *testing.T) {
	policy := cli.WritePolicy(t, "", `- name: dbs
  finalizers: [example.com/x]
  verify: {http: {url: "https://127.0.0.1:1/{.metadata.name}"}}
`)
	const password = "s3cretpassw0rd"
	for _, url := range []string{
		"https:/pusher:" + password + "@127.0.0.1:9091",
		"https//pusher:" + password + "@127.0.0.1:9091",
		"pusher:" + password + "@127.0.0.1:9091",
	} {
		r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--policy", policy, "--once", "--metrics-push-url", url)
		if r.Code != 2 || !strings.Contains(r.Stderr, "--metrics-push-url must be an http or https URL") {
			t.Errorf("%s: code %d, stderr %q; want 2 refusing the URL", url, r.Code, r.Stderr)
		}
		if strings.Contains(r.Stdout+r.Stderr, password) {
			t.Errorf("%s: the password is shown: %q", url, r.Stderr)
		}
	}
}
