package scan

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// virtualGroups serve objects computed on every request, never stored: nothing in them can
// carry a finalizer, and listing them is expensive (metrics of every pod).
var virtualGroups = sets.New("metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io")

// aliases are resource types that serve the same stored objects as another type; listing
// both would list every object twice.
var aliases = map[schema.GroupResource]schema.GroupResource{
	{Group: "events.k8s.io", Resource: "events"}: {Resource: "events"},
}

// discovered is the result of the discovery round.
type discovered struct {
	resources  []kube.Resource
	groups     []string
	incomplete []finalizev1alpha1.IncompleteResource
	// names are the other names kubectl accepts for each listed type.
	names map[schema.GroupResource]Names
}

// Names are the names kubectl accepts for a type besides resource.group: its singular
// and its short names, as the API server's discovery gives them.
type Names struct {
	Singular   string
	ShortNames []string
}

// Type is a type a scan lists, and the other names kubectl accepts for it.
type Type struct {
	kube.Resource
	Names
}

// DiscoverTypes is Discover with each type's singular and short names: what a policy may
// name it by. Through a cached client it answers from the same discovery round.
func DiscoverTypes(dc discovery.DiscoveryInterface) ([]Type, []finalizev1alpha1.IncompleteResource, error) {
	d, err := discover(dc)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Type, 0, len(d.resources))
	for _, r := range d.resources {
		out = append(out, Type{Resource: r, Names: d.names[r.GroupResource()]})
	}
	return out, d.incomplete, nil
}

// Discover lists the preferred version of every resource type a scan lists (the
// virtual metrics groups and aliases left out), sorted, and the group versions whose
// discovery failed. Through a cached client it answers from the cache; invalidate it
// first to see the cluster as it is now.
func Discover(dc discovery.DiscoveryInterface) ([]kube.Resource, []finalizev1alpha1.IncompleteResource, error) {
	d, err := discover(dc)
	if err != nil {
		return nil, nil, err
	}
	return d.resources, d.incomplete, nil
}

// discover lists the preferred version of every resource type that can be listed. Group
// versions that fail discovery are reported as incomplete, not fatal.
func discover(dc discovery.DiscoveryInterface) (*discovered, error) {
	lists, err := discovery.ServerPreferredResources(dc)
	d := &discovered{}
	if err != nil {
		var failed *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &failed) {
			return nil, fmt.Errorf("discovering the API resources of the cluster: %w", err)
		}
		for gv, gvErr := range failed.Groups {
			klog.V(1).InfoS("Discovery failed", "groupVersion", gv.String(), "err", gvErr)
			d.incomplete = append(d.incomplete, finalizev1alpha1.IncompleteResource{
				GroupVersion: gv.String(),
				Reason:       finalizev1alpha1.ReasonDiscoveryFailed,
				Message:      gvErr.Error(),
			})
		}
	}
	served := sets.New[schema.GroupResource]()
	d.names = map[schema.GroupResource]Names{}
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			d.incomplete = append(d.incomplete, finalizev1alpha1.IncompleteResource{
				GroupVersion: list.GroupVersion, Reason: finalizev1alpha1.ReasonDiscoveryFailed,
				Message: fmt.Sprintf("unparsable group version: %v", perr),
			})
			continue
		}
		for i := range list.APIResources {
			r := &list.APIResources[i]
			if strings.Contains(r.Name, "/") || !sets.New(r.Verbs...).Has("list") {
				continue
			}
			served.Insert(gv.WithResource(r.Name).GroupResource())
			if virtualGroups.Has(gv.Group) {
				continue
			}
			d.resources = append(d.resources, kube.Resource{GroupVersionResource: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced})
			d.names[gv.WithResource(r.Name).GroupResource()] = Names{Singular: r.SingularName, ShortNames: r.ShortNames}
		}
	}
	kept := d.resources[:0]
	for _, r := range d.resources {
		if alias, ok := aliases[r.GroupResource()]; ok && served.Has(alias) {
			continue
		}
		kept = append(kept, r)
	}
	d.resources = kept
	sort.Slice(d.resources, func(i, j int) bool { return d.resources[i].String() < d.resources[j].String() })

	// The cached client answers from the same discovery round.
	if groups, gerr := dc.ServerGroups(); gerr == nil {
		for i := range groups.Groups {
			d.groups = append(d.groups, groups.Groups[i].Name)
		}
	}
	sortIncomplete(d.incomplete)
	return d, nil
}

func sortIncomplete(list []finalizev1alpha1.IncompleteResource) {
	sort.Slice(list, func(i, j int) bool {
		if list[i].GroupVersion != list[j].GroupVersion {
			return list[i].GroupVersion < list[j].GroupVersion
		}
		return list[i].Resource < list[j].Resource
	})
}
