// Package admission says which admission webhooks the API server calls for a request,
// and which in-cluster service a webhook's client config calls. The doctor (pkg/doctor)
// and preflight (pkg/preflight) ask it alike.
package admission

import (
	neturl "net/url"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// Webhook is what decides which requests an admission webhook is called for.
type Webhook struct {
	Rules             []admissionregistrationv1.RuleWithOperations
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
	// MatchPolicy is the webhook's, Equivalent when it sets none (MatchPolicy).
	MatchPolicy admissionregistrationv1.MatchPolicyType
}

// InterceptsUpdate reports whether the webhook is called for an UPDATE of o (of its
// subresource sub, if set), whose namespace (or o itself, for a namespace) has the
// labels nsLabels: the update that removes a finalizer.
func (w *Webhook) InterceptsUpdate(o *kube.Object, sub string, nsLabels map[string]string) bool {
	r := o.Resource
	matched := false
	for i := range w.Rules {
		rule := &w.Rules[i]
		if !hasOperation(rule.Operations, admissionregistrationv1.Update) ||
			!matchesAny(rule.APIGroups, r.Group) ||
			// With matchPolicy Equivalent (the default) a rule for another version of the
			// same resource still applies.
			(w.MatchPolicy == admissionregistrationv1.Exact && !matchesAny(rule.APIVersions, r.Version)) ||
			!matchesResource(rule.Resources, r.Resource, sub) ||
			!matchesScope(rule.Scope, r.Namespaced) {
			continue
		}
		matched = true
		break
	}
	if !matched {
		return false
	}
	if !selects(w.ObjectSelector, o.Meta.Labels) {
		return false
	}
	// Cluster-scoped objects other than namespaces ignore the namespaceSelector.
	if r.Namespaced || r.IsNamespaces() {
		return selects(w.NamespaceSelector, nsLabels)
	}
	return true
}

func selects(sel *metav1.LabelSelector, set map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return true // a selector the API server accepted; err on the side of "it applies"
	}
	return s.Matches(labels.Set(set))
}

func hasOperation(ops []admissionregistrationv1.OperationType, op admissionregistrationv1.OperationType) bool {
	return slices.Contains(ops, op) || slices.Contains(ops, admissionregistrationv1.OperationAll)
}

func matchesAny(list []string, v string) bool {
	return slices.Contains(list, v) || slices.Contains(list, "*")
}

func matchesResource(list []string, resource, sub string) bool {
	for _, r := range list {
		switch {
		case sub == "" && (r == resource || r == "*"):
			return true
		case sub != "" && (r == resource+"/"+sub || r == resource+"/*" || r == "*/"+sub || r == "*/*"):
			return true
		}
	}
	return false
}

func matchesScope(scope *admissionregistrationv1.ScopeType, namespaced bool) bool {
	if scope == nil || *scope == admissionregistrationv1.AllScopes {
		return true
	}
	if namespaced {
		return *scope == admissionregistrationv1.NamespacedScope
	}
	return *scope == admissionregistrationv1.ClusterScope
}

// MatchPolicy is a webhook's match policy, Equivalent when it sets none.
func MatchPolicy(p *admissionregistrationv1.MatchPolicyType) admissionregistrationv1.MatchPolicyType {
	if p == nil {
		return admissionregistrationv1.Equivalent
	}
	return *p
}

// Service is the service a webhook's client config calls: its service, or
// the in-cluster service its URL names by DNS (https://NAME.NAMESPACE.svc[.cluster.local]
// [:PORT]/...), which an API server that resolves cluster DNS reaches.
func Service(svc *admissionregistrationv1.ServiceReference, url *string) (types.NamespacedName, bool) {
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
