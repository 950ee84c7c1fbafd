package preflight

import (
	"fmt"
	"slices"
	"strings"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/controller"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
)

// Who removes a finalizer, as the doctor finds it, and whether the deletion takes it away.

// finalizerController is who is expected to remove a finalizer (controller.Identify),
// and the workloads found for it anywhere in the cluster.
type finalizerController struct {
	// Name is the controller's name in messages, "" when nothing names one.
	Name string
	// Workloads are its Deployments, StatefulSets and DaemonSets; Unread the workload
	// kinds that could not be read: absence is not proven.
	Workloads []controller.Workload
	Unread    []string
}

// controller is the controller of fin on o (fin's owner filled in by pkg/owner), found
// once.
func (r *run) controller(o *kube.Object, fin finalizev1alpha1.Finalizer) finalizerController {
	m := r.controllers[o.Meta.UID]
	if m == nil {
		m = map[string]finalizerController{}
		r.controllers[o.Meta.UID] = m
	}
	c, ok := m[fin.Name]
	if !ok {
		id := controller.Identify(owner.Builtin(), o, fin)
		c.Name = id.Who
		if len(id.WorkloadNames) > 0 {
			ws := r.finder.Workloads(r.ctx, id.WorkloadNames...)
			c.Workloads, c.Unread = ws.Found, ws.Unread
		}
		m[fin.Name] = c
	}
	return c
}

// customFinalizers are o's metadata finalizers that Kubernetes' control plane does not
// remove: those of controllers that run in the cluster, and may be deleted with it. A
// system finalizer (owner.IsSystem) may be one: the CSI sidecars' and a Gateway API
// implementation's names are in domains Kubernetes reserves, and their controllers run
// as workloads. Only the catalogue's control-plane entries are left out; a name it does
// not know is kept, since nothing shows that the control plane removes it.
func customFinalizers(o *kube.Object) []finalizev1alpha1.Finalizer {
	var out []finalizev1alpha1.Finalizer
	for _, f := range o.Finalizers {
		if f.Field != finalizev1alpha1.FieldMetadataFinalizers {
			continue
		}
		if e, ok := owner.Builtin().Lookup(f.Name); ok && e.ControlPlane {
			continue
		}
		out = append(out, f)
	}
	return out
}

// workloadRef is the reference to a controller's workload, uid included when it was
// listed.
func (r *run) workloadRef(w controller.Workload) finalizev1alpha1.ObjectReference {
	gr := workloadKindGR[w.Kind]
	if ref, ok := r.kept.workloads[nameKey(gr, w.Namespace, w.Name)]; ok {
		return ref
	}
	return kube.Resource{GroupVersionResource: gr.WithVersion("v1"), Kind: w.Kind, Namespaced: true}.Ref(w.Namespace, w.Name, "")
}

// survives says whether a workload of the controller that runs (asks for pods) is not
// deleted.
func (r *run) survives(c finalizerController) bool {
	for _, w := range c.Workloads {
		if !r.set.has(r.workloadRef(w)) && w.Desired > 0 {
			return true
		}
	}
	return false
}

// servedAfter says whether a workload of the controller that stays runs and, as far as
// its pod template says, watches namespace ns.
func (r *run) servedAfter(c finalizerController, ns string) bool {
	for _, w := range c.Workloads {
		if !r.set.has(r.workloadRef(w)) && w.Desired > 0 && w.WatchesNamespace(ns) {
			return true
		}
	}
	return false
}

// anyDeleted says whether the deletion removes a workload of the controller: if not,
// it changes nothing to whether the controller runs.
func (r *run) anyDeleted(c finalizerController) bool {
	for _, w := range c.Workloads {
		if r.set.has(r.workloadRef(w)) {
			return true
		}
	}
	return false
}

// idle describes the workloads of c that stay but do not remove finalizers of objects in
// namespace ns: scaled to zero, or limited to other namespaces.
func (r *run) idle(c finalizerController, ns string) string {
	var out []string
	for _, w := range c.Workloads {
		switch {
		case r.set.has(r.workloadRef(w)):
		case w.Desired == 0:
			out = append(out, fmt.Sprintf("%s %s/%s (scaled to 0)", w.Kind, w.Namespace, w.Name))
		case !w.WatchesNamespace(ns):
			out = append(out, fmt.Sprintf("%s %s/%s (watches only %s)", w.Kind, w.Namespace, w.Name, strings.Join(w.WatchedNamespaces(), ", ")))
		}
	}
	return strings.Join(out, ", ")
}

// unreadWorkloads makes the prediction incomplete for the workload kinds of c that could
// not be read (once a type): whether the deletion removes c is not known.
func (r *run) unreadWorkloads(c finalizerController) {
	for _, kind := range c.Unread {
		gr, ok := workloadKindGR[kind]
		if !ok {
			continue
		}
		gv := gr.WithVersion("v1").GroupVersion().String()
		if slices.ContainsFunc(r.rep.Incomplete, func(in finalizev1alpha1.IncompleteResource) bool {
			return in.GroupVersion == gv && (in.Resource == "" || in.Resource == gr.Resource)
		}) {
			continue
		}
		r.rep.Incomplete = append(r.rep.Incomplete, finalizev1alpha1.IncompleteResource{GroupVersion: gv, Resource: gr.Resource, Reason: finalizev1alpha1.ReasonListFailed,
			Message: fmt.Sprintf("the %ss of %s, which removes finalizers, could not be read: whether the deletion removes it is not known", kind, c.Name)})
	}
}

// survivorsElsewhere names the workloads of c that stay, when the deletion removes every
// workload of c in namespace ns and at least one is there; "" otherwise.
func (r *run) survivorsElsewhere(c finalizerController, ns string) string {
	if ns == "" {
		return ""
	}
	var here, stay []controller.Workload
	for _, w := range c.Workloads {
		deleted := r.set.has(r.workloadRef(w))
		serves := !deleted && w.Desired > 0 && w.WatchesNamespace(ns)
		switch {
		case w.Namespace == ns && serves:
			return ""
		case w.Namespace == ns && deleted:
			here = append(here, w)
		case serves && w.WatchedNamespaces() != nil:
			return "" // it says it watches ns
		case serves:
			stay = append(stay, w)
		}
	}
	if len(here) == 0 || len(stay) == 0 {
		return ""
	}
	return describeWorkloads(stay)
}

// deletedOf are the workloads of c the deletion removes.
func (r *run) deletedOf(c finalizerController) []controller.Workload {
	var out []controller.Workload
	for _, w := range c.Workloads {
		if r.set.has(r.workloadRef(w)) {
			out = append(out, w)
		}
	}
	return out
}

// deletedIn are the workloads of c in namespace ns.
func (r *run) deletedIn(c finalizerController, ns string) []controller.Workload {
	var out []controller.Workload
	for _, w := range c.Workloads {
		if w.Namespace == ns {
			out = append(out, w)
		}
	}
	return out
}

// deletedWorkloadRef is the cause of a ControllerDeleted hazard: the controller's first
// workload in namespace ns that the deletion removes, else its first.
func (r *run) deletedWorkloadRef(c finalizerController, ns string) finalizev1alpha1.ObjectReference {
	for _, w := range c.Workloads {
		if ref := r.workloadRef(w); w.Namespace == ns && r.set.has(ref) {
			return ref
		}
	}
	return r.workloadRef(c.Workloads[0])
}

// describeWorkloads is "Deployment ops/db-operator, StatefulSet ...".
func describeWorkloads(ws []controller.Workload) string {
	var out []string
	for _, w := range ws {
		out = append(out, fmt.Sprintf("%s %s/%s", w.Kind, w.Namespace, w.Name))
	}
	return strings.Join(out, ", ")
}
