// Package reconcile is the `kubectl finalize reconcile` command.
package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/printer"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/reconcile"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
)

const long = `Remove, unattended, the finalizers a policy's providers verify: for a CronJob (--once)
or a Deployment.

A pass scans the types and namespaces the policy's rules can match, matches every
finalizer of every object being deleted against the rules (first rule wins, exclude
wins over every rule), reads the full object of each match, asks the rule's provider
whether the external resource is gone, plans, and removes only what was verified: one
guarded, pinned, audited removal at a time, through the same code as "remove".

It never surprises anyone:

  * objects terminating for less than the rule's minAge are TooYoung: not verified, left
    to their controller;
  * only Gone removes; Present, Unknown and a rule whose provider called a live object
    gone (broken) keep the finalizer;
  * when the plan holds more removals than --max-removals (default: the policy's, else
    20), the breaker trips before the first write and nothing is removed;
  * a namespace's kubernetes finalizer is never removed while the namespace may hold
    objects; system finalizers only where a rule says allowSystem and its provider said
    Gone;
  * before the first write the pass asks the API server for each permission it needs;
    an action without them fails by name, and is not attempted;
  * every removal leaves an Event on the object and two JSON audit lines (stderr, or
    --audit-log): its intent, synced before the write, then its record; when a line
    cannot be written, that removal fails, no other starts, and the pass exits 1;
  * a rule that cannot verify (its provider cannot run, or every live control answered
    Unknown) fails the pass (exit 1), so a CronJob that does nothing is not green.

Without --once, a pass runs every --interval until SIGTERM or SIGINT; the removal in
hand finishes first. With --leader-elect, replicas take turns through a Lease, so two
replicas never both act. /metrics and /healthz are served on --metrics-bind-address.

A pass run with --once lives for seconds and cannot be scraped: it can push the same
metrics to a Prometheus Pushgateway (--metrics-push-url), and write them as a
node-exporter textfile (--metrics-textfile). A push or a write that fails is a warning
and never changes the exit status: the exit status is the pass's, and an alert on
kubectl_finalize_reconcile_last_success_timestamp_seconds fires when the metrics stop
arriving as when the passes stop succeeding (docs/reconcile.md).

Exit status, in order of precedence:
  4  the breaker tripped: the plan exceeded --max-removals; nothing was removed
  1  a removal failed, a rule's provider is broken, or the pass could not run
  3  the scan was incomplete; what could be verified was still acted on
  2  invalid invocation or policy
  0  done`

// defaultWriteConcurrency is how many objects a pass writes at once by default: enough
// that a 10 ms round trip is not the limit, few enough that a pass never holds more than
// a handful of writes against a busy API server (docs/performance.md).
const defaultWriteConcurrency = 4

const example = `  # One pass, as a CronJob runs it
  kubectl finalize reconcile --once --policy /etc/kubectl-finalize/policy.yaml

  # Roll out a policy: verify and print the plan, write nothing
  kubectl finalize reconcile --once --policy policy.yaml --dry-run

  # One pass that pushes its metrics to a Pushgateway, grouped by cluster
  kubectl finalize reconcile --once --policy policy.yaml --metrics-push-url http://pushgateway.monitoring:9091 --metrics-push-grouping cluster=prod

  # One pass that leaves its metrics for node-exporter's textfile collector
  kubectl finalize reconcile --once --policy policy.yaml --metrics-textfile /var/lib/node-exporter/textfile/kubectl-finalize.prom

  # The report of a pass as JSON, the audit lines in a file
  kubectl finalize reconcile --once --policy policy.yaml -o json --audit-log audit.jsonl

  # Continuously, in a Deployment with two replicas
  kubectl finalize reconcile --policy policy.yaml --interval 15m --leader-elect --metrics-bind-address :8080`

// Flag names.
const (
	flagPolicy             = "policy"
	flagOnce               = "once"
	flagDryRun             = "dry-run"
	flagMaxRemovals        = "max-removals"
	flagAuditLog           = "audit-log"
	flagInterval           = "interval"
	flagLeaderElect        = "leader-elect"
	flagLeaderElectName    = "leader-elect-name"
	flagLeaderElectNS      = "leader-elect-namespace"
	flagMetricsBindAddress = "metrics-bind-address"
	flagMetricsPushURL     = "metrics-push-url"
	flagMetricsPushJob     = "metrics-push-job"
	flagMetricsPushGroup   = "metrics-push-grouping"
	flagMetricsTextfile    = "metrics-textfile"
	flagVerifyConcurrency  = "verify-concurrency"
	flagWriteConcurrency   = "write-concurrency"
	flagPodGraceMargin     = "pod-grace-margin"
)

// Options are the options of the reconcile command.
type Options struct {
	PolicyFile           string
	Once                 bool
	DryRun               bool
	MaxRemovals          int
	AuditLog             string
	Interval             time.Duration
	LeaderElect          bool
	LeaderElectName      string
	LeaderElectNamespace string
	MetricsBindAddress   string
	MetricsPushURL       string
	MetricsPushJob       string
	MetricsPushGrouping  []string
	MetricsTextfile      string
	VerifyConcurrency    int
	WriteConcurrency     int
	PodGraceMargin       time.Duration
	PrintFlags           *util.PrintFlags
	ListFlags            util.ListFlags

	clients     *client.Clients
	mapper      meta.RESTMapper
	policy      *policy.Policy
	policyText  []byte
	namespace   string
	intervalSet bool
	// pushJobSet is set when --metrics-push-job was given.
	pushJobSet bool
	// grouping is --metrics-push-grouping, parsed by Validate.
	grouping map[string]string

	genericiooptions.IOStreams
}

// NewOptions returns the options with their defaults.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{
		Interval: 15 * time.Minute, LeaderElectName: "kubectl-finalize", MetricsBindAddress: ":8080", MetricsPushJob: reconcile.DefaultPushJob,
		VerifyConcurrency: plan.DefaultVerifyConcurrency, WriteConcurrency: defaultWriteConcurrency, ListFlags: util.NewListFlags(),
		PodGraceMargin: plan.DefaultPodGraceMargin,
		PrintFlags:     util.NewResultPrintFlags("Output format: a table (default), or one of (json, yaml): the ReconcileReport."), IOStreams: streams,
	}
}

// NewCmdReconcile returns the reconcile command.
func NewCmdReconcile(f util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return util.NewCommand(f, NewOptions(streams), &cobra.Command{
		Use:     "reconcile --policy FILE [--once] [flags]",
		Short:   "Remove provider-verified finalizers unattended, in a CronJob (--once) or a Deployment",
		Long:    long,
		Example: example,
		Args:    util.NoArgs,
	})
}

// AddFlags binds the flags to cmd.
func (o *Options) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&o.PolicyFile, flagPolicy, o.PolicyFile, "The policy: which finalizers may be removed, and which provider verifies each (required).")
	fs.BoolVar(&o.Once, flagOnce, o.Once, "If true, run one pass and exit with its status, as a CronJob does. Otherwise run a pass every --interval until stopped.")
	fs.BoolVar(&o.DryRun, flagDryRun, o.DryRun, "If true, verify and print the plan, and write nothing.")
	fs.IntVar(&o.MaxRemovals, flagMaxRemovals, o.MaxRemovals, "Remove nothing when a pass plans more removals than this. 0 means the policy's maxRemovals (default 20).")
	fs.StringVar(&o.AuditLog, flagAuditLog, o.AuditLog, "Append the JSON audit lines to this file instead of stderr.")
	fs.DurationVar(&o.Interval, flagInterval, o.Interval, "Without --once, how long to wait between passes.")
	fs.BoolVar(&o.LeaderElect, flagLeaderElect, o.LeaderElect, "If true, take a coordination.k8s.io Lease before each pass, so that only one replica acts.")
	fs.StringVar(&o.LeaderElectName, flagLeaderElectName, o.LeaderElectName, "The name of the Lease.")
	fs.StringVar(&o.LeaderElectNamespace, flagLeaderElectNS, o.LeaderElectNamespace, "The namespace of the Lease; default: the namespace of the kubeconfig context (in a pod, its own).")
	fs.StringVar(&o.MetricsBindAddress, flagMetricsBindAddress, o.MetricsBindAddress, `Without --once, where to serve /metrics and /healthz; "0" turns them off.`)
	fs.StringVar(&o.MetricsPushURL, flagMetricsPushURL, o.MetricsPushURL, "With --once, push the pass's metrics to the Prometheus Pushgateway at this base URL (http or https, without /metrics/job/...). A failed push is a warning; the exit status stays the pass's.")
	fs.StringVar(&o.MetricsPushJob, flagMetricsPushJob, o.MetricsPushJob, "The job label of the Pushgateway group the metrics are pushed to.")
	fs.StringArrayVar(&o.MetricsPushGrouping, flagMetricsPushGroup, o.MetricsPushGrouping, "A KEY=VALUE label added to the Pushgateway group's key, such as cluster=prod; repeat for more. No instance label: each run would leave a group behind.")
	fs.StringVar(&o.MetricsTextfile, flagMetricsTextfile, o.MetricsTextfile, "With --once, write the pass's metrics to this file for node-exporter's textfile collector (the name must end in .prom), atomically: a temporary file in the same directory, renamed. A failed write is a warning; the exit status stays the pass's.")
	fs.IntVar(&o.VerifyConcurrency, flagVerifyConcurrency, o.VerifyConcurrency, "How many verifications to run at the same time.")
	fs.IntVar(&o.WriteConcurrency, flagWriteConcurrency, o.WriteConcurrency, "How many objects to remove finalizers from at the same time. The finalizers of one object are removed one after another.")
	fs.DurationVar(&o.PodGraceMargin, flagPodGraceMargin, o.PodGraceMargin, "List a pod whose deletion still waits for its kubelet this long after its grace period ended; a rule with waitsForNode force-deletes no pod before it.")
	o.PrintFlags.AddFlags(cmd)
	o.ListFlags.AddFlags(cmd)
	_ = cmd.MarkFlagFilename(flagPolicy, "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename(flagMetricsTextfile, "prom")
}

// Complete loads the policy and resolves the clients.
func (o *Options) Complete(f util.Factory, cmd *cobra.Command, _ []string) error {
	o.intervalSet = cmd.Flags().Changed(flagInterval)
	o.pushJobSet = cmd.Flags().Changed(flagMetricsPushJob)
	if o.PolicyFile == "" {
		return util.UsageErrorf(nil, "--%s is required: reconcile removes only what a policy's providers verify", flagPolicy)
	}
	var err error
	// The text the passes follow, to tell when the file changes under a long run.
	if o.policyText, err = os.ReadFile(o.PolicyFile); err != nil {
		return util.UsageError(fmt.Errorf("reading the policy: %w", err))
	}
	if o.policy, err = policy.Load(o.PolicyFile); err != nil {
		return util.UsageError(err)
	}
	util.PrintWarnings(o.ErrOut, o.policy.Warnings)
	if o.namespace, _, err = f.Namespace(); err != nil {
		return err
	}
	if o.clients, err = f.Clients(); err != nil {
		return err
	}
	o.mapper, err = f.RESTMapper()
	return err
}

// Validate rejects bad flag values and combinations.
func (o *Options) Validate() error {
	switch {
	case o.MaxRemovals < 0:
		return util.UsageErrorf(nil, "--%s must not be negative, got %d", flagMaxRemovals, o.MaxRemovals)
	case o.VerifyConcurrency < 1:
		return util.UsageErrorf(nil, "--%s must be at least 1, got %d", flagVerifyConcurrency, o.VerifyConcurrency)
	case o.WriteConcurrency < 1:
		return util.UsageErrorf(nil, "--%s must be at least 1, got %d", flagWriteConcurrency, o.WriteConcurrency)
	case o.PodGraceMargin <= 0:
		return util.UsageErrorf(nil, "--%s must be positive, got %s", flagPodGraceMargin, o.PodGraceMargin)
	case o.Once && o.LeaderElect:
		return util.UsageErrorf(nil, "--%s and --%s cannot be used together: a single pass has nobody to take turns with", flagOnce, flagLeaderElect)
	case o.Once && o.intervalSet:
		return util.UsageErrorf(nil, "--%s and --%s cannot be used together", flagOnce, flagInterval)
	case !o.Once && o.Interval < time.Second:
		return util.UsageErrorf(nil, "--%s must be at least 1s, got %s", flagInterval, o.Interval)
	}
	if err := o.validateMetricsDelivery(); err != nil {
		return err
	}
	if err := o.PrintFlags.Validate(); err != nil {
		return err
	}
	return o.ListFlags.Validate()
}

// labelName is a Prometheus label name a Pushgateway accepts in a group's key.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// validateMetricsDelivery checks the flags that deliver a single pass's metrics.
func (o *Options) validateMetricsDelivery() error {
	push := o.MetricsPushURL != ""
	switch {
	case !o.Once && push:
		return util.UsageErrorf(nil, "--%s needs --%s: in continuous mode Prometheus scrapes /metrics (--%s)", flagMetricsPushURL, flagOnce, flagMetricsBindAddress)
	case !o.Once && o.MetricsTextfile != "":
		return util.UsageErrorf(nil, "--%s needs --%s: in continuous mode Prometheus scrapes /metrics (--%s)", flagMetricsTextfile, flagOnce, flagMetricsBindAddress)
	case !push && (o.pushJobSet || len(o.MetricsPushGrouping) > 0):
		flag := flagMetricsPushJob
		if !o.pushJobSet {
			flag = flagMetricsPushGroup
		}
		return util.UsageErrorf(nil, "--%s needs --%s", flag, flagMetricsPushURL)
	case o.MetricsTextfile != "" && (!strings.HasSuffix(o.MetricsTextfile, ".prom") || strings.HasSuffix(o.MetricsTextfile, "/.prom")):
		return util.UsageErrorf(nil, "--%s must name a file ending in .prom, the only files node-exporter's textfile collector reads, got %q", flagMetricsTextfile, o.MetricsTextfile)
	}
	if !push {
		return nil
	}
	u, err := url.Parse(o.MetricsPushURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return util.UsageErrorf(nil, "--%s must be an http or https URL such as http://pushgateway:9091, got %q", flagMetricsPushURL, redacted(o.MetricsPushURL, u))
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.Contains(u.Path, "/metrics/job") {
		return util.UsageErrorf(nil, "--%s must be the Pushgateway's base URL, without /metrics/job/..., a query or a fragment (the job is --%s), got %q",
			flagMetricsPushURL, flagMetricsPushJob, u.Redacted())
	}
	if o.MetricsPushJob == "" {
		return util.UsageErrorf(nil, "--%s must not be empty", flagMetricsPushJob)
	}
	o.grouping = map[string]string{}
	for _, kv := range o.MetricsPushGrouping {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || !labelName.MatchString(k) || strings.HasPrefix(k, "__"):
			return util.UsageErrorf(nil, "--%s must be KEY=VALUE with KEY a Prometheus label name, got %q", flagMetricsPushGroup, kv)
		case k == "job":
			return util.UsageErrorf(nil, "--%s cannot set job: use --%s", flagMetricsPushGroup, flagMetricsPushJob)
		case v == "":
			return util.UsageErrorf(nil, "--%s %s has an empty value", flagMetricsPushGroup, k)
		}
		if _, dup := o.grouping[k]; dup {
			return util.UsageErrorf(nil, "--%s sets %s more than once", flagMetricsPushGroup, k)
		}
		o.grouping[k] = v
	}
	return nil
}

// redacted shows a URL without its password. One that does not parse as a URL with a
// host (a scheme with one slash, none at all) may hold its password outside its user
// part: what stands before its '@' is not shown.
func redacted(raw string, u *url.URL) string {
	if u == nil || u.Host == "" {
		return redact.UnparsedURL(raw)
	}
	return u.Redacted()
}

// deliverMetrics pushes and writes the metrics of a single pass, as asked. A failure is a
// warning: the exit status stays the pass's (docs/reconcile.md, "Metrics of a CronJob").
func (o *Options) deliverMetrics(ctx context.Context, rep *finalizev1alpha1.ReconcileReport, passErr error) {
	if o.MetricsPushURL == "" && o.MetricsTextfile == "" {
		return
	}
	m := reconcile.NewMetrics(o.policy)
	m.Observe(rep, passErr)
	if o.MetricsPushURL != "" {
		// A pass stopped by SIGTERM still reports how it ended.
		if err := m.Push(context.WithoutCancel(ctx), reconcile.PushOptions{URL: o.MetricsPushURL, Job: o.MetricsPushJob, Grouping: o.grouping}); err != nil {
			fmt.Fprintf(o.ErrOut, "Warning: %v; the exit status is the pass's\n", err)
		}
	}
	if o.MetricsTextfile != "" {
		if err := m.WriteTextfile(o.MetricsTextfile); err != nil {
			fmt.Fprintf(o.ErrOut, "Warning: %v; the exit status is the pass's\n", err)
		}
	}
}

// Run runs one pass, or passes until stopped.
func (o *Options) Run(ctx context.Context) error {
	r, closeLog, err := o.reconciler(ctx)
	if err != nil {
		if o.Once {
			o.deliverMetrics(ctx, nil, err) // the pass could not run: outcome "error"
		}
		return err
	}
	defer closeLog()
	if o.Once {
		rep, err := r.Pass(ctx)
		if err != nil {
			o.deliverMetrics(ctx, nil, err)
			// A rule resource that could name two types: the policy must say which.
			var unresolved *reconcile.UnresolvedError
			if errors.As(err, &unresolved) {
				return util.UsageError(err)
			}
			return err
		}
		perr := o.print(rep)
		o.deliverMetrics(ctx, rep, nil)
		if perr != nil {
			return perr
		}
		return o.outcome(rep)
	}
	loop := &reconcile.Loop{Reconciler: r, Interval: o.Interval, Changed: o.policyChanged, OnReport: func(rep *finalizev1alpha1.ReconcileReport, err error) {
		if err != nil {
			fmt.Fprintf(o.ErrOut, "error: the pass failed: %v\n", err)
			return
		}
		if perr := o.print(rep); perr != nil {
			fmt.Fprintf(o.ErrOut, "error: %v\n", perr)
		}
		if oerr := o.outcome(rep); oerr != nil {
			util.PrintError(o.ErrOut, oerr)
		}
	}}
	if o.MetricsBindAddress != "0" && o.MetricsBindAddress != "" {
		loop.Metrics = reconcile.NewMetrics(o.policy)
		addr, err := loop.Metrics.Serve(ctx, o.MetricsBindAddress)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.ErrOut, "Serving /metrics and /healthz on %s\n", addr)
	}
	if o.LeaderElect {
		if loop.LeaderElection, err = o.leaderElection(); err != nil {
			return err
		}
	}
	err = loop.Run(ctx)
	if err == nil {
		fmt.Fprintln(o.ErrOut, "Stopped.")
	}
	return err
}

// policyChanged says when the policy file no longer holds the text the passes follow: a
// ConfigMap mounted as a volume is updated in place, and a continuous run must not go
// on removing under rules that are not there any more. The run then stops, and its
// container starts again on the policy as it is now. A file that cannot be read stops
// it too: the run cannot tell what the policy is.
func (o *Options) policyChanged() error {
	now, err := os.ReadFile(o.PolicyFile)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s cannot be read: %w", reconcile.ErrPolicyChanged, o.PolicyFile, err)
	case !bytes.Equal(now, o.policyText):
		return fmt.Errorf("%w: %s changed since the run started; stopping, to start again on it", reconcile.ErrPolicyChanged, o.PolicyFile)
	}
	return nil
}

// reconciler builds the reconciler, with its auditor unless this is a dry run.
func (o *Options) reconciler(ctx context.Context) (*reconcile.Reconciler, func(), error) {
	opts, done := o.ListFlags.ScanOptions(o.ErrOut)
	r := &reconcile.Reconciler{Clients: o.clients, Options: reconcile.Options{
		Policy: o.policy, DryRun: o.DryRun, MaxRemovals: o.MaxRemovals, Scan: opts, VerifyConcurrency: o.VerifyConcurrency, WriteConcurrency: o.WriteConcurrency,
		PodGraceMargin: o.PodGraceMargin,
		Providers:      provider.Options{Dynamic: o.clients.Dynamic, Mapper: o.mapper},
		Warn:           func(err error) { done(); fmt.Fprintf(o.ErrOut, "Warning: %v\n", err) },
	}}
	if o.DryRun {
		// A dry run writes no audit line, and fails where the pass it stands for would.
		if o.AuditLog != "" {
			if err := write.CheckLog(o.AuditLog); err != nil {
				return nil, nil, err
			}
		}
		return r, func() {}, nil
	}
	// Opened now, once: a log that cannot be written fails the command before any pass,
	// and every pass records to it.
	audit := &write.Audit{Path: o.AuditLog, Stderr: o.ErrOut, Warn: func(err error) { fmt.Fprintf(o.ErrOut, "Warning: %v\n", err) }}
	if _, err := audit.Open(ctx, o.clients.Kube); err != nil {
		return nil, nil, err
	}
	r.Audit = audit
	return r, func() { _ = audit.Close() }, nil
}

func (o *Options) leaderElection() (*reconcile.LeaderElection, error) {
	ns := o.LeaderElectNamespace
	if ns == "" {
		ns = o.namespace
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, o.LeaderElectName, o.clients.Kube.CoreV1(), o.clients.Kube.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: leaseIdentity()})
	if err != nil {
		return nil, err
	}
	return &reconcile.LeaderElection{Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}, nil
}

// leaseIdentity is this process's name in the Lease: the hostname for a reader, and a
// UUID that makes it unique, as kube-controller-manager's is. hostname_pid was not: two
// replicas with the host's network on one node share its hostname and both run as PID 1,
// so each took the other's Lease for its own.
func leaseIdentity() string {
	host, _ := os.Hostname()
	return host + "_" + string(uuid.NewUUID())
}

// print writes the report: a table, or the ReconcileReport as JSON or YAML.
func (o *Options) print(rep *finalizev1alpha1.ReconcileReport) error {
	for _, st := range rep.Rules {
		for _, w := range st.Warnings {
			fmt.Fprintf(o.ErrOut, "Warning: rule %s: %s\n", st.Rule, w)
		}
		if st.Distrust == "" {
			continue
		}
		what := "was not trusted"
		if st.Broken {
			what = "is BROKEN"
		}
		fmt.Fprintf(o.ErrOut, "Warning: rule %s %s: %s\n", st.Rule, what, st.Distrust)
	}
	if !o.PrintFlags.Default() {
		return o.PrintFlags.PrintObject(rep, o.Out)
	}
	if len(rep.Actions) == 0 {
		fmt.Fprintf(o.ErrOut, "No stuck object has a finalizer the policy's rules match (%s).\n", passTime(rep))
	} else if err := printer.Removals(o.Out, rep.Actions, printer.RemovalTableOptions{Results: true}); err != nil {
		return err
	}
	fmt.Fprintf(o.ErrOut, "%s%s: %s.\n", dryRun(rep), passTime(rep), summary(rep))
	return nil
}

func dryRun(rep *finalizev1alpha1.ReconcileReport) string {
	if rep.DryRun {
		return "Dry run, "
	}
	return "Pass, "
}

func passTime(rep *finalizev1alpha1.ReconcileReport) string {
	return "in " + duration.HumanDuration(rep.CompletionTime.Sub(rep.StartTime.Time))
}

// summary counts the results in a fixed order.
func summary(rep *finalizev1alpha1.ReconcileReport) string {
	var parts []string
	for _, r := range []finalizev1alpha1.RemovalResult{finalizev1alpha1.ResultRemoved, finalizev1alpha1.ResultWouldRemove, finalizev1alpha1.ResultAlreadyRemoved,
		finalizev1alpha1.ResultObjectGone, finalizev1alpha1.ResultKept, finalizev1alpha1.ResultTooYoung, finalizev1alpha1.ResultFailed} {
		if n := rep.Summary[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
	}
	if len(parts) == 0 {
		return "nothing to do"
	}
	return strings.Join(parts, ", ")
}

// outcome is the pass's exit status as an error, nil when all is well.
func (o *Options) outcome(rep *finalizev1alpha1.ReconcileReport) error {
	outcome, reason := reconcile.OutcomeOf(rep)
	if outcome == reconcile.OutcomeIncomplete {
		// The scan's warning names each type it could not read.
		return util.IncompleteWarning(o.ErrOut, rep.Incomplete)
	}
	return util.OutcomeError(outcome, reason)
}
