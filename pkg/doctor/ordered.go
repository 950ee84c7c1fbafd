package doctor

import (
	"fmt"
	"strings"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/controller"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"
)

// Ordered namespace deletion (KEP-5080: beta and on by default in Kubernetes 1.33, GA in
// 1.34): the namespace controller deletes a namespace's pods first, and nothing else until
// they are gone. A pod held by a finalizer then holds the whole namespace while the rest
// has no deletionTimestamp yet: nothing of it is stuck, and nothing of it is in the scan's
// stuck objects. What the doctor says of such a namespace comes from what it listed: the
// pods being deleted, the objects not deleted yet, and, among those, the ones that carry a
// finalizer whose remover will not remove it (the same proof as for a stuck object: no
// workload of it runs for the object), which will stick next once the pods are gone.

// orderedDeletion adds to a namespace's finding what waits behind its pods: how many
// objects are not deleted yet, and which of them will, or may, stick next.
func (d *diagnoser) orderedDeletion(o *kube.Object, fd *finding, children []*kube.Object) {
	content := d.f.res.Index.Content[o.Meta.Name]
	if content == nil {
		return
	}
	podsDeleting := false
	for _, c := range children {
		podsDeleting = podsDeleting || c.Resource.GroupResource() == podsResource.GroupResource()
	}
	for _, ref := range content.Sample {
		podsDeleting = podsDeleting || (ref.Deleting && ref.Resource.GroupResource() == podsResource.GroupResource())
	}
	waiting := content.Count - content.Deleting
	if !podsDeleting || waiting <= 0 {
		return
	}
	msg := fmt.Sprintf("the namespace controller deletes the namespace's pods first and nothing else until they are gone (ordered namespace deletion, Kubernetes 1.33 and later), so %s %s not deleted yet, whatever the namespace's conditions say",
		words.Count(int(waiting), "object"), map[bool]string{true: "is", false: "are"}[waiting == 1])
	will, may := d.nextToStick(content.Pending)
	if len(will) > 0 {
		msg += "; once they are deleted, these will stick next, their removers not running for them: " + strings.Join(will, "; ")
	}
	if len(may) > 0 {
		msg += "; these may: " + strings.Join(may, "; ")
	}
	if n := content.PendingCount - int64(len(content.Pending)); n > 0 {
		msg += fmt.Sprintf(" (%s with finalizers not looked at: the doctor keeps %d per namespace)", words.Count(int(n), "more object"), len(content.Pending))
	}
	fd.message += "; " + msg
	if len(will) > 0 {
		fd.next += "; before the pods go, bring back the removers named above (or let them watch this namespace; one installed in this namespace can only run from another), or the namespace will wait on them next"
	}
}

// nextToStick sorts objects not deleted yet that carry finalizers: will are those with a
// finalizer whose remover is proven not to run for the object (or that no controller is
// known to remove, a likely misspelling), may those whose remover has no workload in the
// cluster (it may run outside). Objects whose every remover runs for them, or cannot be
// told (a control-plane owner, an unread workload type), are said neither.
func (d *diagnoser) nextToStick(pending []*kube.Object) (will, may []string) {
	owner.NewResolver(d.catalog, d.f.res.Groups).Annotate(pending)
	for _, p := range pending {
		for _, fin := range p.Finalizers {
			if fin.Field != finalizev1alpha1.FieldMetadataFinalizers {
				continue
			}
			switch certain, why := d.removerAbsent(p, fin); {
			case why == "":
			case certain:
				will = append(will, fmt.Sprintf("%s (%s: %s)", p.Ref(), fin.Name, why))
			default:
				may = append(may, fmt.Sprintf("%s (%s: %s)", p.Ref(), fin.Name, why))
			}
		}
	}
	return will, may
}

// removerAbsent says why the remover of fin will not remove it from o, an object not
// deleted yet: certain when that is proven (nobody is known to remove a misspelled
// finalizer; every workload of its remover found is down or scoped away from o's
// namespace), else only possible (no workload of it found: it may run outside; or ready
// copies that may watch o's namespace, ScopeUnproven). Empty when it runs for o, or
// nothing tells.
func (d *diagnoser) removerAbsent(o *kube.Object, fin finalizev1alpha1.Finalizer) (certain bool, why string) {
	if fin.Resembles != "" {
		return true, "no controller is known to remove it, a likely misspelling of " + fin.Resembles
	}
	id := controller.Identify(d.catalog, o, fin)
	if (id.Entry != nil && id.Entry.ControlPlane) || id.Who == "" || len(id.WorkloadNames) == 0 {
		return false, ""
	}
	ws := d.f.workloads.Workloads(d.f.ctx, id.WorkloadNames...)
	if len(ws.Unread) > 0 {
		return false, ""
	}
	var down, unproven []string
	for _, w := range ws.Found {
		if w.Namespace == o.Meta.Namespace {
			// In the namespace being deleted: its pods go first, and no pod can be created
			// in a namespace being deleted.
			down = append(down, fmt.Sprintf("%s %s/%s is in this namespace, whose pods go first: it cannot run here again", w.Kind, w.Namespace, w.Name))
			continue
		}
		if !w.Running() {
			down = append(down, w.String())
			continue
		}
		ex := w.Excludes(o.Meta.Namespace)
		if ex == "" {
			why := w.ScopeUnproven(ws, o.Meta.Namespace)
			if why == "" {
				return false, ""
			}
			unproven = append(unproven, fmt.Sprintf("%s %s/%s: %s", w.Kind, w.Namespace, w.Name, why))
			continue
		}
		down = append(down, fmt.Sprintf("%s %s/%s: %s", w.Kind, w.Namespace, w.Name, ex))
	}
	if len(unproven) > 0 {
		// A ready copy may watch the object's namespace: possible only.
		return false, fmt.Sprintf("%s removes it, and no install of it is proven to watch namespace %s: %s", id.Who, o.Meta.Namespace, strings.Join(append(unproven, down...), "; "))
	}
	if len(down) == 0 {
		return false, fmt.Sprintf("no workload of %s, which removes it, was found in the cluster; it may run outside", id.Who)
	}
	return true, fmt.Sprintf("%s removes it, and %s", id.Who, strings.Join(down, ", "))
}
