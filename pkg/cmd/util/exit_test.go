package util

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/reconcile"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"plain error", errors.New("boom"), ExitError},
		{"usage", UsageErrorf(nil, "bad flag"), ExitUsage},
		{"wrapped usage", fmt.Errorf("context: %w", UsageError(errors.New("x"))), ExitUsage},
		{"incomplete", IncompleteError(errors.New("partial")), ExitIncomplete},
		{"api error", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p"), ExitError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.err); got != tt.want {
				t.Fatalf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// TestOutcomeError: each outcome of a pass exits with its code, the reason as the message.
func TestOutcomeError(t *testing.T) {
	for outcome, want := range map[reconcile.Outcome]int{
		reconcile.OutcomeOK: ExitOK, reconcile.OutcomeFailed: ExitError,
		reconcile.OutcomeIncomplete: ExitIncomplete, reconcile.OutcomeBreaker: ExitTooManyRemovals,
	} {
		err := OutcomeError(outcome, "why")
		if got := ExitCode(err); got != want || (err != nil && err.Error() != "why") {
			t.Errorf("%s: exit %d (%v), want %d", outcome, got, err, want)
		}
	}
	if err := OutcomeError("unheard-of", "why"); ExitCode(err) != ExitError {
		t.Errorf("an unknown outcome: %v", err)
	}
}
