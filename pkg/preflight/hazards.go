package preflight

import (
	"fmt"
	neturl "net/url"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/pager"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/doctor"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
)

// The types the hazards name.
var (
	namespacesResource  = kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace"}
	podsResource        = kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}
	crdsResource        = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Kind: "CustomResourceDefinition"}
	apiServicesResource = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}, Kind: "APIService"}
	validatingResource  = kube.Resource{GroupVersionResource: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"), Kind: "ValidatingWebhookConfiguration"}
	mutatingResource    = kube.Resource{GroupVersionResource: admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"), Kind: "MutatingWebhookConfiguration"}
)

// hazards gathers hazards by reason, cause and, for controllers, controller name.
type hazards struct {
	byKey map[string]*finalizev1alpha1.Hazard
	seen  map[string]map[types.UID]bool
	keys  []string
}

func (h *hazards) add(key string, newHazard func() finalizev1alpha1.Hazard, objs ...finalizev1alpha1.ObjectReference) *finalizev1alpha1.Hazard {
	if h.byKey == nil {
		h.byKey, h.seen = map[string]*finalizev1alpha1.Hazard{}, map[string]map[types.UID]bool{}
	}
	hz, ok := h.byKey[key]
	if !ok {
		made := newHazard()
		hz = &made
		h.byKey[key], h.seen[key] = hz, map[types.UID]bool{}
		h.keys = append(h.keys, key)
	}
	for _, o := range objs {
		if !h.seen[key][o.UID] {
			h.seen[key][o.UID] = true
			hz.Objects = append(hz.Objects, o)
		}
	}
	return hz
}

// controller is the controller of fin on o, found once.
func (r *run) controller(o *kube.Object, fin finalizev1alpha1.Finalizer) doctor.Controller {
	m := r.controllers[o.Meta.UID]
	if m == nil {
		m = map[string]doctor.Controller{}
		r.controllers[o.Meta.UID] = m
	}
	c, ok := m[fin.Name]
	if !ok {
		c = r.finder.Controller(o, fin)
		m[fin.Name] = c
	}
	return c
}

// customFinalizers are o's metadata finalizers that Kubernetes' control plane does not
// remove: those of controllers that run in the cluster, and may be deleted with it. A
// system finalizer (owner.IsSystem) may be one: the CSI sidecars' and a Gateway API
// implementation's names are in domains Kubernetes reserves, and their controllers run
// as workloads. Only the catalogue's control-plane entries are left out; a name it does
// not know is kept, since nothing shows that the control plane removes it.
func customFinalizers(o *kube.Object) []finalizev1alpha1.Finalizer {
	var out []finalizev1alpha1.Finalizer
	for _, f := range o.Finalizers {
		if f.Field != finalizev1alpha1.FieldMetadataFinalizers {
			continue
		}
		if e, ok := owner.Builtin().Lookup(f.Name); ok && e.ControlPlane {
			continue
		}
		out = append(out, f)
	}
	return out
}

// workloadRef is the reference to a controller's workload, uid included when it was
// listed.
func (r *run) workloadRef(w doctor.WorkloadRef) finalizev1alpha1.ObjectReference {
	gr := workloadKindGR[w.Kind]
	if ref, ok := r.kept.workloads[nameKey(gr, w.Namespace, w.Name)]; ok {
		return ref
	}
	return kube.Resource{GroupVersionResource: gr.WithVersion("v1"), Kind: w.Kind, Namespaced: true}.Ref(w.Namespace, w.Name, "")
}

// survives says whether a workload of the controller that runs (asks for pods) is not
// deleted.
func (r *run) survives(c doctor.Controller) bool {
	for _, w := range c.Workloads {
		if !r.set.has(r.workloadRef(w)) && w.Desired > 0 {
			return true
		}
	}
	return false
}

// servedAfter says whether a workload of the controller that stays runs and, as far as
// its pod template says, watches namespace ns.
func (r *run) servedAfter(c doctor.Controller, ns string) bool {
	for _, w := range c.Workloads {
		if !r.set.has(r.workloadRef(w)) && w.Desired > 0 && w.WatchesNamespace(ns) {
			return true
		}
	}
	return false
}

// anyDeleted says whether the deletion removes a workload of the controller: if not,
// it changes nothing to whether the controller runs.
func (r *run) anyDeleted(c doctor.Controller) bool {
	for _, w := range c.Workloads {
		if r.set.has(r.workloadRef(w)) {
			return true
		}
	}
	return false
}

// idle describes the workloads of c that stay but do not remove finalizers of objects in
// namespace ns: scaled to zero, or limited to other namespaces.
func (r *run) idle(c doctor.Controller, ns string) string {
	var out []string
	for _, w := range c.Workloads {
		switch {
		case r.set.has(r.workloadRef(w)):
		case w.Desired == 0:
			out = append(out, fmt.Sprintf("%s %s/%s (scaled to 0)", w.Kind, w.Namespace, w.Name))
		case !w.WatchesNamespace(ns):
			out = append(out, fmt.Sprintf("%s %s/%s (watches only %s)", w.Kind, w.Namespace, w.Name, strings.Join(w.Watches, ", ")))
		}
	}
	return strings.Join(out, ", ")
}

// unreadWorkloads makes the prediction incomplete for the workload kinds of c that could
// not be read (once a type): whether the deletion removes c is not known.
func (r *run) unreadWorkloads(c doctor.Controller) {
	for _, kind := range c.Unread {
		gr, ok := workloadKindGR[kind]
		if !ok {
			continue
		}
		gv := gr.WithVersion("v1").GroupVersion().String()
		if slices.ContainsFunc(r.rep.Incomplete, func(in finalizev1alpha1.IncompleteResource) bool {
			return in.GroupVersion == gv && (in.Resource == "" || in.Resource == gr.Resource)
		}) {
			continue
		}
		r.rep.Incomplete = append(r.rep.Incomplete, finalizev1alpha1.IncompleteResource{GroupVersion: gv, Resource: gr.Resource, Reason: finalizev1alpha1.ReasonListFailed,
			Message: fmt.Sprintf("the %ss of %s, which removes finalizers, could not be read: whether the deletion removes it is not known", kind, c.Name)})
	}
}

// survivorsElsewhere names the workloads of c that stay, when the deletion removes every
// workload of c in namespace ns and at least one is there; "" otherwise.
func (r *run) survivorsElsewhere(c doctor.Controller, ns string) string {
	if ns == "" {
		return ""
	}
	var here, stay []doctor.WorkloadRef
	for _, w := range c.Workloads {
		deleted := r.set.has(r.workloadRef(w))
		serves := !deleted && w.Desired > 0 && w.WatchesNamespace(ns)
		switch {
		case w.Namespace == ns && serves:
			return ""
		case w.Namespace == ns && deleted:
			here = append(here, w)
		case serves && w.Watches != nil:
			return "" // it says it watches ns
		case serves:
			stay = append(stay, w)
		}
	}
	if len(here) == 0 || len(stay) == 0 {
		return ""
	}
	return describeWorkloads(stay)
}

// deletedOf are the workloads of c the deletion removes.
func (r *run) deletedOf(c doctor.Controller) []doctor.WorkloadRef {
	var out []doctor.WorkloadRef
	for _, w := range c.Workloads {
		if r.set.has(r.workloadRef(w)) {
			out = append(out, w)
		}
	}
	return out
}

// deletedIn are the workloads of c in namespace ns.
func (r *run) deletedIn(c doctor.Controller, ns string) []doctor.WorkloadRef {
	var out []doctor.WorkloadRef
	for _, w := range c.Workloads {
		if w.Namespace == ns {
			out = append(out, w)
		}
	}
	return out
}

// deletedWorkloadRef is the cause of a ControllerDeleted hazard: the controller's first
// workload in namespace ns that the deletion removes, else its first.
func (r *run) deletedWorkloadRef(c doctor.Controller, ns string) finalizev1alpha1.ObjectReference {
	for _, w := range c.Workloads {
		if ref := r.workloadRef(w); w.Namespace == ns && r.set.has(ref) {
			return ref
		}
	}
	return r.workloadRef(c.Workloads[0])
}

// describeWorkloads is "Deployment ops/db-operator, StatefulSet ...".
func describeWorkloads(ws []doctor.WorkloadRef) string {
	var out []string
	for _, w := range ws {
		out = append(out, fmt.Sprintf("%s %s/%s", w.Kind, w.Namespace, w.Name))
	}
	return strings.Join(out, ", ")
}

// controllerHazards: objects whose finalizers' controller the deletion removes. Objects
// in a namespace deleted with their operator inside are OperatorDeletedFirst; any other
// is ControllerDeleted.
func (r *run) controllerHazards() {
	var h hazards
	fins := map[string][]string{}
	survivors, idles := map[string]string{}, map[string]string{}
	for _, o := range r.kept.finalized {
		for _, fin := range customFinalizers(o) {
			c := r.controller(o, fin)
			ns := o.Meta.Namespace
			if len(c.Unread) > 0 {
				// A workload that stays proves the controller survives whatever could not
				// be read; anything else is not known.
				if proven := r.servedAfter(c, ns) && r.survivorsElsewhere(c, ns) == ""; !proven {
					r.unreadWorkloads(c)
				}
				continue
			}
			if len(c.Workloads) == 0 || !r.anyDeleted(c) {
				continue
			}
			// A workload of the controller that survives elsewhere removes the finalizers
			// of an object whose own namespace loses the controller's only workload there
			// only if it watches that namespace: an operator installed once per namespace
			// does not. The hazard is said, with the survivors named.
			others := r.survivorsElsewhere(c, ns)
			if r.servedAfter(c, ns) && others == "" {
				continue
			}
			idleHere := ""
			if others == "" {
				idleHere = r.idle(c, ns)
			}
			inside := ns != "" && r.set.namespaces[ns] && slices.ContainsFunc(c.Workloads, func(w doctor.WorkloadRef) bool { return w.Namespace == ns })
			var key string
			var hz *finalizev1alpha1.Hazard
			if inside {
				key = finalizev1alpha1.HazardOperatorDeletedFirst + "\x00" + ns + "\x00" + c.Name
				hz = h.add(key, func() finalizev1alpha1.Hazard {
					return finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardOperatorDeletedFirst, Cause: r.namespaceRef(ns)}
				}, o.Ref())
			} else {
				key = finalizev1alpha1.HazardControllerDeleted + "\x00" + c.Name
				if others != "" || idleHere != "" {
					key += "\x00" + ns
				}
				hz = h.add(key, func() finalizev1alpha1.Hazard {
					cause := r.workloadRef(c.Workloads[0])
					if others != "" {
						cause = r.deletedWorkloadRef(c, ns)
					}
					return finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardControllerDeleted, Cause: cause}
				}, o.Ref())
			}
			if !slices.Contains(fins[key], fin.Name) {
				fins[key] = append(fins[key], fin.Name)
			}
			if hz.Message == "" {
				hz.Message = c.Name + "\x00" + describeWorkloads(c.Workloads)
				switch {
				case others != "":
					survivors[key] = others
					hz.Message = c.Name + "\x00" + describeWorkloads(r.deletedIn(c, ns))
				case idleHere != "":
					idles[key] = idleHere
					hz.Message = c.Name + "\x00" + describeWorkloads(r.deletedOf(c))
				}
			}
		}
	}
	for _, key := range h.keys {
		hz := h.byKey[key]
		name, workloads, _ := strings.Cut(hz.Message, "\x00")
		sortRefs(hz.Objects)
		finalizers := strings.Join(fins[key], ", ")
		var deleting, staying []finalizev1alpha1.ObjectReference
		for _, o := range hz.Objects {
			if r.set.has(o) {
				deleting = append(deleting, o)
			} else {
				staying = append(staying, o)
			}
		}
		switch hz.Reason {
		case finalizev1alpha1.HazardOperatorDeletedFirst:
			hz.Message = fmt.Sprintf("namespace %s holds %s (%s) and %s that carry its finalizers (%s): deleting the namespace deletes its pods first, so %s is gone before it can remove them, and the namespace stays Terminating",
				hz.Cause.Name, name, workloads, plural(len(hz.Objects), "object"), finalizers, name)
			if others := survivors[key]; others != "" {
				hz.Message += fmt.Sprintf(" (unless %s, which stays, watches namespace %s: an operator installed per namespace does not)", others, hz.Cause.Name)
			}
			if idle := idles[key]; idle != "" {
				hz.Message += fmt.Sprintf("; %s stays but does not remove them", idle)
			}
			hz.SafeOrder = append([]string{fmt.Sprintf("while %s runs, delete the objects that carry its finalizers; kubectl waits until they are gone: %s", name, strings.Join(deleteCommands(hz.Objects), "; "))},
				r.finalSteps()...)
		default:
			msg := fmt.Sprintf("%s removes %s and runs only as %s, which the deletion removes", name, finalizers, workloads)
			if idle := idles[key]; idle != "" {
				msg = fmt.Sprintf("%s removes %s and runs as %s, which the deletion removes; %s stays but does not remove them", name, finalizers, workloads, idle)
			}
			if others := survivors[key]; others != "" {
				msg = fmt.Sprintf("%s removes %s; the deletion removes %s, its only workload in namespace %s, and %s, which stays, removes them only if it watches namespace %s (an operator installed per namespace does not)",
					name, finalizers, workloads, hz.Objects[0].Namespace, others, hz.Objects[0].Namespace)
			}
			switch {
			case len(staying) == 0:
				msg += fmt.Sprintf(": %s deleted with it would stay Terminating", plural(len(deleting), "object"))
			case len(deleting) == 0:
				msg += ": " + stayStuck(len(staying), "object")
			default:
				msg += fmt.Sprintf(": %s deleted with it would stay Terminating, and %s", plural(len(deleting), "object"), stayStuck(len(staying), "other"))
			}
			hz.Message = msg
			hz.SafeOrder = []string{fmt.Sprintf("while %s runs, delete the objects that carry its finalizers; kubectl waits until they are gone: %s", name, strings.Join(deleteCommands(hz.Objects), "; "))}
			if len(staying) > 0 {
				hz.SafeOrder[0] += fmt.Sprintf(" (or, for those meant to stay, keep %s installed as long as they exist)", name)
			}
			hz.SafeOrder = append(hz.SafeOrder, r.finalSteps()...)
		}
		r.rep.Hazards = append(r.rep.Hazards, *hz)
	}
}

// crdHazards: a CRD deleted while instances of it carry finalizers.
func (r *run) crdHazards() {
	var h hazards
	owners := map[string][]string{}
	for _, o := range r.kept.finalized {
		crd := r.set.types[o.Resource.GroupResource()]
		if crd == "" {
			continue
		}
		for _, fin := range customFinalizers(o) {
			c := r.controller(o, fin)
			h.add(crd, func() finalizev1alpha1.Hazard {
				return finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardCRDInstancesWithFinalizers, Cause: r.crdRef(crd)}
			}, o.Ref())
			var state string
			switch {
			case c.Name == "":
				state = fmt.Sprintf("%s, whose controller is not known", fin.Name)
			case len(c.Workloads) == 0 && len(c.Unread) > 0:
				state = fmt.Sprintf("%s of %s, whose workloads could not be read", fin.Name, c.Name)
			case len(c.Workloads) == 0:
				state = fmt.Sprintf("%s of %s, which runs as no Deployment, StatefulSet or DaemonSet found in the cluster", fin.Name, c.Name)
			case r.survives(c):
				state = fmt.Sprintf("%s of %s, which survives the deletion (%s)", fin.Name, c.Name, describeWorkloads(c.Workloads))
			default:
				state = fmt.Sprintf("%s of %s, which is deleted too (%s)", fin.Name, c.Name, describeWorkloads(c.Workloads))
			}
			if !slices.Contains(owners[crd], state) {
				owners[crd] = append(owners[crd], state)
			}
		}
	}
	for _, crd := range h.keys {
		hz := h.byKey[crd]
		sortRefs(hz.Objects)
		gr := hz.Objects[0].GroupResource()
		hz.Message = fmt.Sprintf("%s of CRD %s carry finalizers: %s; deleting the CRD deletes them, and it stays Terminating until every finalizer is removed",
			plural(len(hz.Objects), "instance"), crd, strings.Join(owners[crd], "; "))
		hz.SafeOrder = append([]string{fmt.Sprintf("while their controllers run, delete the instances; kubectl waits until they are gone: kubectl delete %s --all --all-namespaces", gr)},
			r.finalSteps()...)
		r.rep.Hazards = append(r.rep.Hazards, *hz)
	}
}

// admissionWebhook is what the prediction reads of a validating or mutating webhook.
type admissionWebhook struct {
	name              string
	policy            *admissionregistrationv1.FailurePolicyType
	rules             []admissionregistrationv1.RuleWithOperations
	namespaceSelector *metav1.LabelSelector
	objectSelector    *metav1.LabelSelector
	matchPolicy       *admissionregistrationv1.MatchPolicyType
	service           *admissionregistrationv1.ServiceReference
	url               *string
}

// webhookHazards: a failurePolicy Fail webhook whose service the deletion removes.
func (r *run) webhookHazards() {
	admission := r.p.Clients.Kube.AdmissionregistrationV1()
	r.each(validatingResource.GroupVersionResource, func(opts metav1.ListOptions) (runtime.Object, error) {
		return admission.ValidatingWebhookConfigurations().List(r.ctx, opts)
	}, func(obj runtime.Object) {
		c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		var hooks []admissionWebhook
		for _, w := range c.Webhooks {
			hooks = append(hooks, admissionWebhook{w.Name, w.FailurePolicy, w.Rules, w.NamespaceSelector, w.ObjectSelector, w.MatchPolicy, w.ClientConfig.Service, w.ClientConfig.URL})
		}
		r.webhookHazard(validatingResource.Ref("", c.Name, c.UID), hooks)
	})
	r.each(mutatingResource.GroupVersionResource, func(opts metav1.ListOptions) (runtime.Object, error) {
		return admission.MutatingWebhookConfigurations().List(r.ctx, opts)
	}, func(obj runtime.Object) {
		c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
		var hooks []admissionWebhook
		for _, w := range c.Webhooks {
			hooks = append(hooks, admissionWebhook{w.Name, w.FailurePolicy, w.Rules, w.NamespaceSelector, w.ObjectSelector, w.MatchPolicy, w.ClientConfig.Service, w.ClientConfig.URL})
		}
		r.webhookHazard(mutatingResource.Ref("", c.Name, c.UID), hooks)
	})
}

// webhookHazard checks the webhooks of one configuration that stays.
func (r *run) webhookHazard(cfg finalizev1alpha1.ObjectReference, hooks []admissionWebhook) {
	if r.set.has(cfg) {
		return
	}
	var h hazards
	var said []string
	for _, w := range hooks {
		if w.policy != nil && *w.policy != admissionregistrationv1.Fail {
			continue
		}
		key, ok := clientConfigService(w.service, w.url)
		if !ok {
			continue
		}
		why := r.serviceGone(key)
		if why == "" {
			continue
		}
		h.add(cfg.Name, func() finalizev1alpha1.Hazard {
			return finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardWebhookServiceDeleted, Cause: cfg, Objects: []finalizev1alpha1.ObjectReference{}}
		})
		for _, o := range r.kept.finalized {
			if r.set.has(o.Ref()) && doctor.WebhookInterceptsUpdate(w.rules, w.namespaceSelector, w.objectSelector, w.matchPolicy, o, r.nsLabels(o)) {
				h.add(cfg.Name, nil, o.Ref())
			}
		}
		said = append(said, fmt.Sprintf("webhook %s has failurePolicy Fail and %s: it would reject every request it intercepts (%s), cluster-wide", w.name, why, describeRules(w.rules)))
	}
	for _, key := range h.keys {
		hz := h.byKey[key]
		sortRefs(hz.Objects)
		hz.Message = fmt.Sprintf("%s %s stays, but %s", cfg.Kind, cfg.Name, strings.Join(said, "; "))
		if len(hz.Objects) > 0 {
			hz.Message += fmt.Sprintf("; among them the updates that remove the finalizers of %s of the deletion", plural(len(hz.Objects), "object"))
		}
		hz.SafeOrder = append([]string{fmt.Sprintf("delete the webhook configuration first (or set its failurePolicy to Ignore): kubectl delete %s", cfg.ResourceName())},
			r.finalSteps()...)
		r.rep.Hazards = append(r.rep.Hazards, *hz)
	}
}

// clientConfigService is the service a webhook's client config calls: its service, or
// the in-cluster service its URL names by DNS (https://NAME.NAMESPACE.svc[.cluster.local]
// [:PORT]/...), which an API server that resolves cluster DNS reaches.
func clientConfigService(svc *admissionregistrationv1.ServiceReference, url *string) (types.NamespacedName, bool) {
	if svc != nil {
		return types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, svc.Name != ""
	}
	if url == nil {
		return types.NamespacedName{}, false
	}
	u, err := neturl.Parse(*url)
	if err != nil {
		return types.NamespacedName{}, false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	host, ok := strings.CutSuffix(host, ".svc.cluster.local")
	if !ok {
		host, ok = strings.CutSuffix(host, ".svc")
	}
	name, ns, two := strings.Cut(host, ".")
	if !ok || !two || name == "" || ns == "" || strings.Contains(ns, ".") {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// describeRules is "UPDATE,DELETE widgets.example.com; CREATE *".
func describeRules(rules []admissionregistrationv1.RuleWithOperations) string {
	var out []string
	for _, rule := range rules {
		var ops []string
		for _, op := range rule.Operations {
			ops = append(ops, string(op))
		}
		var res []string
		for _, g := range rule.APIGroups {
			for _, rs := range rule.Resources {
				if g == "" {
					res = append(res, rs)
				} else {
					res = append(res, rs+"."+g)
				}
			}
		}
		out = append(out, strings.Join(ops, ",")+" "+strings.Join(res, ","))
	}
	return strings.Join(out, "; ")
}

// conversionHazards: a CRD that stays, whose conversion webhook's service the deletion
// removes.
func (r *run) conversionHazards() {
	res := r.p.Clients.Dynamic.Resource(crdsResource.GroupVersionResource)
	r.each(crdsResource.GroupVersionResource, func(opts metav1.ListOptions) (runtime.Object, error) {
		return res.List(r.ctx, opts)
	}, func(obj runtime.Object) {
		u := obj.(*unstructured.Unstructured)
		ref := crdsResource.Ref("", u.GetName(), u.GetUID())
		deleted := r.set.has(ref)
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
		key, ok := clientConfigService(svc, urlp)
		if !ok {
			return
		}
		why := r.serviceGone(key)
		if why == "" {
			return
		}
		if deleted {
			ref = r.crdRef(u.GetName())
			r.rep.Hazards = append(r.rep.Hazards, finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardWebhookServiceDeleted, Cause: ref, Objects: []finalizev1alpha1.ObjectReference{ref},
				Message: fmt.Sprintf("CRD %s is deleted with %s of its objects, stored at versions %s, and its conversion webhook loses its service (%s): the CRD's cleanup deletes its objects by reading them at the storage version, which needs the webhook for those stored at another, so the CRD may stay Terminating (InstanceDeletionFailed) once the webhook is gone",
					u.GetName(), plural(r.kept.ofType[gr], "object"), strings.Join(stored, ", "), why),
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
		r.rep.Hazards = append(r.rep.Hazards, hz)
	})
}

// apiServiceHazards: an APIService that stays, whose service the deletion removes.
func (r *run) apiServiceHazards() {
	res := r.p.Clients.Dynamic.Resource(apiServicesResource.GroupVersionResource)
	r.each(apiServicesResource.GroupVersionResource, func(opts metav1.ListOptions) (runtime.Object, error) {
		return res.List(r.ctx, opts)
	}, func(obj runtime.Object) {
		u := obj.(*unstructured.Unstructured)
		ref := apiServicesResource.Ref("", u.GetName(), u.GetUID())
		ns, _, _ := unstructured.NestedString(u.Object, "spec", "service", "namespace")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "service", "name")
		if name == "" || r.set.has(ref) {
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
		r.rep.Hazards = append(r.rep.Hazards, hz)
	})
}

// claimHazards: claims deleted while pods that stay use them.
func (r *run) claimHazards() {
	claims := map[string]map[string]finalizev1alpha1.ObjectReference{}
	for _, c := range r.kept.claims {
		if r.set.has(c) {
			if claims[c.Namespace] == nil {
				claims[c.Namespace] = map[string]finalizev1alpha1.ObjectReference{}
			}
			claims[c.Namespace][c.Name] = c
		}
	}
	namespaces := make([]string, 0, len(claims))
	for ns := range claims {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		users := map[string][]string{}
		r.each(podsResource.GroupVersionResource, func(opts metav1.ListOptions) (runtime.Object, error) {
			return r.p.Clients.Kube.CoreV1().Pods(ns).List(r.ctx, opts)
		}, func(obj runtime.Object) {
			pod := obj.(*corev1.Pod)
			// kube-controller-manager's pvc-protection controller counts only scheduled pods
			// that have not finished: the kubelet refuses to start a pod on a claim being
			// deleted.
			if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || r.set.has(podsResource.Ref(pod.Namespace, pod.Name, pod.UID)) {
				return
			}
			for _, v := range pod.Spec.Volumes {
				var claim string
				switch {
				case v.PersistentVolumeClaim != nil:
					claim = v.PersistentVolumeClaim.ClaimName
				case v.Ephemeral != nil:
					// A generic ephemeral volume's claim is named POD-VOLUME.
					claim = pod.Name + "-" + v.Name
				default:
					continue
				}
				if _, ok := claims[ns][claim]; ok && !slices.Contains(users[claim], pod.Name) {
					users[claim] = append(users[claim], pod.Name)
				}
			}
		})
		names := make([]string, 0, len(users))
		for n := range users {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			pods := users[n]
			sort.Strings(pods)
			claim := claims[ns][n]
			r.rep.Hazards = append(r.rep.Hazards, finalizev1alpha1.Hazard{
				Reason: finalizev1alpha1.HazardClaimInUse, Cause: claim, Objects: []finalizev1alpha1.ObjectReference{claim},
				Message: fmt.Sprintf("claim %s/%s is deleted, but %s that the deletion does not remove still %s it (%s): kubernetes.io/pvc-protection keeps it Terminating until they are gone",
					ns, n, plural(len(pods), "pod"), map[bool]string{true: "uses", false: "use"}[len(pods) == 1], strings.Join(pods, ", ")),
				SafeOrder: append([]string{fmt.Sprintf("stop the pods that use it first (scale their workload down, or delete them): kubectl delete pods -n %s %s", ns, strings.Join(pods, " "))},
					r.finalSteps()...),
			})
		}
	}
}

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

// each lists a collection in pages; a failed list makes the prediction incomplete.
func (r *run) each(gvr schema.GroupVersionResource, list func(metav1.ListOptions) (runtime.Object, error), fn func(runtime.Object)) {
	p := pager.New(pager.SimplePageFunc(list))
	p.PageSize = r.opts.Scan.ChunkSize
	err := p.EachListItem(r.ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		fn(obj)
		return nil
	})
	if err != nil {
		r.incomplete(gvr, err)
	}
}

// nsLabels are the labels a namespaceSelector is matched against.
func (r *run) nsLabels(o *kube.Object) map[string]string {
	if o.Resource.IsNamespaces() {
		return o.Meta.Labels
	}
	return r.kept.nsLabels[o.Meta.Namespace]
}

// namespaceRef is the reference to a namespace, uid included when it was listed.
func (r *run) namespaceRef(name string) finalizev1alpha1.ObjectReference {
	for _, t := range r.rep.Targets {
		if t.GroupResource() == namespacesResource.GroupResource() && t.Name == name {
			return t
		}
	}
	return namespacesResource.Ref("", name, "")
}

// crdRef is the reference to a CRD among the targets.
func (r *run) crdRef(name string) finalizev1alpha1.ObjectReference {
	for _, t := range r.rep.Targets {
		if t.GroupResource() == crdResource && t.Name == name {
			return t
		}
	}
	return crdsResource.Ref("", name, "")
}

// finalSteps say how to go on with the deletion once the hazard is out of the way.
func (r *run) finalSteps() []string {
	if r.rep.HelmRelease != "" {
		ns, name, _ := strings.Cut(r.rep.HelmRelease, "/")
		return []string{fmt.Sprintf("then uninstall the release: helm uninstall %s -n %s", name, ns)}
	}
	var cmds []string
	for _, t := range r.rep.Targets {
		cmds = append(cmds, "kubectl delete "+t.String())
	}
	return []string{"then delete what was asked: " + strings.Join(cmds, "; ")}
}

// deleteCommands are kubectl delete commands for refs, one per type and namespace.
func deleteCommands(refs []finalizev1alpha1.ObjectReference) []string {
	type group struct{ namespace, resource string }
	names := map[group][]string{}
	var order []group
	for _, ref := range refs {
		g := group{ref.Namespace, ref.GroupResource().String()}
		if _, ok := names[g]; !ok {
			order = append(order, g)
		}
		names[g] = append(names[g], ref.Name)
	}
	out := make([]string, 0, len(order))
	for _, g := range order {
		cmd := "kubectl delete " + g.resource
		if g.namespace != "" {
			cmd += " -n " + g.namespace
		}
		out = append(out, cmd+" "+strings.Join(names[g], " "))
	}
	return out
}

// stayStuck is "1 object that stays would be stuck the day it is deleted".
func stayStuck(n int, noun string) string {
	if n == 1 {
		return "1 " + noun + " that stays would be stuck the day it is deleted"
	}
	return fmt.Sprintf("%d %ss that stay would be stuck the day they are deleted", n, noun)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
