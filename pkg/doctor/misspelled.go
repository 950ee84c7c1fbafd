package doctor

import (
	"fmt"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
)

func init() {
	register(family{
		causes: []Cause{
			{Reason: finalizev1alpha1.ReasonFinalizerMisspelled, Priority: 4,
				Help: "no controller removes the finalizer: it is likely a misspelling of a known one",
				Doc:  "the catalogue does not know the finalizer, and it is one or two edits from a catalogued finalizer of the same project's domain (`resembles` in `-o json`): no controller is known to remove it, whoever wrote it, so it stays until a person removes it"},
		},
		finalizers: []rule{{
			applies: func(_ *kube.Object, fin finalizev1alpha1.Finalizer) bool { return fin.Resembles != "" },
			explain: func(d *diagnoser, o *kube.Object, fin finalizev1alpha1.Finalizer) []finding {
				return []finding{d.misspelled(o, fin)}
			},
		}},
	})
}

// misspelled explains a finalizer the catalogue does not know that resembles one it
// does: nobody is known to remove it.
func (d *diagnoser) misspelled(o *kube.Object, fin finalizev1alpha1.Finalizer) finding {
	known := fin.Resembles
	remover := "its controller"
	if e, ok := d.catalog.Lookup(known); ok && e.Owner != "" {
		remover = e.Owner
	}
	by := ""
	if fin.AddedBy != "" {
		by = fmt.Sprintf(" (written by %s)", fin.AddedBy)
	}
	removeCmd := fmt.Sprintf("kubectl finalize remove %s --finalizer %s --force-unverified --reason \"misspelling of %s\"", o.Ref(), fin.Name, known)
	if owner.IsSystem(fin.Name) {
		removeCmd += " --allow-system"
	}
	return rooted(finalizev1alpha1.ReasonFinalizerMisspelled, finalizev1alpha1.Subject{Kind: "Finalizer", Name: fin.Name},
		fmt.Sprintf("no controller is known to remove %s%s: it is likely a misspelling of %s, which %s removes", fin.Name, by, known, remover),
		fmt.Sprintf("correct the name where it is written (kubectl get %s -o yaml --show-managed-fields shows who wrote it) to %s; "+
			"%s does not act on the misspelled one, so once you have checked what the object should have had cleaned up, remove it: %s", o.Ref(), known, remover, removeCmd),
		fmt.Sprintf("%s is likely a misspelling of %s: nobody removes it", fin.Name, known))
}
