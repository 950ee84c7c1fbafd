package util

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command (DESIGN §2). They are a contract with scripts and
// CronJobs, so they are named here once and mapped to errors in one place.
const (
	// ExitOK means the command did what was asked.
	ExitOK = 0
	// ExitError is a runtime failure: the API server is unreachable, a removal failed.
	ExitError = 1
	// ExitUsage is an invalid invocation: flags, arguments or a policy file.
	ExitUsage = 2
	// ExitIncomplete means the command finished, but some resource types could not be
	// discovered or listed, so its answer may be missing objects.
	ExitIncomplete = 3
	// ExitTooManyRemovals means reconcile refused to act because its plan exceeded
	// --max-removals.
	ExitTooManyRemovals = 4
)

// ExitCodeError carries the exit code main should use for an error.
type ExitCodeError struct {
	Code int
	Err  error
	// Silent errors have already been reported (an incomplete scan prints its results
	// and a warning); main only exits with the code.
	Silent bool

	// help usage errors point to the help of command, once it is known.
	help    bool
	command string
}

func (e *ExitCodeError) Error() string {
	if e.help && e.command != "" {
		return fmt.Sprintf("%s\nSee '%s -h' for help and examples", e.Err.Error(), e.command)
	}
	return e.Err.Error()
}

func (e *ExitCodeError) Unwrap() error { return e.Err }

// UsageErrorf reports an invalid invocation, with kubectl's pointer to the help of cmd.
// Validate has no command at hand and passes nil: RunCommand names it.
func UsageErrorf(cmd *cobra.Command, format string, args ...any) error {
	e := &ExitCodeError{Code: ExitUsage, Err: fmt.Errorf(format, args...), help: true}
	if cmd != nil {
		e.command = cmd.CommandPath()
	}
	return e
}

// UsageError marks err as an invalid invocation (exit code 2) without changing its text.
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	return &ExitCodeError{Code: ExitUsage, Err: err}
}

// IncompleteError reports that the command printed its result but could not see
// everything. The result and a warning are already on the streams, so main stays quiet.
func IncompleteError(err error) error {
	return &ExitCodeError{Code: ExitIncomplete, Err: err, Silent: true}
}

// ExitCode is the process exit code for err.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ec *ExitCodeError
	if errors.As(err, &ec) {
		return ec.Code
	}
	return ExitError
}
