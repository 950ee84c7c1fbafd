package admission

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// The update that removes a finalizer is intercepted as the API server matches
// webhooks: operation, group, version (under matchPolicy Exact only), resource and
// subresource, scope, and the object and namespace selectors.
func TestInterceptsUpdateAsTheAPIServerMatches(t *testing.T) {
	widgets := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}
	namespaces := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}
	widget := kube.NewObject(widgets, &metav1.ObjectMeta{Namespace: "team", Name: "w", Labels: map[string]string{"tier": "db"}}, nil)
	ns := kube.NewObject(namespaces, &metav1.ObjectMeta{Name: "team", Labels: map[string]string{"env": "prod"}}, nil)
	rule := func(ops []admissionregistrationv1.OperationType, group, version, resource string, scope admissionregistrationv1.ScopeType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}, Scope: &scope}}}
	}
	update := []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	all := []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	prod := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	dev := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}
	for _, tc := range []struct {
		name     string
		w        Webhook
		o        *kube.Object
		sub      string
		nsLabels map[string]string
		want     bool
	}{
		{"update of the type", Webhook{Rules: rule(update, "example.com", "v1", "widgets", admissionregistrationv1.AllScopes)}, widget, "", nil, true},
		{"every operation", Webhook{Rules: rule(all, "*", "*", "*", admissionregistrationv1.AllScopes)}, widget, "", nil, true},
		{"create only", Webhook{Rules: rule(create, "example.com", "v1", "widgets", admissionregistrationv1.AllScopes)}, widget, "", nil, false},
		{"another version, Equivalent", Webhook{Rules: rule(update, "example.com", "v2", "widgets", admissionregistrationv1.AllScopes), MatchPolicy: MatchPolicy(nil)}, widget, "", nil, true},
		{"another version, Exact", Webhook{Rules: rule(update, "example.com", "v2", "widgets", admissionregistrationv1.AllScopes), MatchPolicy: admissionregistrationv1.Exact}, widget, "", nil, false},
		{"cluster scope only", Webhook{Rules: rule(update, "example.com", "v1", "widgets", admissionregistrationv1.ClusterScope)}, widget, "", nil, false},
		{"the subresource", Webhook{Rules: rule(update, "", "v1", "namespaces/finalize", admissionregistrationv1.AllScopes)}, ns, "finalize", ns.Meta.Labels, true},
		{"not the subresource", Webhook{Rules: rule(update, "", "v1", "namespaces", admissionregistrationv1.AllScopes)}, ns, "finalize", ns.Meta.Labels, false},
		{"object selector", Webhook{Rules: rule(update, "*", "*", "*", admissionregistrationv1.AllScopes), ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}}, widget, "", nil, false},
		{"namespace selector matches", Webhook{Rules: rule(update, "*", "*", "*", admissionregistrationv1.AllScopes), NamespaceSelector: prod}, widget, "", map[string]string{"env": "prod"}, true},
		{"namespace selector does not", Webhook{Rules: rule(update, "*", "*", "*", admissionregistrationv1.AllScopes), NamespaceSelector: dev}, widget, "", map[string]string{"env": "prod"}, false},
	} {
		if got := tc.w.InterceptsUpdate(tc.o, tc.sub, tc.nsLabels); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
