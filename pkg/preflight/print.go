package preflight

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/printer"
)

// Deletion names the deletion a report is about, for people: "deleting namespaces/ops"
// or "uninstalling Helm release ops/db-operator (revision 3)".
func Deletion(rep *finalizev1alpha1.PreflightReport) string {
	if rep.HelmRelease != "" {
		return fmt.Sprintf("uninstalling Helm release %s (revision %d)", rep.HelmRelease, rep.HelmRevision)
	}
	names := make([]string, 0, len(rep.Targets))
	for _, t := range rep.Targets {
		names = append(names, t.String())
	}
	return "deleting " + strings.Join(names, ", ")
}

// Stranded counts the objects the hazards would leave stuck, each once.
func Stranded(rep *finalizev1alpha1.PreflightReport) int {
	seen := map[types.UID]bool{}
	n := 0
	for _, h := range rep.Hazards {
		for _, o := range h.Objects {
			if o.UID == "" || !seen[o.UID] {
				seen[o.UID] = true
				n++
			}
		}
	}
	return n
}

// Print writes the hazards of a report grouped by what causes them: each with what it
// would strand and the safe order. A report without hazards prints nothing: the command
// says so on stderr.
func Print(w io.Writer, rep *finalizev1alpha1.PreflightReport) error {
	if len(rep.Hazards) == 0 {
		return nil
	}
	var b strings.Builder
	d := Deletion(rep)
	fmt.Fprintf(&b, "%s%s deletes %s in all and would leave %s stuck, for %s.\n", strings.ToUpper(d[:1]), d[1:], words.Count(rep.Deleted, "object"),
		words.Count(Stranded(rep), "object"), words.Count(len(rep.Hazards), "reason"))
	for i := range rep.Hazards {
		h := &rep.Hazards[i]
		fmt.Fprintf(&b, "\n%d. %s: %s\n", i+1, h.Reason, h.Cause)
		fmt.Fprintf(&b, "   %s\n", h.Message)
		if len(h.Objects) > 0 {
			fmt.Fprintf(&b, "   Strands %s:\n", words.Count(len(h.Objects), "object"))
			for _, line := range printer.ByNamespace(h.Objects) {
				fmt.Fprintf(&b, "     %s\n", line)
			}
		}
		b.WriteString("   Safe order:\n")
		for j, step := range h.SafeOrder {
			fmt.Fprintf(&b, "     %d. %s\n", j+1, step)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Names writes the stranded objects, each once, one a line as `kubectl get -o name`
// prints them (kind.group/name), as scan -o name does.
func Names(w io.Writer, rep *finalizev1alpha1.PreflightReport) error {
	seen := map[string]bool{}
	var b strings.Builder
	for _, h := range rep.Hazards {
		for _, o := range h.Objects {
			k := o.Namespace + "/" + o.KindName()
			if seen[k] {
				continue
			}
			seen[k] = true
			b.WriteString(o.KindName() + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
