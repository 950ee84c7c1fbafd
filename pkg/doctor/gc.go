package doctor

import (
	"fmt"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

func init() {
	register(family{
		causes: []Cause{
			{Reason: finalizev1alpha1.ReasonDependentsRemaining, Priority: 2,
				Help: "dependents that block their owner's deletion still exist",
				Doc:  "`foregroundDeletion`: the dependents with `blockOwnerDeletion` that still exist"},
		},
		finalizers: []rule{
			{applies: func(_ *kube.Object, fin finalizev1alpha1.Finalizer) bool {
				return fin.Name == metav1.FinalizerDeleteDependents
			},
				explain: func(d *diagnoser, o *kube.Object, _ finalizev1alpha1.Finalizer) []finding { return d.foreground(o) }},
			{applies: func(_ *kube.Object, fin finalizev1alpha1.Finalizer) bool {
				return fin.Name == metav1.FinalizerOrphanDependents
			},
				explain: func(d *diagnoser, o *kube.Object, _ finalizev1alpha1.Finalizer) []finding { return d.orphan(o) }},
		},
	})
}

const gcOwner = "garbage collector (kube-controller-manager)"

// garbageCollectorFindings explain why the garbage collector has not finished: a
// discovery failure, or the garbage collector is not running.
func (d *diagnoser) garbageCollectorFindings(o *kube.Object, what string) []finding {
	if gvs := d.f.discoveryFailures(); len(gvs) > 0 {
		return d.apiServiceFindings(gvs, "the garbage collector may be waiting for discovery of %s to "+what)
	}
	msg := fmt.Sprintf("nothing is left for the garbage collector to wait for, yet it has not removed its finalizer %s after the deletion began", duration.HumanDuration(o.Terminating(d.f.now)))
	return []finding{rooted(finalizev1alpha1.ReasonControllerInactive, controllerSubject(gcOwner), msg,
		"check that kube-controller-manager runs with the garbage collector enabled",
		"the garbage collector is not finishing deletions")}
}

// foreground: the garbage collector deletes the dependents that block their owner's
// deletion, then removes foregroundDeletion.
func (d *diagnoser) foreground(o *kube.Object) []finding {
	var blocking []scan.Dependent
	for _, dep := range d.f.res.Index.Dependents[o.Meta.UID] {
		if dep.BlockOwnerDeletion {
			blocking = append(blocking, dep)
		}
	}
	if len(blocking) == 0 {
		return d.garbageCollectorFindings(o, "finish the foreground deletion")
	}
	fd := finding{reason: finalizev1alpha1.ReasonDependentsRemaining,
		next: "the garbage collector removes foregroundDeletion once these dependents are gone: see their causes"}
	var names []string
	notDeleted := 0
	for _, dep := range blocking {
		r := dep.API()
		if s, ok := d.f.byUID[dep.UID]; ok {
			fd.waitsOn = append(fd.waitsOn, s)
			fd.blockers = append(fd.blockers, stuckBlocker(s, "stuck"))
			names = append(names, r.String()+" (stuck)")
			continue
		}
		state := "not deleted yet"
		if dep.Deleting {
			state = "being deleted"
		} else {
			notDeleted++
		}
		fd.blockers = append(fd.blockers, finalizev1alpha1.Blocker{Target: r, Message: state})
		names = append(names, r.String()+" ("+state+")")
	}
	fd.message = fmt.Sprintf("deleted in the foreground, it waits for %s with blockOwnerDeletion: %s", words.Count(len(blocking), "dependent"), strings.Join(names, ", "))
	out := []finding{fd}
	if len(fd.waitsOn) == 0 {
		if notDeleted > 0 {
			// The garbage collector should have deleted them.
			out = append(out, d.garbageCollectorFindings(o, "delete the dependents")...)
		} else {
			out = append(out, progressing(o, "its dependents are being deleted", gcOwner))
		}
	}
	return out
}

// orphan: the garbage collector removes the owner's reference from every dependent, then
// removes orphan.
func (d *diagnoser) orphan(o *kube.Object) []finding {
	n := len(d.f.res.Index.Dependents[o.Meta.UID])
	fs := d.garbageCollectorFindings(o, "orphan the dependents")
	still := "no dependent names it as owner any more"
	switch {
	case n == 1:
		still = "1 dependent still names it as owner"
	case n > 1:
		still = fmt.Sprintf("%d dependents still name it as owner", n)
	}
	for i := range fs {
		fs[i].message = fmt.Sprintf("deleted with propagationPolicy Orphan, %s; %s", still, fs[i].message)
	}
	return fs
}
