package provider

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// TestNameRules: a name is checked as it is against the rules of the type it names; a
// type whose rules are not known gets the strictest common rule.
func TestNameRules(t *testing.T) {
	rbac := func(r string) schema.GroupResource {
		return schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: r}
	}
	for _, tt := range []struct {
		gr   schema.GroupResource
		name string
		want string // "" for a valid name
	}{
		{schema.GroupResource{Resource: "secrets"}, "orders-db", ""},
		{schema.GroupResource{Resource: "secrets"}, "orders.db", ""},
		{schema.GroupResource{Resource: "secrets"}, "Orders-DB", `"Orders-DB" is not a name any secrets object can have: it must be an RFC 1123 subdomain: a lowercase RFC 1123 subdomain`},
		{schema.GroupResource{Resource: "secrets"}, "orders-db ", `"orders-db " is not a name any secrets object can have`},
		{schema.GroupResource{Resource: "secrets"}, "orders-db\n", "a lowercase RFC 1123 subdomain"},
		{schema.GroupResource{Resource: "namespaces"}, "team.a", "it must be an RFC 1123 label: must not contain dots"},
		{schema.GroupResource{Resource: "services"}, "1st-db", ""},
		{schema.GroupResource{Resource: "services"}, "db.internal", "it must be an RFC 1123 label"},
		{schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "db.0", "it must be an RFC 1123 label"},
		{rbac("clusterroles"), "system:controller:Orders", ""},
		{rbac("roles"), "a/b", "it must be a path segment name: may not contain '/'"},
		{rbac("rolebindings"), "..", "may not be '..'"},
		{schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, "csr-Any_Name", ""},
		{schema.GroupResource{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}, "example.com:signer:bundle-1", ""},
		{schema.GroupResource{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}, "example.com:signer:Bundle", "a lowercase RFC 1123 subdomain"},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ipaddresses"}, "2001:db8::1", ""},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ipaddresses"}, "2001:DB8::1", "canonical form"},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ipaddresses"}, "10.0.0.010", "is not a name any ipaddresses.networking.k8s.io object can have"},
		{schema.GroupResource{Group: "coordination.k8s.io", Resource: "leasecandidates"}, "kube-system_Lease.1", ""},
		{schema.GroupResource{Resource: "events"}, "db.18ebdecebad773b7:x", ""},
		// A custom resource, and a type this table does not know: an RFC 1123 subdomain.
		{schema.GroupResource{Group: "compute.example.com", Resource: "instances"}, "I-123", "a lowercase RFC 1123 subdomain"},
		{schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}, "v1.", "a lowercase RFC 1123 subdomain"},
	} {
		got := checkName(tt.gr, tt.name)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s %q: got %q, want %q", tt.gr, tt.name, got, tt.want)
		}
	}
	if got := checkNamespace("Team-A"); !strings.Contains(got, `"Team-A" is not a name any namespace can have: it must be an RFC 1123 label: a lowercase RFC 1123 label`) {
		t.Errorf("a namespace: %q", got)
	}
}

// TestKubernetesANameNoObjectCanHaveIsNotAsked: the provider refuses such a name or
// namespace before it asks: the API server would answer 404, read as Gone.
func TestKubernetesANameNoObjectCanHaveIsNotAsked(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{instances: "InstanceList"})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(instances.GroupVersion().WithKind("Instance"), meta.RESTScopeNamespace)
	for _, tt := range []struct {
		spec finalizev1alpha1.KubernetesProvider
		want string
	}{
		{finalizev1alpha1.KubernetesProvider{Resource: "instances", Namespace: "team-a", Name: "{.metadata.annotations.unicode}"},
			`name: "café" is not a name any instances.compute.example.com object can have`},
		{finalizev1alpha1.KubernetesProvider{Resource: "instances", Namespace: "team-a", Name: "db-{.metadata.annotations.spaced}"},
			`name: "db-i-123 " is not a name any instances.compute.example.com object can have`},
		{finalizev1alpha1.KubernetesProvider{Resource: "instances", Namespace: "{.metadata.annotations.spaced}", Name: "{.metadata.name}"},
			`namespace: "i-123 " is not a name any namespace can have`},
	} {
		p := newProvider(t, &finalizev1alpha1.Verify{Kubernetes: &tt.spec}, Options{Dynamic: dyn, Mapper: mapper})
		if _, err := p.Prepare(request()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v, want %q", err, tt.want)
		}
	}
	if n := len(dyn.Actions()); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}
