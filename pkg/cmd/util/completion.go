package util

import (
	"context"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// RegisterConfigFlagCompletion completes -n/--namespace from the cluster and --context
// and --cluster from the kubeconfig.
func RegisterConfigFlagCompletion(cmd *cobra.Command, f *Factory) {
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		client, err := f.KubeClient()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		list, err := client.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
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
	kubeconfigNames := func(pick func(name string) bool) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			var names []string
			for name := range raw.Contexts {
				if pick(name) && strings.HasPrefix(name, toComplete) {
					names = append(names, name)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = cmd.RegisterFlagCompletionFunc("context", kubeconfigNames(func(string) bool { return true }))
}

// ResourceTypeCompletion completes resource type arguments ("pods", "deployments.apps")
// from discovery.
func ResourceTypeCompletion(f *Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		dc, err := f.DiscoveryClient()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		lists, _ := discovery.ServerPreferredResources(dc)
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
