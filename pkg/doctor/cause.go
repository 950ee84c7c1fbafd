package doctor

import (
	"fmt"
	"sort"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// A Cause is a reason the doctor gives, as scripts, `doctor --help` and docs/doctor.md
// know it. Each rule family registers the causes it gives (register), in its own file.
type Cause struct {
	// Reason is the cause's name in Cause.Reason and RootCause.Reason: part of the contract.
	Reason string
	// Priority orders the causes of one object, and root causes that explain as many
	// objects: what blocks everyone first (0), what the operator can act on next, and
	// "not proven yet" last.
	Priority int
	// Help says when it is given, in a few words, in the doctor's --help.
	Help string
	// Doc says when it is given, in detail, in the table of docs/doctor.md (Markdown).
	Doc string
}

// A family is what one rule file registers: the causes it gives, and the rules it gives
// them by.
type family struct {
	causes []Cause
	// object explains an object as a whole, before its finalizers: the webhooks that
	// reject its updates, a namespace's spec finalizers, a pod's kubelet. Findings of
	// one priority keep their order: object rules first, then each finalizer's, in the
	// object's order, so object rules must not give causes of the same priority.
	object func(d *diagnoser, o *kube.Object) []finding
	// finalizers explain the metadata finalizers the family knows.
	finalizers []rule
}

// A rule explains the finalizers it applies to. A finalizer no rule applies to is its
// controller's (custom); rules apply to finalizers no other rule applies to.
type rule struct {
	applies func(o *kube.Object, fin finalizev1alpha1.Finalizer) bool
	explain func(d *diagnoser, o *kube.Object, fin finalizev1alpha1.Finalizer) []finding
}

// The registry, filled by register as the package is initialized.
var (
	causes      = map[string]Cause{}
	objectRules []func(d *diagnoser, o *kube.Object) []finding
	rules       []rule
)

// register adds a family's causes and rules; a reason registered twice is a bug.
func register(f family) {
	for _, c := range f.causes {
		if _, dup := causes[c.Reason]; dup {
			panic(fmt.Sprintf("doctor: cause %s registered twice", c.Reason))
		}
		causes[c.Reason] = c
	}
	if f.object != nil {
		objectRules = append(objectRules, f.object)
	}
	rules = append(rules, f.finalizers...)
}

// Causes are every cause the doctor gives, most urgent first (by priority, then by
// reason).
func Causes() []Cause {
	out := make([]Cause, 0, len(causes))
	for _, c := range causes {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority < out[j].Priority
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// priority is the priority of reason.
func priority(reason string) int { return causes[reason].Priority }

// explain is the finding of the rule that applies to fin, or of its controller.
func (d *diagnoser) explain(o *kube.Object, fin finalizev1alpha1.Finalizer) []finding {
	for _, r := range rules {
		if r.applies(o, fin) {
			return r.explain(d, o, fin)
		}
	}
	return []finding{d.custom(o, fin)}
}
