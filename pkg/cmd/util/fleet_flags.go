package util

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/fleet"
)

// Flag names of the fleet flags.
const (
	FlagContext            = "context"
	flagAllContexts        = "all-contexts"
	flagContextSelector    = "context-selector"
	flagClusterConcurrency = "cluster-concurrency"
	flagClusterTimeout     = "cluster-timeout"
)

// FleetFlags choose the clusters scan and doctor read, and bound the reading of each.
type FleetFlags struct {
	AllContexts     bool
	ContextSelector string
	Concurrency     int
	Timeout         time.Duration
}

// NewFleetFlags returns the fleet flags with their defaults.
func NewFleetFlags() FleetFlags {
	return FleetFlags{Concurrency: fleet.DefaultConcurrency, Timeout: fleet.DefaultTimeout}
}

// AddFlags binds the fleet flags to cmd.
func (ff *FleetFlags) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVar(&ff.AllContexts, flagAllContexts, ff.AllContexts, "If true, read the cluster of every context of the kubeconfig. Each object then names its cluster (its context).")
	fs.StringVar(&ff.ContextSelector, flagContextSelector, ff.ContextSelector, "Read the clusters of the kubeconfig contexts whose names match this glob ('*' matches any text), e.g. 'prod-*'.")
	fs.IntVar(&ff.Concurrency, flagClusterConcurrency, ff.Concurrency, "How many clusters to read at the same time.")
	fs.DurationVar(&ff.Timeout, flagClusterTimeout, ff.Timeout, "How long to wait for each cluster; one that takes longer is reported as incomplete.")
}

// Validate rejects bounds that cannot read.
func (ff *FleetFlags) Validate() error {
	switch {
	case ff.Concurrency < 1:
		return UsageErrorf(nil, "--%s must be at least 1, got %d", flagClusterConcurrency, ff.Concurrency)
	case ff.Timeout <= 0:
		return UsageErrorf(nil, "--%s must be positive, got %s", flagClusterTimeout, ff.Timeout)
	}
	return nil
}

// Resolve chooses what a command reads. More than one cluster means a fleet run: the
// command calls RunFleet with f and them. Otherwise the command reads one cluster through
// the factory returned: the context a selection chose, or f as it was given.
func (ff *FleetFlags) Resolve(f Factory) (Factory, []string, error) {
	clusters, err := ff.clusters(f)
	if err != nil {
		return nil, nil, err
	}
	if len(clusters) == 1 && (ff.AllContexts || ff.ContextSelector != "") {
		f = f.(Fleet).ForContext(clusters[0])
	}
	return f, clusters, nil
}

// clusters are the contexts the flags name, none for the factory's own.
func (ff *FleetFlags) clusters(f Factory) ([]string, error) {
	fl, ok := f.(Fleet)
	if !ok {
		if ff.AllContexts || ff.ContextSelector != "" {
			return nil, UsageErrorf(nil, "--%s needs a kubeconfig", flagAllContexts)
		}
		return nil, nil
	}
	return fl.Contexts(ff.AllContexts, ff.ContextSelector)
}
