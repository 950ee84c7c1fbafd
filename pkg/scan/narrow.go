package scan

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// One answer per object: what is said about an object must not depend on how it was
// asked for. A diagnosis reads the whole cluster (Wide) and then keeps the objects that
// were asked for (Narrow): the namespace, the types, the labels, the age and the
// finalizers choose what is shown, not what the causes are measured from.

// Wide is o without what narrows the objects it finds: namespaces, types, label
// selector, age and finalizers. What it reads with (clock, pages, concurrency, pods'
// grace margin, the index, per-type namespaces) is kept.
func (o Options) Wide() Options {
	o.Namespace, o.Namespaces, o.Resources, o.LabelSelector, o.OlderThan, o.Finalizers = "", nil, nil, "", 0, nil
	return o
}

// Narrows reports whether o keeps fewer objects than its Wide.
func (o Options) Narrows() bool {
	return len(o.namespaces()) > 0 || len(o.Resources) > 0 || o.LabelSelector != "" || o.OlderThan > 0 || len(o.Finalizers) > 0
}

// NamespaceLimited reports whether o lists only in some namespaces.
func (o Options) NamespaceLimited() bool { return len(o.namespaces()) > 0 }

// NamespaceList is the namespaces o lists in, or none for every namespace.
func (o Options) NamespaceList() []string { return o.namespaces() }

// Narrow is res as a scan with o would have found it: the stuck objects o keeps, and the
// incomplete reads that could have hidden one of them. Everything else (the index, the
// field managers' activity, the pods, Namespaces and LabelSelector, which say what was
// read) stays that of res. It fails on a label selector that does not parse.
func (res *Result) Narrow(o Options) (*Result, error) {
	sel := labels.Everything()
	if o.LabelSelector != "" {
		var err error
		if sel, err = labels.Parse(o.LabelSelector); err != nil {
			return nil, fmt.Errorf("label selector %q: %w", o.LabelSelector, err)
		}
	}
	out := *res
	out.Objects = nil
	for _, obj := range res.Objects {
		if o.keeps(obj, sel, res) {
			out.Objects = append(out.Objects, obj)
		}
	}
	out.Unreadable = nil
	for _, u := range res.Unreadable {
		if len(o.Resources) > 0 && !slices.Contains(o.Resources, u.Resource.GroupResource()) {
			continue
		}
		if ns := o.namespaces(); len(ns) > 0 && !slices.Contains(ns, u.Namespace) {
			continue
		}
		out.Unreadable = append(out.Unreadable, u)
	}
	selected := map[string]bool{}
	for _, r := range selectResources(res.Resources, o) {
		selected[r.GroupVersion().String()+"/"+r.Resource] = true
	}
	out.Incomplete = nil
	for _, in := range relevantFailures(res.Incomplete, o) {
		// A type that failed to list is one the narrower scan would have listed; a
		// group that failed discovery may hold one.
		if in.Namespace != "" && len(o.namespaces()) > 0 && !slices.Contains(o.namespaces(), in.Namespace) {
			continue
		}
		if in.Resource == "" || selected[in.GroupVersion+"/"+in.Resource] {
			out.Incomplete = append(out.Incomplete, in)
		}
	}
	return &out, nil
}

// keeps applies o's filters to an object res found.
func (o Options) keeps(obj *kube.Object, sel labels.Selector, res *Result) bool {
	if len(o.Resources) > 0 && !slices.Contains(o.Resources, obj.Resource.GroupResource()) {
		return false
	}
	if ns := o.namespaces(); len(ns) > 0 {
		in := obj.Meta.Namespace
		if obj.Resource.IsNamespaces() {
			in = obj.Meta.Name // a namespaced scan still shows the namespace itself
		}
		if in == "" || !slices.Contains(ns, in) {
			return false
		}
	}
	if !sel.Matches(labels.Set(obj.Meta.Labels)) {
		return false
	}
	return keep(&obj.Meta, obj.Namespace, o, res.Now)
}
