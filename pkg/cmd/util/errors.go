package util

import (
	"fmt"

	"github.com/spf13/cobra"
)

// exitCodeError carries the exit code main should use for an error.
type exitCodeError struct {
	Code int
	Err  error
	// Silent errors have already been reported (an incomplete scan prints its results
	// and a warning); main only exits with the code.
	Silent bool

	// help usage errors point to the help of command, once it is known.
	help    bool
	command string
}

func (e *exitCodeError) Error() string {
	if e.help && e.command != "" {
		return fmt.Sprintf("%s\nSee '%s -h' for help and examples", e.Err.Error(), e.command)
	}
	return e.Err.Error()
}

func (e *exitCodeError) Unwrap() error { return e.Err }

// FirstError is the first error of a command's checks, in order, or nil.
func FirstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// UsageErrorf reports an invalid invocation, with kubectl's pointer to the help of cmd.
// Validate has no command at hand and passes nil: runCommand names it.
func UsageErrorf(cmd *cobra.Command, format string, args ...any) error {
	e := &exitCodeError{Code: exitUsage, Err: fmt.Errorf(format, args...), help: true}
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
	return &exitCodeError{Code: exitUsage, Err: err}
}

// incompleteError reports that the command printed its result but could not see
// everything. The result and a warning are already on the streams, so main stays quiet.
func incompleteError(err error) error {
	return &exitCodeError{Code: exitIncomplete, Err: err, Silent: true}
}
