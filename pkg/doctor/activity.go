package doctor

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/controller"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Whether a controller runs: what it wrote, to the object and anywhere the scan looked.

// activity is what a controller wrote: to the object, and anywhere the scan looked.
type activity struct {
	// objLast is its latest write to the object; wroteObj: after the deletion began.
	objLast  time.Time
	wroteObj bool
	// anyLast is its latest write anywhere the scan looked (seen: it wrote something);
	// wroteElsewhere: after the deletion began, and later than its last write to the
	// object, so to other objects.
	anyLast        time.Time
	seen           bool
	wroteElsewhere bool
	// group is set when only writes to objects of the object's own API group count: the
	// manager's name is one many programs share (sharedManagerName). ignoredLast is then
	// its latest write to other groups after the deletion began, not counted (ignored:
	// there is one).
	group       *string
	ignoredLast time.Time
	ignored     bool
}

// sharedManagerName reports whether many programs may write as field manager m
// (controller.SharedName): its writes count for a controller only in the API group of
// the object the controller holds, where the same name is far more likely the same
// program.
func sharedManagerName(m string) bool { return controller.SharedName(m) }

// elsewhere says where the writes elsewhere that count were measured.
func (a *activity) elsewhere() string {
	switch {
	case a.group == nil:
		return "other objects"
	case *a.group == "":
		return "other objects of the core API group"
	}
	return "other objects of API group " + *a.group
}

// ignoredNote says what writes of a shared manager name were not counted, or "".
func (a *activity) ignoredNote(now time.Time, manager string) string {
	if !a.ignored {
		return ""
	}
	return fmt.Sprintf("%s wrote to objects of other API groups %s ago, which is not counted: many programs write as %s, so only its writes to the object's own API group count", manager, ago(now, a.ignoredLast), manager)
}

// activity measures the writes of id's field manager. managedFields keep whole seconds:
// a write in the very second of the deletion proves nothing.
func (d *diagnoser) activity(o *kube.Object, id *controller.Identity) activity {
	var a activity
	if id.Manager == "" {
		return a
	}
	deleted := o.Meta.DeletionTimestamp.Time
	for i := range o.Meta.ManagedFields {
		e := &o.Meta.ManagedFields[i]
		if e.Manager == id.Manager && e.Time != nil && e.Time.After(a.objLast) {
			a.objLast = e.Time.Time
		}
	}
	a.wroteObj = a.objLast.After(deleted)
	if sharedManagerName(id.Manager) {
		group := o.Resource.Group
		a.group = &group
		a.anyLast, a.seen = d.f.res.ManagerGroupActivity[scan.ManagerGroup{Manager: id.Manager, Group: group}]
		if all, ok := d.f.res.ManagerActivity[id.Manager]; ok && all.After(a.anyLast) && all.After(deleted) && all.After(a.objLast) {
			a.ignoredLast, a.ignored = all, true
		}
	} else {
		a.anyLast, a.seen = d.f.res.ManagerActivity[id.Manager]
	}
	a.wroteElsewhere = a.anyLast.After(deleted) && a.anyLast.After(a.objLast)
	return a
}

// aliveEvidence says why a controller is taken to run.
func aliveEvidence(now time.Time, running []controller.Workload, act activity, recentElsewhere bool) []string {
	var out []string
	for _, w := range running {
		out = append(out, "its "+w.String())
	}
	if recentElsewhere || (len(running) == 0 && act.wroteElsewhere) {
		out = append(out, fmt.Sprintf("it wrote to %s %s ago, which proves it runs, not that it works on this one", act.elsewhere(), ago(now, act.anyLast)))
	}
	if len(out) == 0 && act.wroteObj {
		out = append(out, fmt.Sprintf("it wrote this object %s ago", ago(now, act.objLast)))
	}
	return out
}

// scope is where the scan measured the writes of field managers: "in the cluster", or
// the part of it the scan was limited to.
func (f *facts) scope() string {
	switch {
	case len(f.res.Namespaces) == 1:
		return "in namespace " + f.res.Namespaces[0] + ", the only one scanned"
	case len(f.res.Namespaces) > 1:
		return "in namespaces " + strings.Join(f.res.Namespaces, ", ") + ", the only ones scanned"
	case f.res.LabelSelector != "":
		return "in the objects labelled " + f.res.LabelSelector + ", the only ones scanned"
	}
	return f.clusterScope()
}

// clusterScope is the scope of a scan of the whole cluster.
func (f *facts) clusterScope() string { return "in the cluster" }
