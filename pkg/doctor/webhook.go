package doctor

import (
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// blockingWebhook is a webhook that would reject the update that removes a finalizer.
type blockingWebhook struct {
	webhook
	Problem string
}

// blockingWebhooks returns the failurePolicy Fail webhooks that intercept an update of o
// (of its subresource sub, if set) and whose service cannot answer: neither the owning
// controller nor anyone else can remove a finalizer through them.
func (f *facts) blockingWebhooks(o *scan.Object, sub string) []blockingWebhook {
	var out []blockingWebhook
	for _, w := range f.failingWebhooks() {
		if w.Service == nil || !w.intercepts(o, sub, f.namespaceLabels(o)) {
			continue // a URL webhook's backend cannot be checked from the cluster
		}
		st := f.service(*w.Service)
		if st.Err != nil {
			f.warnf("could not check service %s of webhook %s: %v", *w.Service, w.Name, st.Err)
			continue
		}
		if problem := st.describe(*w.Service); problem != "" {
			out = append(out, blockingWebhook{webhook: w, Problem: problem})
		}
	}
	return out
}

// namespaceLabels are the labels a namespaceSelector is matched against: those of the
// object's namespace, or of the namespace itself.
func (f *facts) namespaceLabels(o *scan.Object) map[string]string {
	if o.Resource.IsNamespaces() {
		return o.Meta.Labels
	}
	if f.res.Index == nil {
		return nil
	}
	return f.res.Index.NamespaceLabels[o.Meta.Namespace]
}

// intercepts reports whether the webhook is called for an UPDATE of o.
func (w *webhook) intercepts(o *scan.Object, sub string, nsLabels map[string]string) bool {
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

func (b *blockingWebhook) String() string {
	return fmt.Sprintf("%s %s (webhook %s): %s", b.Kind, b.Configuration, b.Name, b.Problem)
}
