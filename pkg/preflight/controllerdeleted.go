package preflight

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/controller"
)

// controllerDeleted: objects whose finalizers' controller the deletion removes. Objects
// in a namespace deleted with their operator inside are OperatorDeletedFirst; any other
// is ControllerDeleted.
type controllerDeleted struct{}

func (controllerDeleted) reasons() []Reason {
	return []Reason{{
		Name: finalizev1alpha1.HazardOperatorDeletedFirst, Rank: 2,
		Help: "a namespace is deleted with its operator inside, and objects there carry the operator's finalizers: " +
			"the namespace controller deletes pods first",
		Deleted:  "a namespace that holds an operator and objects carrying its finalizers",
		Stranded: "those objects, and so the namespace: the namespace controller deletes pods first, so the operator is gone before it can remove its finalizers",
	}, {
		Name: finalizev1alpha1.HazardControllerDeleted, Rank: 3,
		Help: "objects anywhere carry a finalizer whose controller the deletion removes (its field manager or catalogue entry, " +
			"and the Deployments, StatefulSets and DaemonSets named like it, as the doctor finds them)",
		Deleted:  "every Deployment, StatefulSet and DaemonSet a controller runs as",
		Stranded: "every object, anywhere in the cluster, that carries a finalizer of that controller: those deleted with it stay Terminating, the others the day they are deleted",
	}}
}

// controllerKey groups the objects of one hazard: by reason and controller, and by
// namespace when the controller's fate differs by namespace.
type controllerKey struct {
	reason, controller string
	perNamespace       bool
	namespace          string
}

// controllerGroup is what one hazard says of its controller.
type controllerGroup struct {
	// controller is its name, workloads the workloads the deletion removes, finalizers
	// the finalizers of it the objects carry.
	controller, workloads string
	finalizers            []string
	// survivors are its workloads that stay elsewhere; idle those that stay but do not
	// remove these finalizers.
	survivors, idle string
}

func (controllerDeleted) find(r *run) []finalizev1alpha1.Hazard {
	var h grouped[controllerKey]
	groups := map[controllerKey]*controllerGroup{}
	for _, o := range r.kept.finalized {
		for _, fin := range customFinalizers(o) {
			c := r.controller(o, fin)
			ns := o.Meta.Namespace
			if len(c.Unread) > 0 {
				// A workload that stays proves the controller survives whatever could not
				// be read; anything else is not known.
				if proven := r.servedAfter(c, ns) && r.survivorsElsewhere(c, ns) == ""; !proven {
					r.unreadWorkloads(c)
				}
				continue
			}
			if len(c.Workloads) == 0 || !r.anyDeleted(c) {
				continue
			}
			// A workload of the controller that survives elsewhere removes the finalizers
			// of an object whose own namespace loses the controller's only workload there
			// only if it watches that namespace: an operator installed once per namespace
			// does not. The hazard is said, with the survivors named.
			others := r.survivorsElsewhere(c, ns)
			if r.servedAfter(c, ns) && others == "" {
				continue
			}
			idleHere := ""
			if others == "" {
				idleHere = r.idle(c, ns)
			}
			inside := ns != "" && r.set.namespaces[ns] && slices.ContainsFunc(c.Workloads, func(w controller.Workload) bool { return w.Namespace == ns })
			var key controllerKey
			if inside {
				key = controllerKey{reason: finalizev1alpha1.HazardOperatorDeletedFirst, controller: c.Name, perNamespace: true, namespace: ns}
				h.add(key, func() finalizev1alpha1.Hazard {
					return finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardOperatorDeletedFirst, Cause: r.namespaceRef(ns)}
				}, o.Ref().API())
			} else {
				key = controllerKey{reason: finalizev1alpha1.HazardControllerDeleted, controller: c.Name}
				if others != "" || idleHere != "" {
					key.perNamespace, key.namespace = true, ns
				}
				h.add(key, func() finalizev1alpha1.Hazard {
					cause := r.workloadRef(c.Workloads[0])
					if others != "" {
						cause = r.deletedWorkloadRef(c, ns)
					}
					return finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardControllerDeleted, Cause: cause}
				}, o.Ref().API())
			}
			g := groups[key]
			if g == nil {
				g = &controllerGroup{controller: c.Name, workloads: describeWorkloads(c.Workloads)}
				switch {
				case others != "":
					g.survivors, g.workloads = others, describeWorkloads(r.deletedIn(c, ns))
				case idleHere != "":
					g.idle, g.workloads = idleHere, describeWorkloads(r.deletedOf(c))
				}
				groups[key] = g
			}
			if !slices.Contains(g.finalizers, fin.Name) {
				g.finalizers = append(g.finalizers, fin.Name)
			}
		}
	}
	var out []finalizev1alpha1.Hazard
	for _, key := range h.keys {
		hz, g := h.byKey[key], groups[key]
		name, workloads := g.controller, g.workloads
		sortRefs(hz.Objects)
		finalizers := strings.Join(g.finalizers, ", ")
		var deleting, staying []finalizev1alpha1.ObjectReference
		for _, o := range hz.Objects {
			if r.set.has(o) {
				deleting = append(deleting, o)
			} else {
				staying = append(staying, o)
			}
		}
		switch hz.Reason {
		case finalizev1alpha1.HazardOperatorDeletedFirst:
			hz.Message = fmt.Sprintf("namespace %s holds %s (%s) and %s that carry its finalizers (%s): deleting the namespace deletes its pods first, so %s is gone before it can remove them, and the namespace stays Terminating",
				hz.Cause.Name, name, workloads, words.Count(len(hz.Objects), "object"), finalizers, name)
			if others := g.survivors; others != "" {
				hz.Message += fmt.Sprintf(" (unless %s, which stays, watches namespace %s: an operator installed per namespace does not)", others, hz.Cause.Name)
			}
			if idle := g.idle; idle != "" {
				hz.Message += fmt.Sprintf("; %s stays but does not remove them", idle)
			}
			hz.SafeOrder = append([]string{fmt.Sprintf("while %s runs, delete the objects that carry its finalizers; kubectl waits until they are gone: %s", name, strings.Join(deleteCommands(hz.Objects), "; "))},
				r.finalSteps()...)
		default:
			msg := fmt.Sprintf("%s removes %s and runs only as %s, which the deletion removes", name, finalizers, workloads)
			if idle := g.idle; idle != "" {
				msg = fmt.Sprintf("%s removes %s and runs as %s, which the deletion removes; %s stays but does not remove them", name, finalizers, workloads, idle)
			}
			if others := g.survivors; others != "" {
				msg = fmt.Sprintf("%s removes %s; the deletion removes %s, its only workload in namespace %s, and %s, which stays, removes them only if it watches namespace %s (an operator installed per namespace does not)",
					name, finalizers, workloads, hz.Objects[0].Namespace, others, hz.Objects[0].Namespace)
			}
			switch {
			case len(staying) == 0:
				msg += fmt.Sprintf(": %s deleted with it would stay Terminating", words.Count(len(deleting), "object"))
			case len(deleting) == 0:
				msg += ": " + stayStuck(len(staying), "object")
			default:
				msg += fmt.Sprintf(": %s deleted with it would stay Terminating, and %s", words.Count(len(deleting), "object"), stayStuck(len(staying), "other"))
			}
			hz.Message = msg
			hz.SafeOrder = []string{fmt.Sprintf("while %s runs, delete the objects that carry its finalizers; kubectl waits until they are gone: %s", name, strings.Join(deleteCommands(hz.Objects), "; "))}
			if len(staying) > 0 {
				hz.SafeOrder[0] += fmt.Sprintf(" (or, for those meant to stay, keep %s installed as long as they exist)", name)
			}
			hz.SafeOrder = append(hz.SafeOrder, r.finalSteps()...)
		}
		out = append(out, *hz)
	}
	return out
}
