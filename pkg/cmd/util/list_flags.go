package util

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Flag names of the listing flags.
const (
	flagConcurrency = "concurrency"
	flagChunkSize   = "chunk-size"
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
	cmd.Flags().IntVar(&l.Concurrency, flagConcurrency, l.Concurrency, "How many resource types to list at the same time.")
	cmd.Flags().Int64Var(&l.ChunkSize, flagChunkSize, l.ChunkSize, "Return large lists in chunks rather than all at once. Pass 0 to disable.")
}

// Validate rejects values that cannot list.
func (l *ListFlags) Validate() error {
	switch {
	case l.Concurrency < 1:
		return UsageErrorf(nil, "--%s must be at least 1, got %d", flagConcurrency, l.Concurrency)
	case l.ChunkSize < 0:
		return UsageErrorf(nil, "--%s must not be negative, got %d", flagChunkSize, l.ChunkSize)
	}
	return nil
}

// Options are scan options with these flags.
func (l *ListFlags) Options() scan.Options {
	return scan.Options{Concurrency: l.Concurrency, ChunkSize: l.ChunkSize}
}

// ScanOptions are scan options with these flags and a progress line on errOut, shown on
// a terminal only. Call the returned function when the scan is over: it erases the line.
func (l *ListFlags) ScanOptions(errOut io.Writer) (scan.Options, func()) {
	progress := newProgress(errOut)
	opts := l.Options()
	opts.Progress = func(p scan.Progress) {
		progress.Update(fmt.Sprintf("scanning: %d/%d resource types, %d objects, %d stuck", p.TypesDone, p.TypesTotal, p.ObjectsSeen, p.Stuck), p.TypesDone == p.TypesTotal)
	}
	return opts, progress.Done
}
