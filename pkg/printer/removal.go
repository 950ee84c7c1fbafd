package printer

import (
	"fmt"
	"io"

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
		row := []string{r.Target.String(), r.Finalizer, orNone(r.Owner, "<unknown>"), orNone(r.Cause, "<not diagnosed>"), Verification(r)}
		if opts.Results {
			result := string(r.Result)
			if r.Error != "" {
				result += ": " + r.Error
			}
			row = append(row, result)
		}
		rows = append(rows, row)
	}
	return Table(w, headers, rows, opts.NoHeaders)
}

// Verification says in a few words why a removal may happen, or why not.
func Verification(r *finalizev1alpha1.Removal) string {
	verdict := ""
	if r.Rule != "" {
		verdict = fmt.Sprintf("rule %s: %s: %s", r.Rule, r.Verdict, r.Evidence)
	}
	switch {
	case r.Forced() && verdict != "":
		return fmt.Sprintf("UNVERIFIED (%s), forced: %s", verdict, r.Reason)
	case r.Forced():
		return "UNVERIFIED, forced: " + r.Reason
	case r.Rule != "" && r.Verdict == finalizev1alpha1.VerdictGone:
		return fmt.Sprintf("verified by rule %s: %s", r.Rule, r.Evidence)
	case verdict != "":
		return verdict
	}
	return "not verified"
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}
