package preflight

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// apiServiceService: an APIService that stays, whose service the deletion removes.
type apiServiceService struct{}

func (apiServiceService) reasons() []Reason {
	return []Reason{{
		Name: finalizev1alpha1.HazardAPIServiceServiceDeleted, Rank: 0,
		Help:    "an APIService stays while its service is deleted: no namespace in the cluster can finish deleting then",
		Deleted: "the service of an APIService (or the only workload behind it) while the APIService stays",
		Stranded: "the APIService becomes unavailable: no namespace in the cluster can finish deleting, and the garbage collector " +
			"cannot be sure of its group; it strands the namespaces of the deletion",
	}}
}

func (apiServiceService) find(r *run) []finalizev1alpha1.Hazard {
	var out []finalizev1alpha1.Hazard
	r.eachAPIService(func(u *unstructured.Unstructured) {
		ref := apiServicesResource.Ref("", u.GetName(), u.GetUID())
		ns, _, _ := unstructured.NestedString(u.Object, "spec", "service", "namespace")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "service", "name")
		if name == "" || r.set.has(ref) || r.already(finalizev1alpha1.HazardAPIServiceUnavailable, ref) {
			return
		}
		why := r.serviceGone(types.NamespacedName{Namespace: ns, Name: name})
		if why == "" {
			return
		}
		hz := finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardAPIServiceServiceDeleted, Cause: ref, Objects: []finalizev1alpha1.ObjectReference{}}
		for n := range r.set.namespaces {
			hz.Objects = append(hz.Objects, r.namespaceRef(n))
		}
		sortRefs(hz.Objects)
		hz.Message = fmt.Sprintf("APIService %s stays, but %s: it becomes unavailable, and then no namespace in the cluster can finish deleting (the namespace controller must list every type) and the garbage collector cannot be sure of its group",
			u.GetName(), why)
		hz.SafeOrder = append([]string{fmt.Sprintf("delete the APIService first: kubectl delete %s", ref.ResourceName())}, r.finalSteps()...)
		out = append(out, hz)
	})
	return out
}

// already reports whether a hazard of reason was found with cause ref: an APIService
// already unavailable is not also one that becomes unavailable.
func (r *run) already(reason string, ref finalizev1alpha1.ObjectReference) bool {
	for _, h := range r.rep.Hazards {
		if h.Reason == reason && h.Cause.GroupResource() == ref.GroupResource() && h.Cause.Name == ref.Name {
			return true
		}
	}
	return false
}

// eachAPIService calls fn with every APIService, listed once per run (two families read
// them); a list that fails makes the prediction incomplete once.
func (r *run) eachAPIService(fn func(*unstructured.Unstructured)) {
	if !r.apiServicesListed {
		r.apiServicesListed = true
		res := r.p.Clients.Dynamic.Resource(apiServicesResource.GroupVersionResource)
		r.each(apiServicesResource.GroupVersionResource, func(opts metav1.ListOptions) (runtime.Object, error) {
			return res.List(r.ctx, opts)
		}, func(obj runtime.Object) {
			r.apiServices = append(r.apiServices, obj.(*unstructured.Unstructured))
		})
	}
	for _, u := range r.apiServices {
		fn(u)
	}
}
