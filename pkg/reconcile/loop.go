package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// LeaderElection makes replicas take turns: only the holder of the Lease runs passes.
type LeaderElection struct {
	Lock          resourcelock.Interface
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// Loop runs a pass every Interval until its context ends (SIGTERM, SIGINT). The pass in
// hand finishes the object it is removing a finalizer from, then the loop returns nil.
type Loop struct {
	Reconciler *Reconciler
	Interval   time.Duration
	// Metrics, if set, records every pass.
	Metrics *Metrics
	// OnReport receives every pass's report, or the error that stopped it.
	OnReport func(*finalizev1alpha1.ReconcileReport, error)
	// LeaderElection, if set, runs passes only while holding the Lease.
	LeaderElection *LeaderElection
	// Changed, if set, is asked before each pass whether what the passes follow changed
	// since the process read it (the policy file, which a ConfigMap volume updates in
	// place): an error stops the loop, and Run returns it, so that the process exits and
	// starts again on what is there now instead of acting on what is not any more.
	Changed func() error

	cancel context.CancelCauseFunc
}

// ErrPolicyChanged means the policy file changed under a continuous run: it stops, to
// start again on the policy as it is.
var ErrPolicyChanged = errors.New("the policy changed")

// ErrLostLease means another replica took the Lease: this one stops.
var ErrLostLease = errors.New("lost the leader election lease")

// Run runs passes until ctx is done, or Changed says what they follow changed.
func (l *Loop) Run(parent context.Context) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	l.cancel = cancel
	if l.LeaderElection == nil {
		l.passes(ctx)
		return changed(ctx)
	}
	le := l.LeaderElection
	var lost error
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: le.Lock, LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		ReleaseOnCancel: true, Name: "kubectl-finalize",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				klog.InfoS("Took the lease; running passes", "identity", le.Lock.Identity())
				l.passes(leading)
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					lost = fmt.Errorf("%w %s", ErrLostLease, le.Lock.Describe())
				}
			},
			OnNewLeader: func(identity string) {
				if identity != le.Lock.Identity() {
					klog.InfoS("Another replica holds the lease; waiting", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	elector.Run(ctx)
	if err := changed(ctx); err != nil {
		return err
	}
	return lost
}

// changed is the error Changed stopped ctx with, if it did.
func changed(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	return nil
}

// passes runs a pass now and then every Interval, until ctx is done.
func (l *Loop) passes(ctx context.Context) {
	wait.Until(func() {
		if ctx.Err() != nil {
			return
		}
		if l.Changed != nil {
			if err := l.Changed(); err != nil {
				l.cancel(err)
				return
			}
		}
		rep, err := l.Reconciler.Pass(ctx)
		if ctx.Err() != nil && err != nil {
			return // stopped mid-pass: nothing was written after the object in hand
		}
		if l.Metrics != nil {
			l.Metrics.Observe(rep, err)
		}
		if l.OnReport != nil {
			l.OnReport(rep, err)
		}
	}, l.Interval, ctx.Done())
}
