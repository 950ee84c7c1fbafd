package util

import (
	"context"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// RegisterConfigFlagCompletion completes -n/--namespace from the cluster, and --context,
// --cluster and --user from the kubeconfig.
func RegisterConfigFlagCompletion(cmd *cobra.Command, f Factory) {
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, err := f.Clients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		list, err := c.Kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var names []string
		for i := range list.Items {
			if name := list.Items[i].Name; strings.HasPrefix(name, toComplete) {
				names = append(names, name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	kubeconfigNames := func(names func(clientcmdapi.Config) []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			raw, err := f.RawConfig()
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			var out []string
			for _, name := range names(raw) {
				if strings.HasPrefix(name, toComplete) {
					out = append(out, name)
				}
			}
			sort.Strings(out)
			return out, cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = cmd.RegisterFlagCompletionFunc("context", kubeconfigNames(func(c clientcmdapi.Config) []string { return keys(c.Contexts) }))
	_ = cmd.RegisterFlagCompletionFunc("cluster", kubeconfigNames(func(c clientcmdapi.Config) []string { return keys(c.Clusters) }))
	_ = cmd.RegisterFlagCompletionFunc("user", kubeconfigNames(func(c clientcmdapi.Config) []string { return keys(c.AuthInfos) }))
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// ResourceTypeCompletion completes resource type arguments ("pods", "deployments.apps")
// from discovery.
func ResourceTypeCompletion(f Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, err := f.Clients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		lists, _ := discovery.ServerPreferredResources(c.Discovery)
		var names []string
		for _, list := range lists {
			gv, err := schema.ParseGroupVersion(list.GroupVersion)
			if err != nil {
				continue
			}
			for i := range list.APIResources {
				name := gv.WithResource(list.APIResources[i].Name).GroupResource().String()
				if strings.HasPrefix(name, toComplete) && !strings.Contains(name, "/") {
					names = append(names, name)
				}
			}
		}
		sort.Strings(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
