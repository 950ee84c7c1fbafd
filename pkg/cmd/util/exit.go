package util

import (
	"errors"
	"fmt"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/reconcile"
)

// Exit codes shared by every command (docs/reference/kubectl_finalize.md lists them).
// They are a contract with scripts and CronJobs, so they are named here once, and the
// outcomes of the domain are mapped to them in one table, exitCodes.
const (
	// exitOK means the command did what was asked.
	exitOK = 0
	// exitError is a runtime failure: the API server is unreachable, a removal failed.
	exitError = 1
	// exitUsage is an invalid invocation: flags, arguments or a policy file.
	exitUsage = 2
	// exitIncomplete means the command finished, but some resource types could not be
	// discovered or listed, so its answer may be missing objects.
	exitIncomplete = 3
	// exitTooManyRemovals means reconcile refused to act because its plan exceeded
	// --max-removals.
	exitTooManyRemovals = 4
)

// exitCodes are the exit codes of the typed outcomes of the domain.
var exitCodes = map[reconcile.Outcome]int{
	reconcile.OutcomeOK:         exitOK,
	reconcile.OutcomeFailed:     exitError,
	reconcile.OutcomeIncomplete: exitIncomplete,
	reconcile.OutcomeBreaker:    exitTooManyRemovals,
}

// OutcomeError is the error a command returns for a pass that ended with outcome, for
// reason: nil when all is well, else an error that exits with the outcome's code.
func OutcomeError(outcome reconcile.Outcome, reason string) error {
	code, ok := exitCodes[outcome]
	switch {
	case !ok:
		return fmt.Errorf("unknown outcome %q: %s", outcome, reason)
	case code == exitOK:
		return nil
	}
	return &exitCodeError{Code: code, Err: errors.New(reason)}
}

// ExitCode is the process exit code for err.
func ExitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ec *exitCodeError
	if errors.As(err, &ec) {
		return ec.Code
	}
	return exitError
}
