package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAChangedPolicyStopsTheLoop: when Changed says the policy changed, the loop runs no
// pass under it and Run returns why, so that the process starts again on the policy as
// it is; a loop stopped by its context returns nil.
func TestAChangedPolicyStopsTheLoop(t *testing.T) {
	stale := errors.New("policy.yaml changed since the run started")
	// No Reconciler: a pass would panic.
	l := &Loop{Interval: time.Hour, Changed: func() error { return stale }}
	if err := l.Run(t.Context()); !errors.Is(err, stale) {
		t.Errorf("Run = %v, want %v", err, stale)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	l = &Loop{Interval: time.Hour, Changed: func() error { return nil }}
	if err := l.Run(ctx); err != nil {
		t.Errorf("Run of a stopped context = %v, want nil", err)
	}
}
