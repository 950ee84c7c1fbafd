package reconcile

import (
	"fmt"
	"slices"
	"strings"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// Outcome is how a pass ended, for its exit status (docs/reconcile.md, "Exit status") and
// its metrics. The command maps each to an exit code.
type Outcome string

// The outcomes of a pass, in order of precedence: the breaker, which wrote nothing,
// first; then a failure (a removal failed, a rule is broken, or a rule could verify
// nothing: its provider cannot run, or answered Unknown about every live control); then
// an incomplete scan, on which what could be verified was still acted on.
const (
	OutcomeBreaker    Outcome = "breaker"
	OutcomeFailed     Outcome = "failed"
	OutcomeIncomplete Outcome = "incomplete"
	OutcomeOK         Outcome = "ok"
)

// OutcomeOf is the outcome of a pass and the reason for it, empty when all is well.
func OutcomeOf(rep *finalizev1alpha1.ReconcileReport) (Outcome, string) {
	if b := rep.Breaker; b != nil {
		if b.Planned <= b.MaxRemovals {
			return OutcomeBreaker, fmt.Sprintf("the breaker tripped: the pass planned %d force deletions of pods, more than the %d allowed (maxForceDeletions); nothing was removed", b.PlannedForceDeletions, b.MaxForceDeletions)
		}
		return OutcomeBreaker, fmt.Sprintf("the breaker tripped: the pass planned %d removals, more than the %d allowed; nothing was removed", b.Planned, b.MaxRemovals)
	}
	var broken, cannot []string
	for _, st := range rep.Rules {
		if st.Broken {
			broken = append(broken, st.Rule)
		}
		if st.CannotVerify != "" {
			cannot = append(cannot, fmt.Sprintf("rule %s cannot verify: %s", st.Rule, st.CannotVerify))
		}
	}
	var why []string
	if failed := rep.Summary[finalizev1alpha1.ResultFailed]; failed > 0 {
		why = append(why, fmt.Sprintf("%d of the removals failed", failed))
	}
	if len(broken) > 0 {
		why = append(why, fmt.Sprintf("rule %s is broken: its provider called a live object gone, so nothing was removed under it", joinNames(broken)))
	}
	// A rule that can verify nothing keeps a scheduled pass green while it does nothing.
	why = append(why, cannot...)
	switch {
	case len(why) > 0:
		return OutcomeFailed, strings.Join(why, "; ")
	case len(rep.Incomplete) > 0:
		return OutcomeIncomplete, "the scan is incomplete: objects of the types it could not list were not considered"
	}
	return OutcomeOK, ""
}

func joinNames(names []string) string {
	slices.Sort(names)
	out := names[0]
	for _, n := range names[1:] {
		out += ", " + n
	}
	return out
}
