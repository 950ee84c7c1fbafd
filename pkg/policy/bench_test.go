package policy

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// fiftyRules is a policy of 50 rules, each with a finalizer glob, resources, namespace
// globs and a label selector, and an exclude block: the size of a platform team's policy.
func fiftyRules() string {
	var b strings.Builder
	b.WriteString(header + "exclude:\n  namespaces: [\"kube-*\"]\n  selectors: [\"keep=true\"]\nrules:\n")
	for i := range 50 {
		fmt.Fprintf(&b, `- name: rule-%02d
  finalizers: ["team%02d.example.com/*"]
  resources: ["widgets%02d.team%02d.example.com"]
  namespaces: ["prod-*", "staging-%02d"]
  selector: "team=team%02d,tier in (db,cache)"
  verify:
    http:
      url: "https://api.team%02d.internal/v1/widgets/{.status.id}"
`, i, i, i, i, i, i, i)
	}
	return b.String()
}

// BenchmarkMatch matches an object against 50 rules: the last rule matching, no rule
// matching, and an excluded namespace.
func BenchmarkMatch(b *testing.B) {
	spec, errs := Decode([]byte(fiftyRules()))
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	p, errs, _ := Compile(spec)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	widgets := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "team49.example.com", Version: "v1", Resource: "widgets49"}, Namespaced: true}
	labels := map[string]string{"team": "team49", "tier": "db", "app": "orders"}
	for _, tt := range []struct {
		name, namespace, finalizer string
		want                       bool
	}{
		{"last-rule", "prod-eu", "team49.example.com/cleanup", true},
		{"no-rule", "prod-eu", "other.example.com/cleanup", false},
		{"excluded", "kube-system", "team49.example.com/cleanup", false},
	} {
		s := SubjectOf(widgets, tt.namespace, "orders", labels)
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got := p.Match(s, tt.finalizer) != nil; got != tt.want {
					b.Fatalf("matched %v", got)
				}
			}
		})
	}
}
