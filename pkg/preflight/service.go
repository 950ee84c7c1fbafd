package preflight

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// Whether a deletion takes a service away.

// serviceGone says how the deletion takes a service away: the service is deleted, or
// every workload whose pods it selects is; "" when it stays served, or does not exist
// now (then the deletion changes nothing).
func (r *run) serviceGone(key types.NamespacedName) string {
	if why, ok := r.gone[key]; ok {
		return why
	}
	why := r.serviceGoneUncached(key)
	if r.gone == nil {
		r.gone = map[types.NamespacedName]string{}
	}
	r.gone[key] = why
	return why
}

func (r *run) serviceGoneUncached(key types.NamespacedName) string {
	ref, ok := r.kept.services[key]
	switch {
	case !ok:
		return ""
	case r.set.has(ref):
		return fmt.Sprintf("its service %s is deleted", key)
	}
	var deleted []finalizev1alpha1.ObjectReference
	var all []finalizev1alpha1.ObjectReference
	for _, w := range r.kept.workloads {
		if w.Namespace != key.Namespace {
			continue
		}
		all = append(all, w)
		if r.set.has(w) {
			deleted = append(deleted, w)
		}
	}
	if len(deleted) == 0 {
		return ""
	}
	// A read that fails leaves the question open: the prediction is incomplete, never safe.
	svc, err := r.p.Clients.Kube.CoreV1().Services(key.Namespace).Get(r.ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			r.incomplete(serviceGR.WithVersion("v1"), fmt.Errorf("reading service %s to tell which workload serves it: %w", key, err))
		}
		return ""
	}
	if len(svc.Spec.Selector) == 0 {
		return ""
	}
	selector := labels.SelectorFromSet(svc.Spec.Selector)
	var backing []finalizev1alpha1.ObjectReference
	sortRefs(all)
	for _, w := range all {
		u, err := r.p.Clients.Dynamic.Resource(w.GroupResource().WithVersion("v1")).Namespace(w.Namespace).Get(r.ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				r.incomplete(w.GroupResource().WithVersion("v1"), fmt.Errorf("reading %s to tell whether it serves service %s: %w", w, key, err))
				return ""
			}
			continue
		}
		tl, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
		if !selector.Matches(labels.Set(tl)) {
			continue
		}
		if !r.set.has(w) {
			return "" // a workload that stays serves it
		}
		backing = append(backing, w)
	}
	if len(backing) == 0 {
		return ""
	}
	var names []string
	for _, w := range backing {
		names = append(names, w.ResourceName())
	}
	return fmt.Sprintf("the pods of its service %s are those of %s, which the deletion removes", key, strings.Join(names, ", "))
}
