package preflight

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// crdInstances: a CRD deleted while instances of it carry finalizers.
type crdInstances struct{}

func (crdInstances) reasons() []Reason {
	return []Reason{{
		Name: finalizev1alpha1.HazardCRDInstancesWithFinalizers, Rank: 4,
		Help:     "a CRD is deleted while its instances carry finalizers (whose, and whether that controller survives)",
		Deleted:  "a CRD whose instances carry finalizers",
		Stranded: "the instances, and the CRD; the message says whose finalizers they are and whether that controller survives the deletion",
	}}
}

func (crdInstances) find(r *run) []finalizev1alpha1.Hazard {
	var h grouped[string] // by CRD name
	owners := map[string][]string{}
	for _, o := range r.kept.finalized {
		crd := r.set.types[o.Resource.GroupResource()]
		if crd == "" {
			continue
		}
		for _, fin := range customFinalizers(o) {
			c := r.controller(o, fin)
			h.add(crd, func() finalizev1alpha1.Hazard {
				return finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardCRDInstancesWithFinalizers, Cause: r.crdRef(crd)}
			}, o.Ref().API())
			var state string
			switch {
			case c.Name == "":
				state = fmt.Sprintf("%s, whose controller is not known", fin.Name)
			case len(c.Workloads) == 0 && len(c.Unread) > 0:
				state = fmt.Sprintf("%s of %s, whose workloads could not be read", fin.Name, c.Name)
			case len(c.Workloads) == 0:
				state = fmt.Sprintf("%s of %s, which runs as no Deployment, StatefulSet or DaemonSet found in the cluster", fin.Name, c.Name)
			case r.survives(c):
				state = fmt.Sprintf("%s of %s, which survives the deletion (%s)", fin.Name, c.Name, describeWorkloads(c.Workloads))
			default:
				state = fmt.Sprintf("%s of %s, which is deleted too (%s)", fin.Name, c.Name, describeWorkloads(c.Workloads))
			}
			if !slices.Contains(owners[crd], state) {
				owners[crd] = append(owners[crd], state)
			}
		}
	}
	var out []finalizev1alpha1.Hazard
	for _, crd := range h.keys {
		hz := h.byKey[crd]
		sortRefs(hz.Objects)
		gr := hz.Objects[0].GroupResource()
		hz.Message = fmt.Sprintf("%s of CRD %s carry finalizers: %s; deleting the CRD deletes them, and it stays Terminating until every finalizer is removed",
			words.Count(len(hz.Objects), "instance"), crd, strings.Join(owners[crd], "; "))
		hz.SafeOrder = append([]string{fmt.Sprintf("while their controllers run, delete the instances; kubectl waits until they are gone: kubectl delete %s --all --all-namespaces", gr)},
			r.finalSteps()...)
		out = append(out, *hz)
	}
	return out
}
