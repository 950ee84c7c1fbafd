package preflight

import (
	"fmt"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/admission"
	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// admissionWebhook is what the prediction reads of a validating or mutating webhook.
type admissionWebhook struct {
	name   string
	policy *admissionregistrationv1.FailurePolicyType
	admission.Webhook
	service *admissionregistrationv1.ServiceReference
	url     *string
}

// admissionWebhookOf is what the prediction reads of w.
func admissionWebhookOf(name string, policy *admissionregistrationv1.FailurePolicyType, rules []admissionregistrationv1.RuleWithOperations,
	namespaceSelector, objectSelector *metav1.LabelSelector, mp *admissionregistrationv1.MatchPolicyType, cc admissionregistrationv1.WebhookClientConfig) admissionWebhook {
	return admissionWebhook{name: name, policy: policy, service: cc.Service, url: cc.URL,
		Webhook: admission.Webhook{Rules: rules, NamespaceSelector: namespaceSelector, ObjectSelector: objectSelector, MatchPolicy: admission.MatchPolicy(mp)}}
}

// webhookService: a failurePolicy Fail admission webhook whose service the deletion
// removes.
type webhookService struct{}

// reasons: WebhookServiceDeleted, which conversionWebhook gives too.
func (webhookService) reasons() []Reason {
	return []Reason{{
		Name: finalizev1alpha1.HazardWebhookServiceDeleted, Rank: 1,
		Help: "a failurePolicy Fail validating or mutating webhook, or a CRD's conversion webhook, stays while its service " +
			"(or the workload behind it) is deleted: it then rejects writes elsewhere, finalizer removals included " +
			"(or a CRD goes with its conversion webhook while objects stored at another version remain)",
		Deleted: "the service of a validating or mutating webhook with `failurePolicy: Fail` (or the only workload whose pods it selects), " +
			"or of a CRD's conversion webhook, while the configuration or the CRD stays (or the CRD goes with objects stored at another version)",
		Stranded: "every write the webhook intercepts is rejected, cluster-wide, finalizer removals included; it strands the objects of the deletion " +
			"whose finalizer removal it intercepts (a conversion webhook: the namespaces of the deletion that hold the CRD's objects)",
	}}
}

func (webhookService) find(r *run) []finalizev1alpha1.Hazard {
	var out []finalizev1alpha1.Hazard
	configs := r.p.Clients.Kube.AdmissionregistrationV1()
	r.each(validatingResource.GroupVersionResource, func(opts metav1.ListOptions) (runtime.Object, error) {
		return configs.ValidatingWebhookConfigurations().List(r.ctx, opts)
	}, func(obj runtime.Object) {
		c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		var hooks []admissionWebhook
		for _, w := range c.Webhooks {
			hooks = append(hooks, admissionWebhookOf(w.Name, w.FailurePolicy, w.Rules, w.NamespaceSelector, w.ObjectSelector, w.MatchPolicy, w.ClientConfig))
		}
		out = append(out, r.webhookHazard(validatingResource.Ref("", c.Name, c.UID), hooks)...)
	})
	r.each(mutatingResource.GroupVersionResource, func(opts metav1.ListOptions) (runtime.Object, error) {
		return configs.MutatingWebhookConfigurations().List(r.ctx, opts)
	}, func(obj runtime.Object) {
		c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
		var hooks []admissionWebhook
		for _, w := range c.Webhooks {
			hooks = append(hooks, admissionWebhookOf(w.Name, w.FailurePolicy, w.Rules, w.NamespaceSelector, w.ObjectSelector, w.MatchPolicy, w.ClientConfig))
		}
		out = append(out, r.webhookHazard(mutatingResource.Ref("", c.Name, c.UID), hooks)...)
	})
	return out
}

// webhookHazard checks the webhooks of one configuration that stays.
func (r *run) webhookHazard(cfg finalizev1alpha1.ObjectReference, hooks []admissionWebhook) []finalizev1alpha1.Hazard {
	if r.set.has(cfg) {
		return nil
	}
	var h grouped[string] // by configuration name
	var said []string
	for _, w := range hooks {
		if w.policy != nil && *w.policy != admissionregistrationv1.Fail {
			continue
		}
		key, ok := admission.Service(w.service, w.url)
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
			if r.set.has(o.Ref().API()) && w.InterceptsUpdate(o, "", r.nsLabels(o)) {
				h.add(cfg.Name, nil, o.Ref().API())
			}
		}
		said = append(said, fmt.Sprintf("webhook %s has failurePolicy Fail and %s: it would reject every request it intercepts (%s), cluster-wide", w.name, why, describeRules(w.Rules)))
	}
	var out []finalizev1alpha1.Hazard
	for _, key := range h.keys {
		hz := h.byKey[key]
		sortRefs(hz.Objects)
		hz.Message = fmt.Sprintf("%s %s stays, but %s", cfg.Kind, cfg.Name, strings.Join(said, "; "))
		if len(hz.Objects) > 0 {
			hz.Message += fmt.Sprintf("; among them the updates that remove the finalizers of %s of the deletion", words.Count(len(hz.Objects), "object"))
		}
		hz.SafeOrder = append([]string{fmt.Sprintf("delete the webhook configuration first (or set its failurePolicy to Ignore): kubectl delete %s", cfg.ResourceName())},
			r.finalSteps()...)
		out = append(out, *hz)
	}
	return out
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
