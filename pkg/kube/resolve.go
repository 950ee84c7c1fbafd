package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ResolveType resolves a kubectl type argument (plural, singular, kind or short name,
// optionally with version and group: "cm", "deployment.apps", "Widget.v1.example.com")
// to its group and resource.
func ResolveType(mapper meta.RESTMapper, arg string) (schema.GroupResource, error) {
	fullySpecified, gr := schema.ParseResourceArg(arg)
	if fullySpecified != nil {
		if r, err := mapper.ResourceFor(*fullySpecified); err == nil {
			return r.GroupResource(), nil
		}
	}
	if r, err := mapper.ResourceFor(gr.WithVersion("")); err == nil {
		return r.GroupResource(), nil
	}
	gvk, gk := schema.ParseKindArg(arg)
	if gvk != nil {
		if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			return m.Resource.GroupResource(), nil
		}
	}
	if m, err := mapper.RESTMapping(gk); err == nil {
		return m.Resource.GroupResource(), nil
	}
	return schema.GroupResource{}, fmt.Errorf("the server doesn't have a resource type %q", arg)
}

// ResolveResource resolves a kubectl type argument to the resource a command works on:
// its preferred version, kind and scope.
func ResolveResource(mapper meta.RESTMapper, arg string) (Resource, error) {
	gr, err := ResolveType(mapper, arg)
	if err != nil {
		return Resource{}, err
	}
	gvr, err := mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		return Resource{}, err
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return Resource{}, err
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return Resource{}, err
	}
	return Resource{GroupVersionResource: gvr, Kind: gvk.Kind, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}, nil
}
