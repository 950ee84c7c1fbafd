package util

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
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

// TerminatingCompletion completes the objects a command works on with the objects being
// deleted that still have finalizers: TYPE/NAME, or NAME after a TYPE argument. Without
// a type yet, it completes types.
func TerminatingCompletion(f Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	types := ResourceTypeCompletion(f)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		typ, prefix, slash := strings.Cut(toComplete, "/")
		switch {
		case slash:
		case len(args) > 0 && !strings.Contains(args[0], "/"):
			typ, prefix = args[0], toComplete
		default:
			return types(cmd, args, toComplete)
		}
		objs, err := terminating(f, typ)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []string
		for _, o := range objs {
			if strings.HasPrefix(o.Meta.Name, prefix) {
				if slash {
					out = append(out, typ+"/"+o.Meta.Name)
				} else {
					out = append(out, o.Meta.Name)
				}
			}
		}
		sort.Strings(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// FinalizerCompletion completes --finalizer with the finalizers that objects being deleted
// hold: those of the objects named in args, else of every stuck object in scope.
func FinalizerCompletion(f Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		named, err := objectArgs(args)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		typ := ""
		if len(args) > 0 {
			typ = args[0]
		}
		wanted := map[string]bool{}
		for _, a := range named {
			typ = a.Type
			wanted[a.Name] = true
		}
		objs, err := terminating(f, typ)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		seen := map[string]bool{}
		var out []string
		for _, o := range objs {
			if len(wanted) > 0 && !wanted[o.Meta.Name] {
				continue
			}
			for _, fin := range o.Finalizers {
				if !seen[fin.Name] && strings.HasPrefix(fin.Name, toComplete) {
					seen[fin.Name] = true
					out = append(out, fin.Name)
				}
			}
		}
		sort.Strings(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// terminating scans for stuck objects, of one type when typ is set, in the namespace of
// -n (or the whole cluster without it), within a few seconds.
func terminating(f Factory, typ string) ([]*kube.Object, error) {
	c, err := f.Clients()
	if err != nil {
		return nil, err
	}
	opts := scan.Options{ChunkSize: scan.DefaultChunkSize}
	if ns, explicit, err := f.Namespace(); err == nil && explicit {
		opts.Namespace = ns
	}
	if typ != "" {
		mapper, err := f.RESTMapper()
		if err != nil {
			return nil, err
		}
		gr, err := kube.ResolveType(mapper, typ)
		if err != nil {
			return nil, err
		}
		opts.Resources = []schema.GroupResource{gr}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := (&scan.Scanner{Discovery: c.Discovery, Metadata: c.Metadata, Kube: c.Kube}).Scan(ctx, opts)
	if err != nil {
		return nil, err
	}
	return res.Objects, nil
}
