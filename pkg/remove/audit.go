package remove

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
)

// Audit is where a run records its removals: the audit log, and the user the API server
// knows the client as. It is opened when first needed, once.
type Audit struct {
	// Path, if set, is the file the lines are appended to; otherwise they go to Stderr.
	Path   string
	Stderr io.Writer
	// Warn receives why the user could not be named; the lines then name "<unknown>".
	Warn func(error)

	auditor *write.Auditor
	file    *os.File
}

// Open opens the log and asks who the user is, the first time; later calls return the
// same Auditor. A log that cannot be opened, or that others may write, is an error.
func (a *Audit) Open(ctx context.Context, kube client.Interface) (*write.Auditor, error) {
	if a.auditor != nil {
		return a.auditor, nil
	}
	log := a.Stderr
	if a.Path != "" {
		f, err := write.OpenLog(a.Path)
		if err != nil {
			return nil, err
		}
		a.file, log = f, f
	}
	auditor, err := write.NewAuditor(ctx, kube, log)
	if err != nil && a.Warn != nil {
		a.Warn(fmt.Errorf("%w; the audit names the user as %s", err, auditor.User))
	}
	a.auditor = auditor
	return auditor, nil
}

// Retry lets a new run try the log again after a line failed in an earlier one (see
// write.Auditor.Retry). It does nothing before the log is opened.
func (a *Audit) Retry() error {
	if a.auditor == nil {
		return nil
	}
	return a.auditor.Retry()
}

// Close closes the log file, if one was opened.
func (a *Audit) Close() error {
	if a.file == nil {
		return nil
	}
	return a.file.Close()
}
