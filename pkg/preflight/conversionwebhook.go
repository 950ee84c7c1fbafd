package preflight

import (
	"fmt"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/admission"
	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// conversionWebhook: a CRD that stays, whose conversion webhook's service the deletion
// removes; or a CRD deleted with objects its conversion webhook must read.
type conversionWebhook struct{}

// reasons: none of its own; it gives webhookService's WebhookServiceDeleted.
func (conversionWebhook) reasons() []Reason { return nil }

func (conversionWebhook) find(r *run) []finalizev1alpha1.Hazard {
	var out []finalizev1alpha1.Hazard
	res := r.p.Clients.Dynamic.Resource(crdsResource.GroupVersionResource)
	r.each(crdsResource.GroupVersionResource, func(opts metav1.ListOptions) (runtime.Object, error) {
		return res.List(r.ctx, opts)
	}, func(obj runtime.Object) {
		u := obj.(*unstructured.Unstructured)
		ref := crdsResource.Ref("", u.GetName(), u.GetUID())
		deleted := r.set.has(ref)
		if r.already(finalizev1alpha1.HazardConversionWebhookUnavailable, ref) {
			// It fails already: that is the hazard, whatever the deletion takes away.
			return
		}
		if strategy, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "strategy"); strategy != "Webhook" {
			return
		}
		stored, _, _ := unstructured.NestedStringSlice(u.Object, "status", "storedVersions")
		resource, group, _ := strings.Cut(u.GetName(), ".")
		gr := schema.GroupResource{Group: group, Resource: resource}
		// A CRD deleted with objects some of which may be stored at another version than
		// its storage version: deleting them reads them at the storage version, through
		// the webhook.
		if deleted && (len(stored) < 2 || r.kept.ofType[gr] == 0) {
			return
		}
		versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		if len(versions) < 2 {
			return
		}
		ns, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "service", "namespace")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "service", "name")
		url, hasURL, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "url")
		var svc *admissionregistrationv1.ServiceReference
		if name != "" {
			svc = &admissionregistrationv1.ServiceReference{Namespace: ns, Name: name}
		}
		var urlp *string
		if hasURL {
			urlp = &url
		}
		key, ok := admission.Service(svc, urlp)
		if !ok {
			return
		}
		why := r.serviceGone(key)
		if why == "" {
			return
		}
		if deleted {
			ref = r.crdRef(u.GetName())
			out = append(out, finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardWebhookServiceDeleted, Cause: ref, Objects: []finalizev1alpha1.ObjectReference{ref},
				Message: fmt.Sprintf("CRD %s is deleted with %s of its objects, stored at versions %s, and its conversion webhook loses its service (%s): the CRD's cleanup deletes its objects by reading them at the storage version, which needs the webhook for those stored at another, so the CRD may stay Terminating (InstanceDeletionFailed) once the webhook is gone",
					u.GetName(), words.Count(r.kept.ofType[gr], "object"), strings.Join(stored, ", "), why),
				SafeOrder: append([]string{fmt.Sprintf("while the conversion webhook runs, delete the objects; kubectl waits until they are gone: kubectl delete %s --all --all-namespaces", gr)}, r.finalSteps()...),
			})
			return
		}
		hz := finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardWebhookServiceDeleted, Cause: ref, Objects: []finalizev1alpha1.ObjectReference{}}
		// When its objects could not be listed, which namespaces hold them is not known:
		// every namespace of the deletion may.
		unlisted := false
		for _, in := range r.res.Incomplete {
			if gv, err := schema.ParseGroupVersion(in.GroupVersion); err == nil && gv.Group == group && (in.Resource == "" || in.Resource == resource) {
				unlisted = true
			}
		}
		for n := range r.set.namespaces {
			if unlisted || r.kept.present[gr][n] {
				hz.Objects = append(hz.Objects, r.namespaceRef(n))
			}
		}
		sortRefs(hz.Objects)
		hz.Message = fmt.Sprintf("CRD %s stays, but its conversion webhook loses its service (%s): its objects can no longer be read at another version than the one they are stored at; lists of them fail, the namespace controller's too, so namespaces that hold them cannot finish deleting (and, once the API server's watch cache of the type gives up, no namespace can)",
			u.GetName(), why)
		hz.SafeOrder = append([]string{fmt.Sprintf("if the CRD goes too, delete its objects and then the CRD first (kubectl delete %s --all --all-namespaces; kubectl delete %s); if it stays, store every object at one version and set its conversion strategy to None, or keep its conversion webhook running",
			gr, ref.ResourceName())}, r.finalSteps()...)
		out = append(out, hz)
	})
	return out
}
