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
}

// ErrLostLease means another replica took the Lease: this one stops.
var ErrLostLease = errors.New("lost the leader election lease")

// Run runs passes until ctx is done.
func (l *Loop) Run(ctx context.Context) error {
	if l.LeaderElection == nil {
		l.passes(ctx)
		return nil
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
	return lost
}

// passes runs a pass now and then every Interval, until ctx is done.
func (l *Loop) passes(ctx context.Context) {
	wait.Until(func() {
		if ctx.Err() != nil {
			return
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
