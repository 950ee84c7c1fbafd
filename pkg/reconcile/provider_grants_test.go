package reconcile

import (
	"slices"
	"strings"
	"testing"
)

// TestTheRoleSaysWhatEachProviderReadsAndWhere: a provider that reads the cluster being
// reconciled is granted its reads where it reads, and the role and its warnings say so
// in the words of its kind.
func TestTheRoleSaysWhatEachProviderReadsAndWhere(t *testing.T) {
	for _, tt := range []struct {
		rule, purpose, warning string
	}{
		{"{name: by-name, verify: {kubernetes: {resource: kfbe, namespace: \"{.metadata.namespace}\", name: \"{.metadata.name}\"}}}",
			"get backends.backing.example.com: the kubernetes provider of rule by-name reads one by name in namespace team-a\n", ""},
		{"{name: by-selector, verify: {kubernetes: {resource: backends, selector: \"app={.metadata.name}\"}}}",
			"list backends.backing.example.com: the kubernetes provider of rule by-selector lists them by selector\n",
			"the kubernetes provider of rule by-selector reads backends.backing.example.com in a namespace known only per object: the role may read backends.backing.example.com in every namespace (a ClusterRole); " +
				"to narrow it to a Role in each namespace it reads, name the provider's namespace literally, or read in the object's (namespace: \"{.metadata.namespace}\") under a rule that names its namespaces literally"},
		{"{name: literal, verify: {kubernetes: {resource: backend, namespace: backends, name: \"{.metadata.name}\"}}}",
			"get backends.backing.example.com: the kubernetes provider of rule literal reads one by name in namespace backends\n", ""},
	} {
		rule := strings.Replace(tt.rule, "verify:", "finalizers: [x.example.com/y], resources: [configmaps], namespaces: [team-a], verify:", 1)
		role, warnings, err := roleOf(t, "- "+rule+"\n", RBACOptions{Mapper: clusterMapper})
		if err != nil || !strings.Contains(role, "]: "+tt.purpose) {
			t.Errorf("%s: %v, the role does not say %q:\n%s", tt.rule, err, tt.purpose, role)
		}
		if (tt.warning == "" && len(warnings) > 0) || (tt.warning != "" && !slices.Contains(warnings, tt.warning)) {
			t.Errorf("%s: warnings %q, want %q", tt.rule, warnings, tt.warning)
		}
	}
}
