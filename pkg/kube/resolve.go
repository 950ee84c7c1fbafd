package kube

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ResolveType resolves a kubectl type argument (plural, singular, kind or short name,
// optionally with version and group: "cm", "deployment.apps", "Widget.v1.example.com")
// to its group and resource. A name that two served types answer to ("mirrors", served
// by a.example.com and b.example.com) is an error naming both, unless it is one of them
// as written (RESOURCE.GROUP, or a core type's plural): kubectl would pick one by the
// groups' priority, and an answer about the object of the type it picked is not an
// answer about the object meant.
func ResolveType(mapper meta.RESTMapper, arg string) (schema.GroupResource, error) {
	fullySpecified, gr := schema.ParseResourceArg(arg)
	if fullySpecified != nil {
		if r, err := mapper.ResourceFor(*fullySpecified); err == nil {
			return r.GroupResource(), nil
		}
	}
	if all, _ := mapper.ResourcesFor(gr.WithVersion("")); len(all) > 0 {
		var candidates []schema.GroupResource
		for _, r := range all {
			if !slices.Contains(candidates, r.GroupResource()) {
				candidates = append(candidates, r.GroupResource())
			}
		}
		// A short name two types have is expanded to the first in discovery order: the
		// expander said so to NewRESTMapper's mapper, and the others are candidates too.
		if sn, ok := mapper.(interface{ SharedShortName(string) []string }); ok && gr.Group == "" && len(candidates) == 1 {
			for _, other := range sn.SharedShortName(gr.Resource) {
				if o := schema.ParseGroupResource(other); !slices.Contains(candidates, o) {
					candidates = append(candidates, o)
				}
			}
		}
		switch {
		case len(candidates) == 1:
			return candidates[0], nil
		case slices.ContainsFunc(candidates, func(c schema.GroupResource) bool { return c.String() == arg }):
			return schema.ParseGroupResource(arg), nil
		}
		names := make([]string, len(candidates))
		for i, c := range candidates {
			names[i] = c.String()
		}
		return schema.GroupResource{}, fmt.Errorf("the resource type %q could be any of %s: write the one meant as RESOURCE.GROUP, as kubectl api-resources shows it", arg, strings.Join(names, ", "))
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
