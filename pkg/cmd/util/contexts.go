package util

import (
	"slices"
	"sort"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
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
		return nil, UsageErrorf(nil, "--%s and --%s/--%s cannot be used together", FlagContext, flagAllContexts, flagContextSelector)
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
			return nil, UsageErrorf(nil, "invalid --%s: %v", flagContextSelector, err)
		}
		names = slices.DeleteFunc(names, func(n string) bool { return !g.Match(n) })
	}
	if len(names) == 0 {
		return nil, UsageErrorf(nil, "no context of the kubeconfig matches --%s %q (kubectl config get-contexts lists them)", flagContextSelector, selector)
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
