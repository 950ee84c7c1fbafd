package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
)

// Metrics are what continuous mode exposes on /metrics. Labels stay few: rule names and
// results come from the policy, never from objects.
type Metrics struct {
	Registry *prometheus.Registry

	passes        *prometheus.CounterVec
	removals      *prometheus.CounterVec
	verdicts      *prometheus.CounterVec
	duration      prometheus.Histogram
	lastSuccess   prometheus.Gauge
	brokenRules   *prometheus.GaugeVec
	cannotVerify  *prometheus.GaugeVec
	providerKinds map[string]string
	healthy       atomic.Bool
	// succeeded is set once a pass observed did its whole job (exit 0).
	succeeded atomic.Bool
}

// NewMetrics registers the metrics of passes of policy p.
func NewMetrics(p *policy.Policy) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubectl_finalize_reconcile_passes_total",
			Help: "Reconcile passes, by outcome: ok, incomplete, failed, breaker, error."}, []string{"outcome"}),
		removals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubectl_finalize_reconcile_actions_total",
			Help: "Matched finalizers, by rule and result (Removed, WouldRemove, Kept, Failed, TooYoung, ...)."}, []string{"rule", "result"}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubectl_finalize_provider_verdicts_total",
			Help: "Provider verdicts, by rule, provider kind and verdict."}, []string{"rule", "provider", "verdict"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kubectl_finalize_reconcile_pass_duration_seconds",
			Help: "How long a pass takes.", Buckets: prometheus.ExponentialBuckets(0.1, 2, 14)}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubectl_finalize_reconcile_last_success_timestamp_seconds",
			Help: "When the last pass that did its whole job ended (exit 0: no failure, every type listed), in Unix seconds."}),
		brokenRules: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubectl_finalize_rule_broken",
			Help: "1 when the rule's provider called a live object gone in the last pass."}, []string{"rule"}),
		cannotVerify: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubectl_finalize_rule_cannot_verify",
			Help: "1 when the rule could verify nothing in the last pass: its provider cannot run, or every live control answered Unknown."}, []string{"rule"}),
		providerKinds: map[string]string{},
	}
	m.Registry.MustRegister(m.passes, m.removals, m.verdicts, m.duration, m.lastSuccess, m.brokenRules, m.cannotVerify)
	for _, r := range p.Rules {
		kind := "none"
		if spec := provider.Of(&r.Spec.Verify); spec != nil {
			kind = spec.Kind()
		}
		m.providerKinds[r.Name] = kind
		m.brokenRules.WithLabelValues(r.Name).Set(0)
		m.cannotVerify.WithLabelValues(r.Name).Set(0)
	}
	m.healthy.Store(true)
	return m
}

// Observe records one pass: its report, or the error that stopped it.
func (m *Metrics) Observe(rep *finalizev1alpha1.ReconcileReport, err error) {
	if err != nil || rep == nil {
		m.passes.WithLabelValues("error").Inc()
		return
	}
	m.duration.Observe(rep.CompletionTime.Sub(rep.StartTime.Time).Seconds())
	outcome, _ := OutcomeOf(rep)
	m.passes.WithLabelValues(string(outcome)).Inc()
	// Only a pass that did its whole job is a success: one that could not list some of
	// the types it should have (incomplete, exit 3) left their stuck objects unseen,
	// and in continuous mode, which has no exit status, this time is the only signal
	// that stops moving.
	if outcome == OutcomeOK {
		m.lastSuccess.Set(float64(rep.CompletionTime.Unix()))
		m.succeeded.Store(true)
	}
	for _, a := range rep.Actions {
		m.removals.WithLabelValues(a.Rule, string(a.Result)).Inc()
		if a.Verdict != "" {
			m.verdicts.WithLabelValues(a.Rule, m.providerKinds[a.Rule], string(a.Verdict)).Inc()
		}
	}
	for _, st := range rep.Rules {
		broken := 0.0
		if st.Broken {
			broken = 1
		}
		m.brokenRules.WithLabelValues(st.Rule).Set(broken)
		cannot := 0.0
		if st.CannotVerify != "" {
			cannot = 1
		}
		m.cannotVerify.WithLabelValues(st.Rule).Set(cannot)
	}
}

// Serve serves /metrics and /healthz on addr until ctx is done.
func (m *Metrics) Serve(ctx context.Context, addr string) (net.Addr, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(redacted(m.Registry), promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !m.healthy.Load() {
			http.Error(w, "not healthy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serving metrics on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.healthy.Store(false)
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	return lis.Addr(), nil
}

// LastSuccessMetric is the gauge an alert on passes that stopped succeeding reads.
const LastSuccessMetric = "kubectl_finalize_reconcile_last_success_timestamp_seconds"

// DefaultPushJob is the Pushgateway job a pass pushes to unless told otherwise.
const DefaultPushJob = "kubectl-finalize"

// PushOptions say where a pass that nobody can scrape pushes its metrics.
type PushOptions struct {
	// URL is the Pushgateway's base URL (http or https), without /metrics/job/...; a
	// user and password in it are sent as basic auth and never shown.
	URL string
	// Job and Grouping are the group's key. No instance label: a CronJob's pods have
	// a new name every run, and one group per run would pile up in the Pushgateway.
	Job      string
	Grouping map[string]string
	// Timeout bounds the push; 0 means 10 seconds.
	Timeout time.Duration
}

// Push sends the metrics of the pass observed to a Pushgateway, into the group of Job and
// Grouping. It replaces only the metric families it sends (POST), and sends the
// last-success timestamp only when the pass succeeded: after a failed pass, the
// Pushgateway keeps the time of the last pass that did succeed, so that an alert on that
// time fires.
func (m *Metrics) Push(ctx context.Context, o PushOptions) error {
	u, err := url.Parse(o.URL)
	if err != nil {
		// url.Parse's error quotes the URL, and its password with it.
		return fmt.Errorf("pushing the metrics: the URL does not parse: %s", redact.UnparsedURL(o.URL))
	}
	user := u.User
	u.User = nil
	if password, ok := user.Password(); ok && redact.Long(password) {
		// The Pushgateway's password is registered with the redactor, should an error
		// repeat it. It comes from a flag, not a secret source: a shorter one is not
		// refused, and is shown nowhere by this code (u.Redacted()).
		_ = redact.Register(password) // long enough: it cannot fail
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	job := o.Job
	if job == "" {
		job = DefaultPushJob
	}
	p := push.New(u.String(), job).Gatherer(m.batch(nil)).Client(&http.Client{Timeout: timeout})
	if user != nil {
		password, _ := user.Password()
		p = p.BasicAuth(user.Username(), password)
	}
	for k, v := range o.Grouping {
		p = p.Grouping(k, v)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := p.AddContext(ctx); err != nil {
		return fmt.Errorf("pushing the metrics to %s: %w", u.Redacted(), err)
	}
	return nil
}

// WriteTextfile writes the metrics of the pass observed for node-exporter's textfile
// collector: to a temporary file in the same directory, synced, then renamed over path,
// so that the collector never reads half a file. After a failed pass the last-success
// timestamp is carried over from the file being replaced (it is left out when that file
// has none), so that an alert on that time fires.
func (m *Metrics) WriteTextfile(path string) error {
	var carried *float64
	if !m.succeeded.Load() {
		carried = lastSuccessIn(path)
	}
	mfs, err := m.batch(carried).Gather()
	if err != nil {
		return fmt.Errorf("writing the metrics to %s: %w", path, err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			return fmt.Errorf("writing the metrics to %s: %w", path, err)
		}
	}
	// The collector reads only *.prom: the temporary file's name ends otherwise.
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing the metrics to %s: %w", path, err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	// node-exporter runs as a user of its own: the file must be readable by others.
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("writing the metrics to %s: %w", path, err)
	}
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing the metrics to %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing the metrics to %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the metrics to %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing the metrics to %s: %w", path, err)
	}
	done = true
	return nil
}

// redacted is g with every label value REDACTED of the values registered with the
// redactor: the one way metrics leave the process (/metrics, a push, a textfile).
func redacted(g prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		for _, mf := range mfs {
			for _, metric := range mf.GetMetric() {
				for _, l := range metric.GetLabel() {
					if v := redact.String(l.GetValue()); v != l.GetValue() {
						l.Value = &v
					}
				}
			}
		}
		return mfs, err
	})
}

// batch gathers the metrics of a pass for a receiver that keeps them after the process
// exits. The last-success timestamp is there only when a pass succeeded; otherwise it is
// carried when carried is set, and left out when not.
func (m *Metrics) batch(carried *float64) prometheus.Gatherer {
	return redacted(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := m.Registry.Gather()
		if err != nil || m.succeeded.Load() {
			return mfs, err
		}
		out := mfs[:0]
		for _, mf := range mfs {
			if mf.GetName() != LastSuccessMetric {
				out = append(out, mf)
				continue
			}
			if carried != nil && len(mf.GetMetric()) == 1 && mf.GetMetric()[0].GetGauge() != nil {
				mf.GetMetric()[0].GetGauge().Value = carried
				out = append(out, mf)
			}
		}
		return out, nil
	}))
}

// lastSuccessIn reads the last-success timestamp of a textfile an earlier pass wrote; nil
// when there is none or it cannot be read.
func lastSuccessIn(path string) *float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	for line := range strings.Lines(string(b)) {
		value, ok := strings.CutPrefix(strings.TrimSpace(line), LastSuccessMetric+" ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil && v > 0 {
			return &v
		}
	}
	return nil
}
