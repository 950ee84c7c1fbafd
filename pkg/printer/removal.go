package printer

import (
	"fmt"
	"io"
	"strings"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// RemovalTableOptions choose the columns of a table of removals.
type RemovalTableOptions struct {
	// Results adds the RESULT column: what happened, or would happen in a dry run.
	Results   bool
	NoHeaders bool
}

// Removals prints planned or carried-out removals: OBJECT, FINALIZER, OWNER, CAUSE and
// VERIFICATION, and RESULT with Results. `remove` previews its plan this way and
// `reconcile` reports its pass this way, so both read alike.
func Removals(w io.Writer, removals []finalizev1alpha1.Removal, opts RemovalTableOptions) error {
	headers := []string{"object", "finalizer", "owner", "cause", "verification"}
	if opts.Results {
		headers = append(headers, "result")
	}
	rows := make([][]string, 0, len(removals))
	for i := range removals {
		r := &removals[i]
		finalizer, owner := r.Finalizer, orNone(r.Owner, "<unknown>")
		if r.Action == finalizev1alpha1.ActionForceDelete {
			// No finalizer is removed: the pod is deleted at once, in place of the
			// kubelet of its node, which does not answer.
			finalizer, owner = "<force delete>", orNone(r.Owner, kubelet(r.Node))
		}
		row := []string{r.Target.String(), finalizer, owner, orNone(r.Cause, "<not diagnosed>"), Verification(r)}
		if opts.Results {
			row = append(row, Result(r))
		}
		rows = append(rows, row)
	}
	return Table(w, headers, rows, opts.NoHeaders)
}

// Verification says in a few words why a removal may happen, or why not. Only a Gone
// the removal went ahead on (or would, in a plan or a dry run) reads "verified": a Gone
// that was kept (its rule not trusted, its controls unread, a system finalizer, ...) is
// shown as the rule's answer, and the result says why it was kept.
func Verification(r *finalizev1alpha1.Removal) string {
	verdict := ""
	switch {
	case r.Rule != "" && r.Verdict == "":
		// Not asked (too young, not read): the evidence says why.
		verdict = fmt.Sprintf("rule %s: %s", r.Rule, r.Evidence)
	case r.Rule != "":
		verdict = fmt.Sprintf("rule %s: %s: %s", r.Rule, r.Verdict, r.Evidence)
	}
	switch {
	case r.Forced() && verdict != "":
		return fmt.Sprintf("UNVERIFIED (%s), forced: %s", verdict, r.Reason)
	case r.Forced():
		return "UNVERIFIED, forced: " + r.Reason
	case r.Rule != "" && r.Verdict == finalizev1alpha1.VerdictGone && wentAhead(r.Result):
		return fmt.Sprintf("verified by rule %s: %s", r.Rule, r.Evidence)
	case verdict != "":
		return verdict
	}
	return "not verified"
}

// wentAhead reports whether a removal with this result was made on its verification,
// or is planned to be (no result yet).
func wentAhead(result finalizev1alpha1.RemovalResult) bool {
	switch result {
	case "", finalizev1alpha1.ResultRemoved, finalizev1alpha1.ResultWouldRemove, finalizev1alpha1.ResultAlreadyRemoved, finalizev1alpha1.ResultObjectGone:
		return true
	}
	return false
}

// Result is the RESULT cell: what happened and, for a finalizer kept or a removal that
// failed, why, in one phrase: the message up to its first "; " (the rest, and the
// evidence, are in -o json), or the error.
func Result(r *finalizev1alpha1.Removal) string {
	result := string(r.Result)
	switch {
	case r.Error != "":
		result += ": " + r.Error
	case r.Message != "":
		why, _, _ := strings.Cut(r.Message, "; ")
		result += ": " + why
	}
	return result
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}
