package reconcile

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
)

func batchMetrics(t *testing.T) *Metrics {
	t.Helper()
	p, errs, _ := policy.Compile(&finalizev1alpha1.Policy{Rules: []finalizev1alpha1.Rule{{Name: "dbs", Finalizers: []string{"db.example.com/finalizer"},
		Verify: finalizev1alpha1.Verify{HTTP: &finalizev1alpha1.HTTPProvider{URL: "https://db.example.com/{.metadata.name}"}}}}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return NewMetrics(p)
}

var passEnd = time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)

// okPass removed one finalizer; failedPass found rule dbs broken.
func okPass() *finalizev1alpha1.ReconcileReport {
	return &finalizev1alpha1.ReconcileReport{StartTime: metav1.NewTime(passEnd.Add(-2 * time.Second)), CompletionTime: metav1.NewTime(passEnd),
		Actions: []finalizev1alpha1.Removal{{Rule: "dbs", Verdict: finalizev1alpha1.VerdictGone, Result: finalizev1alpha1.ResultRemoved}},
		Summary: map[finalizev1alpha1.RemovalResult]int{finalizev1alpha1.ResultRemoved: 1}, Rules: []finalizev1alpha1.RuleStatus{{Rule: "dbs"}}}
}

func failedPass() *finalizev1alpha1.ReconcileReport {
	return &finalizev1alpha1.ReconcileReport{StartTime: metav1.NewTime(passEnd), CompletionTime: metav1.NewTime(passEnd.Add(time.Hour)),
		Actions: []finalizev1alpha1.Removal{{Rule: "dbs", Verdict: finalizev1alpha1.VerdictGone, Result: finalizev1alpha1.ResultKept}},
		Summary: map[finalizev1alpha1.RemovalResult]int{finalizev1alpha1.ResultKept: 1}, Rules: []finalizev1alpha1.RuleStatus{{Rule: "dbs", Broken: true}}}
}

func parseText(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func lastSuccess(mfs map[string]*dto.MetricFamily) (float64, bool) {
	mf := mfs[LastSuccessMetric]
	if mf == nil || len(mf.GetMetric()) != 1 {
		return 0, false
	}
	return mf.GetMetric()[0].GetGauge().GetValue(), true
}

// TestTheTextfileIsReplacedWhole: the file holds the pass's metrics, readable by a
// node-exporter of another user, and nothing else is left in its folder. A failed pass
// carries the last success over; with no earlier success, the gauge is left out rather
// than written as 0, the start of the epoch.
func TestTheTextfileIsReplacedWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubectl-finalize.prom")

	m := batchMetrics(t)
	m.Observe(failedPass(), nil)
	if err := m.WriteTextfile(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	mfs := parseText(t, f)
	_ = f.Close()
	if v, ok := lastSuccess(mfs); ok {
		t.Errorf("a failed first pass wrote a last success: %v", v)
	}

	m = batchMetrics(t)
	m.Observe(okPass(), nil)
	if err := m.WriteTextfile(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	mfs = parseText(t, strings.NewReader(string(b)))
	if v, ok := lastSuccess(mfs); !ok || v != float64(passEnd.Unix()) {
		t.Errorf("last success %v (%v), want %d:\n%s", v, ok, passEnd.Unix(), b)
	}
	if mf := mfs["kubectl_finalize_reconcile_passes_total"]; mf == nil || mf.GetMetric()[0].GetCounter().GetValue() != 1 {
		t.Errorf("passes_total:\n%s", b)
	}

	for _, observe := range []func(*Metrics){
		func(m *Metrics) { m.Observe(failedPass(), nil) },
		func(m *Metrics) { m.Observe(nil, errors.New("the API server is not answering")) },
	} {
		m = batchMetrics(t)
		observe(m)
		if err := m.WriteTextfile(path); err != nil {
			t.Fatal(err)
		}
		b, _ = os.ReadFile(path)
		mfs = parseText(t, strings.NewReader(string(b)))
		if v, ok := lastSuccess(mfs); !ok || v != float64(passEnd.Unix()) {
			t.Errorf("after a failure, last success %v (%v), want %d carried over:\n%s", v, ok, passEnd.Unix(), b)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v), want 0644", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the folder, want the textfile alone", len(entries))
	}

	// A folder that cannot be written: an error naming the file; the old file stays.
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	if os.Geteuid() != 0 {
		if err := m.WriteTextfile(path); err == nil || !strings.Contains(err.Error(), "writing the metrics to "+path) {
			t.Errorf("an unwritable folder: %v", err)
		}
	}
	if err := m.WriteTextfile(filepath.Join(dir, "missing", "x.prom")); err == nil {
		t.Errorf("a missing folder: no error")
	}
}

// pushgateway records what a Pushgateway is sent.
type pushgateway struct {
	mu      sync.Mutex
	method  string
	path    string
	user    string
	pass    string
	metrics map[string]*dto.MetricFamily
}

func (g *pushgateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.method, g.path = r.Method, r.URL.Path
	g.user, g.pass, _ = r.BasicAuth()
	g.metrics = map[string]*dto.MetricFamily{}
	dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			break
		}
		g.metrics[mf.GetName()] = mf
	}
	if strings.Contains(r.URL.Path, "refuse") {
		http.Error(w, "refused", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// TestPushReplacesOnlyWhatItSends: a POST to the group of the job and the grouping labels,
// with basic auth from the URL. A failed pass sends no last success, so that the
// Pushgateway keeps the time of the one before; an error never shows the password.
func TestPushReplacesOnlyWhatItSends(t *testing.T) {
	g := &pushgateway{}
	srv := httptest.NewServer(g)
	defer srv.Close()
	withAuth := strings.Replace(srv.URL, "http://", "http://finalize:s3cret@", 1)

	m := batchMetrics(t)
	m.Observe(okPass(), nil)
	if err := m.Push(t.Context(), PushOptions{URL: withAuth + "/", Grouping: map[string]string{"cluster": "prod", "a": "b/c"}}); err != nil {
		t.Fatal(err)
	}
	if g.method != http.MethodPost || (g.path != "/metrics/job/kubectl-finalize/a@base64/Yi9j/cluster/prod" && g.path != "/metrics/job/kubectl-finalize/cluster/prod/a@base64/Yi9j") || g.user != "finalize" || g.pass != "s3cret" {
		t.Errorf("%s %s as %s:%s", g.method, g.path, g.user, g.pass)
	}
	if v, ok := lastSuccess(g.metrics); !ok || v != float64(passEnd.Unix()) {
		t.Errorf("last success %v (%v)", v, ok)
	}
	for _, name := range []string{"kubectl_finalize_reconcile_passes_total", "kubectl_finalize_reconcile_actions_total", "kubectl_finalize_provider_verdicts_total",
		"kubectl_finalize_reconcile_pass_duration_seconds", "kubectl_finalize_rule_broken", "kubectl_finalize_rule_cannot_verify"} {
		if g.metrics[name] == nil {
			t.Errorf("%s was not pushed", name)
		}
	}

	m = batchMetrics(t)
	m.Observe(failedPass(), nil)
	if err := m.Push(t.Context(), PushOptions{URL: srv.URL, Job: "finalize-prod"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := lastSuccess(g.metrics); ok || g.path != "/metrics/job/finalize-prod" {
		t.Errorf("a failed pass pushed a last success, to %s", g.path)
	}
	if mf := g.metrics["kubectl_finalize_rule_broken"]; mf == nil || mf.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Errorf("rule_broken: %v", mf)
	}

	err := m.Push(t.Context(), PushOptions{URL: withAuth, Job: "refuse"})
	if err == nil || !strings.Contains(err.Error(), "pushing the metrics to "+srv.URL) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a refused push: %v", err)
	}
}

// TestMetricsShowNoRegisteredValue: metrics leave the process through one gatherer, which
// REDACTs every label value registered with the redactor: the textfile, a push and
// /metrics alike.
func TestMetricsShowNoRegisteredValue(t *testing.T) {
	const secret = "unit-metrics-rule-t0ken"
	if err := redact.Register(secret); err != nil {
		t.Fatal(err)
	}
	p, errs, _ := policy.Compile(&finalizev1alpha1.Policy{Rules: []finalizev1alpha1.Rule{{Name: secret, Finalizers: []string{"db.example.com/finalizer"},
		Verify: finalizev1alpha1.Verify{HTTP: &finalizev1alpha1.HTTPProvider{URL: "https://db.example.com/{.metadata.name}"}}}}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	m := NewMetrics(p)
	rep := okPass()
	rep.Actions[0].Rule = secret
	m.Observe(rep, nil)
	path := filepath.Join(t.TempDir(), "kubectl-finalize.prom")
	if err := m.WriteTextfile(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b = append(b, body...)
	}))
	defer srv.Close()
	if err := m.Push(t.Context(), PushOptions{URL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "t0ken") || !strings.Contains(string(b), `kubectl_finalize_rule_broken{rule="REDACTED"} 0`) {
		t.Errorf("the metrics:\n%s", b)
	}
}
