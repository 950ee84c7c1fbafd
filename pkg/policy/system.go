package policy

import (
	"fmt"
	"strings"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
)

// systemOnly warns about a rule every finalizer of which is a system finalizer
// (owner.IsSystem), when the rule does not set allowSystem: reconcile keeps every one of
// them, pass after pass, with the provider's verdict and a System refusal. A pattern
// counts when every name it matches is system: a literal name that is, or a glob whose
// part before the first "/" has no wildcard and is no domain or a reserved one
// (external-attacher/*, snapshot.storage.kubernetes.io/*). A rule of the csi-volume
// preset written before system finalizers were decided by name is the case in point.
func systemOnly(spec *finalizev1alpha1.Rule, finalizers []string) string {
	if spec.AllowSystem || spec.WaitsForNode || len(finalizers) == 0 {
		return ""
	}
	var why []string
	for _, f := range finalizers {
		name := f
		if strings.ContainsAny(f, "*?") {
			prefix, _, found := strings.Cut(f, "/")
			if !found || strings.ContainsAny(prefix, "*?") {
				return ""
			}
			name = prefix + "/x"
		}
		reason := owner.SystemReason(name)
		if reason == "" {
			return ""
		}
		why = append(why, fmt.Sprintf("%s (%s)", f, reason))
	}
	return fmt.Sprintf("rule %s matches only system finalizers, %s, and does not set allowSystem: reconcile keeps every one of them; "+
		"set allowSystem: true for its provider's Gone to remove them (remove asks for --allow-system)", spec.Name, strings.Join(why, ", "))
}
