package util

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Flag names of the listing flags.
const (
	FlagConcurrency = "concurrency"
	FlagChunkSize   = "chunk-size"
)

// ListFlags are the listing flags every command that scans shares: each lists in pages
// of the same size, the same number of types at a time.
type ListFlags struct {
	Concurrency int
	ChunkSize   int64
}

// NewListFlags returns the listing flags with their defaults.
func NewListFlags() ListFlags {
	return ListFlags{Concurrency: scan.DefaultConcurrency, ChunkSize: scan.DefaultChunkSize}
}

// AddFlags binds the listing flags to cmd.
func (l *ListFlags) AddFlags(cmd *cobra.Command) {
	cmd.Flags().IntVar(&l.Concurrency, FlagConcurrency, l.Concurrency, "How many resource types to list at the same time.")
	cmd.Flags().Int64Var(&l.ChunkSize, FlagChunkSize, l.ChunkSize, "Return large lists in chunks rather than all at once. Pass 0 to disable.")
}

// Validate rejects values that cannot list.
func (l *ListFlags) Validate() error {
	switch {
	case l.Concurrency < 1:
		return UsageErrorf(nil, "--%s must be at least 1, got %d", FlagConcurrency, l.Concurrency)
	case l.ChunkSize < 0:
		return UsageErrorf(nil, "--%s must not be negative, got %d", FlagChunkSize, l.ChunkSize)
	}
	return nil
}

// ScanOptions are scan options with these flags and a progress line on errOut, shown on
// a terminal only. Call the returned function when the scan is over: it erases the line.
func (l *ListFlags) ScanOptions(errOut io.Writer) (scan.Options, func()) {
	progress := NewProgress(errOut)
	return scan.Options{
		Concurrency: l.Concurrency,
		ChunkSize:   l.ChunkSize,
		Progress: func(p scan.Progress) {
			progress.Update(fmt.Sprintf("scanning: %d/%d resource types, %d objects, %d stuck", p.TypesDone, p.TypesTotal, p.ObjectsSeen, p.Stuck), p.TypesDone == p.TypesTotal)
		},
	}, progress.Done
}

// PrintWarnings writes each warning on w.
func PrintWarnings(w io.Writer, warnings []string) {
	for _, msg := range warnings {
		fmt.Fprintf(w, "Warning: %s\n", msg)
	}
}

// IncompleteWarning warns on w about what could not be read and returns the error that
// makes the command exit with status 3, or nil when nothing is missing.
func IncompleteWarning(w io.Writer, incomplete []finalizev1alpha1.IncompleteResource) error {
	if len(incomplete) == 0 {
		return nil
	}
	fmt.Fprintf(w, "Warning: the scan is incomplete; objects of these types may be stuck too:\n")
	for _, in := range incomplete {
		what := in.GroupVersion
		if in.Resource != "" {
			what = schema.FromAPIVersionAndKind(in.GroupVersion, "").GroupVersion().WithResource(in.Resource).GroupResource().String()
		}
		switch {
		case unreachable(in):
			what = fmt.Sprintf("context %s (every type)", in.Cluster)
		case in.Cluster != "":
			what = fmt.Sprintf("context %s: %s", in.Cluster, what)
		}
		fmt.Fprintf(w, "  %s: %s: %s\n", what, in.Reason, in.Message)
	}
	return IncompleteError(errors.New("the scan is incomplete"))
}
