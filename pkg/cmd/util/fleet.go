package util

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/fleet"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
)

// Flag names of the fleet flags.
const (
	FlagContext            = "context"
	FlagAllContexts        = "all-contexts"
	FlagContextSelector    = "context-selector"
	FlagClusterConcurrency = "cluster-concurrency"
	FlagClusterTimeout     = "cluster-timeout"
)

// Fleet is a Factory that can read other kubeconfig contexts than its own.
type Fleet interface {
	// Contexts are the contexts --context named (in order, each once), or with all every
	// context of the kubeconfig, narrowed by selector (a glob) when it is set.
	Contexts(all bool, selector string) ([]string, error)
	// ForContext is a Factory for context name, every other flag the same.
	ForContext(name string) Factory
}

// contextValue is --context: given once it is kubectl's flag; given again, every value
// is kept, for the commands that read several clusters.
type contextValue struct{ f *ConfigFactory }

func (v *contextValue) String() string { return *v.f.ConfigFlags.Context }
func (v *contextValue) Type() string   { return "string" }
func (v *contextValue) Set(s string) error {
	v.f.contexts = append(v.f.contexts, s)
	*v.f.ConfigFlags.Context = s
	return nil
}

// multiContext makes the --context flag of fs keep every value given.
func (f *ConfigFactory) multiContext(fs *pflag.FlagSet) {
	if fl := fs.Lookup(FlagContext); fl != nil && f.ConfigFlags.Context != nil {
		fl.Value = &contextValue{f: f}
		fl.Usage = "The name of the kubeconfig context to use. scan and doctor take it more than once, to read several clusters."
	}
}

// distinctContexts are the --context values, in order, each once.
func (f *ConfigFactory) distinctContexts() []string {
	var out []string
	for _, c := range f.contexts {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Contexts implements Fleet.
func (f *ConfigFactory) Contexts(all bool, selector string) ([]string, error) {
	given := f.distinctContexts()
	if !all && selector == "" {
		if len(given) < 2 {
			return given, nil
		}
	} else if len(given) > 0 {
		return nil, UsageErrorf(nil, "--%s and --%s/--%s cannot be used together", FlagContext, FlagAllContexts, FlagContextSelector)
	}
	for _, fl := range []struct {
		name  string
		value *string
	}{{"server", f.ConfigFlags.APIServer}, {"cluster", f.ConfigFlags.ClusterName}, {"user", f.ConfigFlags.AuthInfoName}} {
		if fl.value != nil && *fl.value != "" {
			return nil, UsageErrorf(nil, "--%s overrides one context; it cannot be used to read several clusters", fl.name)
		}
	}
	raw, err := f.RawConfig()
	if err != nil {
		return nil, err
	}
	if len(given) > 0 {
		for _, c := range given {
			if _, ok := raw.Contexts[c]; !ok {
				return nil, UsageErrorf(nil, "context %q is not in the kubeconfig (kubectl config get-contexts lists them)", c)
			}
		}
		return given, nil
	}
	var names []string
	for name := range raw.Contexts {
		names = append(names, name)
	}
	sort.Strings(names)
	if selector != "" {
		g, err := glob.Compile(selector)
		if err != nil {
			return nil, UsageErrorf(nil, "invalid --%s: %v", FlagContextSelector, err)
		}
		names = slices.DeleteFunc(names, func(n string) bool { return !g.Match(n) })
	}
	if len(names) == 0 {
		return nil, UsageErrorf(nil, "no context of the kubeconfig matches --%s %q (kubectl config get-contexts lists them)", FlagContextSelector, selector)
	}
	return names, nil
}

// ForContext implements Fleet: the same flags, another context.
func (f *ConfigFactory) ForContext(name string) Factory {
	src := f.ConfigFlags
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig, flags.Namespace, flags.Timeout = src.KubeConfig, src.Namespace, src.Timeout
	flags.CertFile, flags.KeyFile, flags.CAFile, flags.BearerToken = src.CertFile, src.KeyFile, src.CAFile, src.BearerToken
	flags.Impersonate, flags.ImpersonateUID, flags.ImpersonateGroup = src.Impersonate, src.ImpersonateUID, src.ImpersonateGroup
	flags.Username, flags.Password, flags.Insecure, flags.TLSServerName = src.Username, src.Password, src.Insecure, src.TLSServerName
	flags.DisableCompression = src.DisableCompression
	flags.Context = &name
	return &ConfigFactory{ConfigFlags: flags, QPS: f.QPS, Burst: f.Burst, contexts: []string{name}}
}

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
	fs.BoolVar(&ff.AllContexts, FlagAllContexts, ff.AllContexts, "If true, read the cluster of every context of the kubeconfig. Each object then names its cluster (its context).")
	fs.StringVar(&ff.ContextSelector, FlagContextSelector, ff.ContextSelector, "Read the clusters of the kubeconfig contexts whose names match this glob ('*' matches any text), e.g. 'prod-*'.")
	fs.IntVar(&ff.Concurrency, FlagClusterConcurrency, ff.Concurrency, "How many clusters to read at the same time.")
	fs.DurationVar(&ff.Timeout, FlagClusterTimeout, ff.Timeout, "How long to wait for each cluster; one that takes longer is reported as incomplete.")
}

// Validate rejects bounds that cannot read.
func (ff *FleetFlags) Validate() error {
	switch {
	case ff.Concurrency < 1:
		return UsageErrorf(nil, "--%s must be at least 1, got %d", FlagClusterConcurrency, ff.Concurrency)
	case ff.Timeout <= 0:
		return UsageErrorf(nil, "--%s must be positive, got %s", FlagClusterTimeout, ff.Timeout)
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
			return nil, UsageErrorf(nil, "--%s needs a kubeconfig", FlagAllContexts)
		}
		return nil, nil
	}
	return fl.Contexts(ff.AllContexts, ff.ContextSelector)
}

// RunFleet reads every cluster through a factory of its own, as ff bounds them, with a
// progress line on errOut that counts clusters done (on a terminal only). It returns what
// each cluster gave, and every cluster's warnings, each prefixed with its context.
func RunFleet[T any](ctx context.Context, f Factory, clusters []string, ff *FleetFlags, errOut io.Writer, verb string,
	read func(ctx context.Context, f Factory) (T, []string, error)) ([]fleet.Result[T], []string) {
	progress := NewProgress(errOut)
	defer progress.Done()
	opts := fleet.Options{Concurrency: ff.Concurrency, Timeout: ff.Timeout, OnDone: func(done, total int, _ string) {
		progress.Update(fmt.Sprintf("%s: %d/%d clusters done", verb, done, total), done == total)
	}}
	var mu sync.Mutex
	var warnings []string
	results := fleet.Run(ctx, clusters, opts, func(ctx context.Context, cluster string) (T, error) {
		v, w, err := read(ctx, f.(Fleet).ForContext(cluster))
		mu.Lock()
		defer mu.Unlock()
		for _, msg := range w {
			warnings = append(warnings, fmt.Sprintf("context %s: %s", cluster, msg))
		}
		return v, err
	})
	return results, warnings
}

// unreachable names the clusters that could not be read, for the incomplete warning.
func unreachable(in finalizev1alpha1.IncompleteResource) bool {
	return in.Reason == finalizev1alpha1.ReasonClusterUnreachable
}
