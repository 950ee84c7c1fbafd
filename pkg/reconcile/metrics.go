package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
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
			Help: "When the last pass that completed without a failure ended (exit 0 or 3), in Unix seconds."}),
		brokenRules: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubectl_finalize_rule_broken",
			Help: "1 when the rule's provider called a live object gone in the last pass."}, []string{"rule"}),
		cannotVerify: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubectl_finalize_rule_cannot_verify",
			Help: "1 when the rule could verify nothing in the last pass: its provider cannot run, or every live control answered Unknown."}, []string{"rule"}),
		providerKinds: map[string]string{},
	}
	m.Registry.MustRegister(m.passes, m.removals, m.verdicts, m.duration, m.lastSuccess, m.brokenRules, m.cannotVerify)
	for _, r := range p.Rules {
		kind := "none"
		switch v := r.Spec.Verify; {
		case v.HTTP != nil:
			kind = "http"
		case v.Exec != nil:
			kind = "exec"
		case v.Kubernetes != nil:
			kind = "kubernetes"
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
	if outcome == OutcomeOK || outcome == OutcomeIncomplete {
		m.lastSuccess.Set(float64(rep.CompletionTime.Unix()))
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
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
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
