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
		{"nil", nil, exitOK},
		{"plain error", errors.New("boom"), exitError},
		{"usage", UsageErrorf(nil, "bad flag"), exitUsage},
		{"wrapped usage", fmt.Errorf("context: %w", UsageError(errors.New("x"))), exitUsage},
		{"incomplete", incompleteError(errors.New("partial")), exitIncomplete},
		{"api error", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p"), exitError},
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
		reconcile.OutcomeOK: exitOK, reconcile.OutcomeFailed: exitError,
		reconcile.OutcomeIncomplete: exitIncomplete, reconcile.OutcomeBreaker: exitTooManyRemovals,
	} {
		err := OutcomeError(outcome, "why")
		if got := ExitCode(err); got != want || (err != nil && err.Error() != "why") {
			t.Errorf("%s: exit %d (%v), want %d", outcome, got, err, want)
		}
	}
	if err := OutcomeError("unheard-of", "why"); ExitCode(err) != exitError {
		t.Errorf("an unknown outcome: %v", err)
	}
}
