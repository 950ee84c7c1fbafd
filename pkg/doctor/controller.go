package doctor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/controller"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
)

func init() {
	register(family{causes: []Cause{
		{Reason: finalizev1alpha1.ReasonControllerFailing, Priority: 3,
			Help: "the finalizer's controller reports warnings about the object",
			Doc:  "warning Events about the object, reported after its deletion began by a reporter not proven to be another party than the finalizer's owner (count, last time, reporter): the owner under one of its names, the owner proven by the Event's field manager or reporting pod, or an unknown reporter taken as the owner (said so); Kubernetes components' and other finalizers' owners' warnings are context, after \"also:\" (see \"Whose warnings blame whom\")"},
		{Reason: finalizev1alpha1.ReasonControllerForbidden, Priority: 3,
			Help: "the controller runs, but its ServiceAccount may not watch or patch the object",
			Doc:  "the owner runs for the object, but the ServiceAccount of every such workload (from the pod template) may not list and watch the object's type in its namespace, or may not patch or update the object: a SubjectAccessReview says which. Said at once, however young the deletion"},
		{Reason: finalizev1alpha1.ReasonControllerInactive, Priority: 4,
			Help: "the controller that removes the finalizer does not run",
			Doc:  "the controller has written nothing since the deletion began, and no workload of it runs for the object: absent, not ready, or ready but scoped to other namespaces (named as such); said at once, however young the deletion. Or a Kubernetes controller (namespace, garbage collector, pvc/pv-protection) has not acted"},
		{Reason: finalizev1alpha1.ReasonControllerIdle, Priority: 4,
			Help: "the controller runs but has not written to the object for --progress-window",
			Doc:  "the owner runs (a ready replica, or a write within the progress window) but has written nothing to the object for the progress window; SubjectAccessReviews allow what it needs (the message says at which scope), or could not be made"},
		{Reason: finalizev1alpha1.ReasonProgressing, Priority: 5,
			Help: "the controller is at work: stuck is not proven yet",
			Doc:  "the controller wrote to the object within the progress window (15 minutes, `--progress-window`), or a workload of it runs for the object (ready, not scoped to other namespaces, allowed to act on it) and the deletion is younger than the window: stuck is not proven yet. For a namespace: the namespace controller's report of a failing conversion webhook is stale (the same list succeeds now), and it retries"},
		{Reason: finalizev1alpha1.ReasonUnknown, Priority: 6,
			Help: "nothing tells who owns the finalizer, or a read the diagnosis needs failed",
			Doc:  "nothing tells who owns the finalizer, or a read the diagnosis needs was forbidden"},
	}})
}

// DefaultProgressWindow is how long a controller may go without writing to an object it
// holds before the doctor stops calling it Progressing. Fifteen minutes is longer than
// the usual cloud deletion step reports back, and close to the longest retry backoff of
// client-go's and controller-runtime's work queues (1000 s): a controller that works on
// an object writes to it well within that, and a person woken at 3 a.m. is not told to
// wait an hour.
const DefaultProgressWindow = 15 * time.Minute

// custom explains a finalizer of a controller outside Kubernetes: failing, inactive, or
// still at work. Only the finalizer's owner can show progress: the field manager that
// wrote it, or the workloads the catalogue names for it.
func (d *diagnoser) custom(o *kube.Object, fin finalizev1alpha1.Finalizer) finding {
	fd := d.controller(o, fin)
	if ext := d.external(o, fin); ext != nil {
		fd.external = ext
		fd.message += "; " + describeExternal(ext)
	}
	return fd
}

// controller explains a custom finalizer by the controller expected to remove it (its
// remover), never by whoever added it: a writer the catalogue does not name as the
// remover is said to have added it only. Workloads of the remover that do not run for
// the object (scoped to other namespaces) are named as decoys.
func (d *diagnoser) controller(o *kube.Object, fin finalizev1alpha1.Finalizer) finding {
	id := controller.Identify(d.catalog, o, fin)
	var others bystanders
	fd := d.remover(o, fin, &id, &others)
	if id.Manager == "" && id.Writer != "" && !owner.IsGenericManager(id.Writer) && fd.reason != finalizev1alpha1.ReasonUnknown {
		fd.message += fmt.Sprintf("; %s wrote the finalizer, which only says who added it (an ApplicationSet, a GitOps applier, a restore or a copy adds finalizers it never removes): the catalogue names %s as its remover", id.Writer, id.Who)
	}
	if len(others.unproven) > 0 && fd.reason != finalizev1alpha1.ReasonUnknown {
		fd.message += "; ready, but not proven to run for this object: " + strings.Join(others.unproven, "; ")
	}
	if len(others.decoys) > 0 {
		fd.message += "; not running for this object: " + strings.Join(others.decoys, "; ")
		if fd.reason == finalizev1alpha1.ReasonControllerInactive {
			// Its only ready workloads are scoped away: bringing it back is not the way.
			where := "namespace " + o.Meta.Namespace
			fd.next = fmt.Sprintf("let %s watch %s (the settings named above), or run an instance of it that does, so it finishes its cleanup; if none will, check that %s, then: %s",
				id.Who, where, guardsOf(&id), removeCommand(o, fin))
			fd.root.next = fmt.Sprintf("let %s watch the namespaces of the objects it holds, or run an instance of it that does; it then removes its finalizers itself", id.Who)
			fd.root.message = fmt.Sprintf("%s does not run for the objects it holds: its ready workloads watch other namespaces", id.Who)
		}
	}
	return fd
}

// removeCommand is the command that removes fin from o, as remove accepts it.
func removeCommand(o *kube.Object, fin finalizev1alpha1.Finalizer) string {
	cmd := fmt.Sprintf("kubectl finalize remove %s --finalizer %s", o.Ref(), fin.Name)
	if owner.IsSystem(fin.Name) {
		// remove refuses a system finalizer without it: the command shown is the one that works.
		cmd += " --allow-system"
	}
	return cmd
}

// guardsOf says what must be gone before the finalizer may go.
func guardsOf(id *controller.Identity) string {
	if id.Entry != nil && id.Entry.Purpose != "" {
		return id.Entry.Purpose
	}
	return "what the finalizer guards is really gone"
}

// bystanders are the ready workloads of a remover that are not counted as running for an
// object: decoys do not run for it (scoped to other namespaces), unproven may or may not
// (Workload.ScopeUnproven).
type bystanders struct{ decoys, unproven []string }

// remover is controller's diagnosis; others receives the ready workloads of the remover
// that are not counted as running for the object.
func (d *diagnoser) remover(o *kube.Object, fin finalizev1alpha1.Finalizer, idp *controller.Identity, others *bystanders) finding {
	now := d.f.now
	deleted := o.Meta.DeletionTimestamp.Time
	id := *idp
	removeCmd, guards := removeCommand(o, fin), guardsOf(&id)

	// Warnings from the finalizer's owner since the deletion began: it is alive, and
	// failing. A reporter is another party, whose warnings are context (warningContext),
	// only when it is proven to be: a Kubernetes component, or the owner of another
	// finalizer on the object. Any other reporter counts as the owner.
	if warns := d.ownedWarnings(o, fin, &id); len(warns) > 0 {
		e := &warns[0]
		reporter := reporterOf(e)
		subject, as := reporter, ""
		if reporter == "" {
			reporter = "an unnamed reporter"
		}
		if subject == "" {
			subject = reporter
		}
		if !id.Reports(reporterOf(e)) && id.Who != "" {
			subject = id.Who
			if proof := d.provenOwner(e, &id, fin); proof != "" {
				as = " (" + proof + ")"
			} else {
				as = fmt.Sprintf(" (taken as %s's, not proven: nothing shows it is another party than %s, which is expected to remove %s)", id.Who, id.Who, fin.Name)
			}
		}
		return rooted(finalizev1alpha1.ReasonControllerFailing, controllerSubject(subject),
			fmt.Sprintf("%s reports %s: %s (%s, last %s ago)%s", reporter, e.Reason, e.Note, times(eventCount(e)), ago(now, eventTime(e)), as),
			fmt.Sprintf("fix what %s reports (kubectl events --for %s); %s removes %s once its cleanup succeeds", reporter, o.Ref(), itOr(subject, reporter), fin.Name),
			fmt.Sprintf("%s is failing to clean up (%s)", subject, e.Reason))
	}

	if id.Who == "" {
		return rooted(finalizev1alpha1.ReasonUnknown, finalizev1alpha1.Subject{Kind: "Finalizer", Name: fin.Name},
			fmt.Sprintf("nothing tells who should remove %s: no field manager wrote it as a controller, no known controller owns it, and it names no served API group", fin.Name),
			fmt.Sprintf("find who added it (kubectl get %s -o yaml --show-managed-fields) and what it guards before removing it", o.Ref()),
			"nobody is known to own finalizer "+fin.Name)
	}
	// A finalizer of the control plane whose remover runs inside a process of many
	// controllers (the cloud service controller in cloud-controller-manager, once in
	// kube-controller-manager): that process's writes, here or elsewhere, say nothing of
	// whether this controller runs (the service controller runs only with a cloud
	// provider). Where the catalogue says how to find out, that is the answer, in every
	// scope alike.
	if (id.Manager == "" && len(id.WorkloadNames) == 0) || (id.Entry != nil && id.Entry.ControlPlane && id.Entry.Locate != "") {
		return d.unlocated(o, fin, &id, guards, removeCmd)
	}

	ws := d.f.workloads.Workloads(d.f.ctx, id.WorkloadNames...)
	// Only a workload that runs for this object counts: a ready one whose pod template
	// does not keep it from the object's namespace. A ready copy scoped to other
	// namespaces (another install, an operator per namespace) is a decoy, named as such.
	// A ready copy that names no namespace, beside copies of the program in other
	// namespaces, may watch its own only: whether it runs for the object is not known.
	var running, maybe []controller.Workload
	for _, w := range ws.Found {
		if !w.Running() {
			continue
		}
		if ex := w.Excludes(o.Meta.Namespace); ex != "" {
			others.decoys = append(others.decoys, fmt.Sprintf("%s %s/%s: %s", w.Kind, w.Namespace, w.Name, ex))
			continue
		}
		if why := w.ScopeUnproven(ws, o.Meta.Namespace); why != "" {
			others.unproven = append(others.unproven, fmt.Sprintf("%s %s/%s: %s", w.Kind, w.Namespace, w.Name, why))
			maybe = append(maybe, w)
			continue
		}
		running = append(running, w)
	}
	act := d.activity(o, &id)
	window := d.progressWindow
	recentObj := act.wroteObj && now.Sub(act.objLast) < window
	recentElsewhere := act.wroteElsewhere && now.Sub(act.anyLast) < window
	// A workload of the controller was found and none runs for this object: a write
	// elsewhere by a manager of the same name ("manager" is the name of many programs,
	// and a copy scoped to other namespaces writes there) does not bring it to life.
	down := len(ws.Found) > 0 && len(running) == 0
	alive := len(running) > 0 || recentObj || (recentElsewhere && !down)
	scope := d.f.scope()
	// Hard evidence is the cause at once, however young the deletion: a remover that
	// runs for the object but may not act on it is forbidden now, not progressing. Only
	// when the copies that may run for it (maybe) may not act on it either.
	if candidates := append(slices.Clone(running), maybe...); len(candidates) > 0 && !recentObj {
		if fd, ok := d.forbidden(o, fin, &id, candidates, strings.Join(aliveEvidence(now, candidates, act, recentElsewhere), "; ")); ok {
			return fd
		}
	}
	switch {
	case recentObj:
		return progressing(o, fmt.Sprintf("%s is active: it last wrote this object %s ago, after the deletion began %s ago (only the writes of %s, which wrote the finalizer, count); stuck is not proven yet: only after %s without a write to the object",
			id.Manager, ago(now, act.objLast), ago(now, deleted), id.Manager, duration.HumanDuration(window)), id.Who)
	case alive && now.Sub(deleted) < window:
		quiet := fmt.Sprintf("it has not written to this object since; stuck is not proven yet: only after %s without a write to the object", duration.HumanDuration(window))
		if id.Manager == "" {
			quiet = fmt.Sprintf("no write of the finalizer by its remover is recorded, so its writes to the object cannot be told; stuck is not proven yet: only %s after the deletion began", duration.HumanDuration(window))
		}
		return progressing(o, fmt.Sprintf("%s runs (%s), and the deletion began %s ago: %s",
			id.Who, strings.Join(aliveEvidence(now, running, act, recentElsewhere), "; "), ago(now, deleted), quiet), id.Who)
	case alive:
		return d.idle(o, fin, &id, running, ws, act, recentElsewhere, guards, removeCmd)
	}

	workloadNote := describeWorkloads(id.WorkloadNames, ws)
	var lastNote string
	switch {
	case id.Manager == "":
	case act.wroteObj:
		lastNote = fmt.Sprintf("%s last wrote this object %s ago, %s after the deletion began, and nothing since (only the writes of %s, which wrote the finalizer, count)",
			id.Manager, ago(now, act.objLast), duration.HumanDuration(act.objLast.Sub(deleted)), id.Manager)
	case act.seen && act.wroteElsewhere:
		lastNote = fmt.Sprintf("%s has written nothing to this object since the deletion began %s ago (only the writes of %s, which wrote the finalizer, count)",
			id.Manager, ago(now, deleted), id.Manager)
	case act.seen:
		lastNote = fmt.Sprintf("%s has written nothing since the deletion began %s ago (its last write %s: %s ago; only the writes of %s, which wrote the finalizer, count)",
			id.Manager, ago(now, deleted), scope, ago(now, act.anyLast), id.Manager)
	default:
		lastNote = fmt.Sprintf("%s has written nothing %s", id.Manager, scope)
	}
	// Never claim absence when a ready copy may run for the object: its scope is not
	// known, and neither is whether it is the remover here.
	if len(others.unproven) > 0 {
		m := fmt.Sprintf("%s is expected to remove %s, but whether it runs for this object cannot be told: %s", id.Who, fin.Name, strings.Join(others.unproven, "; "))
		if lastNote != "" {
			m += "; " + lastNote
		}
		return rooted(finalizev1alpha1.ReasonUnknown, controllerSubject(id.Who), m,
			fmt.Sprintf("find which install of %s watches namespace %s (its settings: %s; or the logs of each: %s) and check that it runs; if none does and none will, check that %s, then: %s",
				id.Who, o.Meta.Namespace, specsOf(maybe), logsOf(maybe, now.Sub(deleted)), guards, removeCmd),
			fmt.Sprintf("whether %s runs for the objects it holds cannot be told: the workloads found do not say which namespaces they watch, and it may have more than one install", id.Who))
	}
	// Never claim absence from a partial look: a workload kind that could not be read may
	// hold the controller, running.
	if len(ws.Unread) > 0 {
		m := fmt.Sprintf("%s is expected to remove %s, but whether it runs cannot be told: %s", id.Who, fin.Name, workloadNote)
		if lastNote != "" {
			m += "; " + lastNote
		}
		kinds := strings.ToLower(strings.Join(ws.Unread, "s,")) + "s"
		return rooted(finalizev1alpha1.ReasonUnknown, controllerSubject(id.Who), m,
			fmt.Sprintf("get the read the doctor could not make (kubectl get %s -A -l %s=%s, and by name %s; or run the doctor as someone who may list %s) and check that %s runs; if it is gone for good, check that %s, then: %s",
				kinds, controller.AppNameLabel, id.WorkloadNames[0], id.WorkloadNames[0], kinds, id.Who, guards, removeCmd),
			fmt.Sprintf("whether %s runs cannot be told", id.Who))
	}
	if id.Manager == "" {
		return inactive(id.Who, fmt.Sprintf("%s is expected to remove %s; %s", id.Who, fin.Name, workloadNote), guards, removeCmd)
	}
	// No workload found, and its writes measured only where a narrowed scan looked:
	// whether it runs elsewhere in the cluster is not known.
	if len(ws.Found) == 0 && scope != d.f.clusterScope() {
		return rooted(finalizev1alpha1.ReasonUnknown, controllerSubject(id.Who),
			fmt.Sprintf("%s is expected to remove %s, but whether it runs cannot be told from this scan: %s; %s, and its writes elsewhere in the cluster were not measured", id.Who, fin.Name, workloadNote, lastNote),
			fmt.Sprintf("run the doctor as someone who may list every type in every namespace, so that its writes are measured cluster-wide; if it is gone for good, check that %s, then: %s", guards, removeCmd),
			fmt.Sprintf("whether %s runs cannot be told from a narrowed scan", id.Who))
	}
	fd := inactive(id.Who, lastNote+"; "+workloadNote, guards, removeCmd)
	if down && act.wroteElsewhere {
		where := "elsewhere"
		if act.group != nil {
			where = "to " + act.elsewhere()
		}
		fd.message += fmt.Sprintf("; %s also wrote %s %s ago (another instance or another program of that name)", id.Manager, where, ago(now, act.anyLast))
	}
	if n := act.ignoredNote(now, id.Manager); n != "" {
		fd.message += "; " + n
	}
	return fd
}

// unlocated explains a finalizer whose owner is known by description only: no
// controller wrote it, and no workload name is known. The next step says how to find
// the controller.
func (d *diagnoser) unlocated(o *kube.Object, fin finalizev1alpha1.Finalizer, id *controller.Identity, guards, removeCmd string) finding {
	wrote := "no field manager wrote the finalizer"
	switch {
	case id.Manager != "" && id.Entry != nil && id.Entry.ControlPlane:
		wrote = fmt.Sprintf("the finalizer was written by %s, a process of many controllers, whose writes say nothing of whether the one that removes it runs", id.Manager)
	case id.Writer != "" && owner.IsGenericManager(id.Writer):
		wrote = fmt.Sprintf("the finalizer was written by %s, a client that applies manifests for people, not a controller", id.Writer)
	case id.Writer != "" && id.Entry == nil:
		wrote = fmt.Sprintf("the finalizer was written by %s, which wrote the object's content and does not write its status: it created or applied the object (as an applier, an ApplicationSet, a restore or a person does), which says who added the finalizer, not who removes it", id.Writer)
	case id.Writer != "":
		wrote = fmt.Sprintf("the finalizer was written by %s, which the catalogue does not name as its owner (it added the finalizer, as a restore or a copy does; it is not expected to remove it)", id.Writer)
	}
	if fin.OwnerSource != finalizev1alpha1.OwnerSourceCatalog {
		by := ""
		if id.Writer != "" {
			by = " (" + wrote + ")"
		}
		return rooted(finalizev1alpha1.ReasonUnknown, controllerSubject("controller of API group "+fin.Owner),
			fmt.Sprintf("%s names API group %s, but no field manager identifies the controller that serves it%s, so its activity cannot be measured", fin.Name, fin.Owner, by),
			fmt.Sprintf("find the controller of API group %s and check that it runs; if it is gone for good, check that %s, then: %s", fin.Owner, guards, removeCmd),
			"the controller of API group "+fin.Owner+" could not be identified")
	}
	locate := fmt.Sprintf("which controller handles %s and that it runs (kubectl get deployments,statefulsets,daemonsets -A; who wrote the object: kubectl get %s -o yaml --show-managed-fields)", o.Resource, o.Ref())
	if id.Entry != nil && id.Entry.Locate != "" {
		locate = id.Entry.Locate
	}
	return rooted(finalizev1alpha1.ReasonUnknown, controllerSubject(id.Who),
		fmt.Sprintf("%s is expected to remove %s, but nothing identifies where it runs: %s, and no workload is known for it", id.Who, fin.Name, wrote),
		fmt.Sprintf("find out %s; if no controller will remove it, check that %s, then: %s", locate, guards, removeCmd),
		fmt.Sprintf("where %s runs cannot be told", id.Who))
}

// idle explains a controller that runs but has not written to the object for the
// progress window: it may not be allowed to act on it (ControllerForbidden), or it
// ignores it for a reason its logs tell (ControllerIdle).
func (d *diagnoser) idle(o *kube.Object, fin finalizev1alpha1.Finalizer, id *controller.Identity, running []controller.Workload, ws controller.Workloads, act activity, recentElsewhere bool, guards, removeCmd string) finding {
	now := d.f.now
	deleted := o.Meta.DeletionTimestamp.Time
	quiet := fmt.Sprintf("has written nothing to this object since the deletion began %s ago", ago(now, deleted))
	switch {
	case act.wroteObj:
		quiet = fmt.Sprintf("last wrote this object %s ago, %s after the deletion began, and nothing since", ago(now, act.objLast), duration.HumanDuration(act.objLast.Sub(deleted)))
	case id.Manager == "":
		quiet = fmt.Sprintf("has not removed %s since the deletion began %s ago (no write of the finalizer by its remover is recorded, so its writes to the object cannot be told)", fin.Name, ago(now, deleted))
	}
	evidence := strings.Join(aliveEvidence(now, running, act, recentElsewhere), "; ")
	msg := fmt.Sprintf("%s runs (%s) but %s: longer than the progress window (%s), within which a controller at work on an object writes to it", id.Who, evidence, quiet, duration.HumanDuration(d.progressWindow))

	// What its pod templates and its ServiceAccounts say, workload by workload.
	var checks, notes, forbidden []string
	var canI string
	for i := range running {
		w := &running[i]
		a := d.f.accessOf(w, o)
		if canI == "" {
			canI = a.canI("patch", o)
		}
		switch {
		case !a.checked:
			checks = append(checks, fmt.Sprintf("whether ServiceAccount %s may act on it could not be checked", a.serviceAccount))
		case len(a.missing) > 0:
			forbidden = append(forbidden, a.mayNot(w))
		default:
			checks = append(checks, a.allowed(o))
		}
		notes = append(notes, a.notes...)
	}
	switch {
	case len(running) > 0:
	case len(ws.Unread) > 0:
		checks = append(checks, describeWorkloads(id.WorkloadNames, ws)+", so its permissions cannot be checked from here")
	case len(ws.Found) > 0:
		checks = append(checks, describeWorkloads(id.WorkloadNames, ws)+", so its permissions cannot be checked from here")
	default:
		checks = append(checks, "no workload of it was found in the cluster (it may run outside), so its permissions cannot be checked from here")
	}
	// Some of its workloads may not act on the object, others may (forbidden returned
	// ControllerForbidden when none may): said beside the others.
	checks = append(checks, forbidden...)
	for _, c := range append(checks, notes...) {
		msg += "; " + c
	}
	next := "find out why a running " + id.Who + " ignores it: "
	if len(running) > 0 {
		next += "its logs (" + logsOf(running, now.Sub(deleted)) + ")"
	} else {
		next += "its logs"
	}
	watch := "whether it watches "
	if o.Meta.Namespace != "" {
		watch += "namespace " + o.Meta.Namespace + " (a WATCH_NAMESPACE or --watch-namespace setting)"
	} else {
		watch += "cluster-scoped " + o.Resource.String()
	}
	next += ", " + watch
	if canI != "" {
		next += ", and whether it may act on it (" + canI + ")"
	}
	next += fmt.Sprintf("; it removes %s once it reconciles the object; if it never will, check that %s, then: %s", fin.Name, guards, removeCmd)
	return rooted(finalizev1alpha1.ReasonControllerIdle, controllerSubject(id.Who), msg, next,
		fmt.Sprintf("%s runs but does not act on the objects it holds", id.Who)).
		withRootNext(fmt.Sprintf("read %s's logs for the objects it holds, and check that it watches their namespaces and may patch them", id.Who))
}

// forbidden: a remover that runs for the object, every running workload of which may not
// act on it (a SubjectAccessReview of its ServiceAccount says which verbs it lacks). That
// is the cause at once, whatever the age of the deletion; a review that could not be made
// proves nothing.
func (d *diagnoser) forbidden(o *kube.Object, fin finalizev1alpha1.Finalizer, id *controller.Identity, running []controller.Workload, evidence string) (finding, bool) {
	var forbidden, notes []string
	var canI string
	for i := range running {
		w := &running[i]
		a := d.f.accessOf(w, o)
		if canI == "" {
			canI = a.canI("patch", o)
		}
		if !a.checked || len(a.missing) == 0 {
			return finding{}, false
		}
		forbidden = append(forbidden, a.mayNot(w))
		notes = append(notes, a.notes...)
	}
	if len(forbidden) == 0 {
		return finding{}, false
	}
	m := fmt.Sprintf("%s runs (%s) but %s", id.Who, evidence, strings.Join(forbidden, "; "))
	if len(notes) > 0 {
		m += "; " + strings.Join(notes, "; ")
	}
	return rooted(finalizev1alpha1.ReasonControllerForbidden, controllerSubject(id.Who), m,
		fmt.Sprintf("grant what it lacks (a Role or ClusterRole with those verbs on %s, bound to its ServiceAccount; an operator upgraded without its RBAC, or installed for other namespaces, often lacks it), and check: %s; it then removes %s itself", o.Resource, canI, fin.Name),
		fmt.Sprintf("%s may not act on the objects it holds", id.Who)).
		withRootNext(fmt.Sprintf("grant %s's ServiceAccount the permissions named above; it then removes its finalizers itself", id.Who)), true
}

// inNamespace is where o is, for people.
func inNamespace(o *kube.Object) string {
	if o.Meta.Namespace == "" {
		return "across the cluster"
	}
	return "in namespace " + o.Meta.Namespace
}

// describeWorkloads says what was found of a controller's workloads, and never claims
// absence from a look that failed.
func describeWorkloads(names []string, ws controller.Workloads) string {
	var found []string
	for _, w := range ws.Found {
		found = append(found, w.String())
	}
	switch {
	case len(found) > 0 && len(ws.Unread) > 0:
		return fmt.Sprintf("its %s; its %ss could not be read, so whether another of its workloads runs is not known", strings.Join(found, ", "), strings.Join(ws.Unread, "s, "))
	case len(found) > 0:
		return "its " + strings.Join(found, ", ")
	case len(ws.Unread) > 0:
		return fmt.Sprintf("its %ss could not be read, so whether it runs in the cluster is not known", strings.Join(ws.Unread, "s, "))
	case len(names) > 0:
		return fmt.Sprintf("no Deployment, StatefulSet or DaemonSet named %s was found in the cluster (by name or app.kubernetes.io/name label; it may run outside the cluster)", strings.Join(names, " or "))
	}
	return "no workload is known for it"
}

// logsOf are the commands that read the logs of workloads ws since d ago.
func logsOf(ws []controller.Workload, d time.Duration) string {
	var out []string
	for i := range ws {
		out = append(out, ws[i].LogsCommand(d))
	}
	return strings.Join(out, "; ")
}

// specsOf are the commands that show the pod templates of workloads ws, and the
// ConfigMaps beside them, where an install's settings are.
func specsOf(ws []controller.Workload) string {
	var out []string
	for i := range ws {
		w := &ws[i]
		out = append(out, fmt.Sprintf("%s, kubectl get configmaps -n %s", w.GetCommand(), w.Namespace))
	}
	return strings.Join(out, "; ")
}

// itOr is "it" when the controller is the reporter, else the controller's name.
func itOr(who, reporter string) string {
	if who == reporter {
		return "it"
	}
	return who
}

func inactive(who, msg, guards, removeCmd string) finding {
	return rooted(finalizev1alpha1.ReasonControllerInactive, controllerSubject(who), msg,
		fmt.Sprintf("bring %s back (reinstall it, scale it up or fix its crash) so it finishes its cleanup; if it is gone for good, check that %s, then: %s", who, guards, removeCmd),
		fmt.Sprintf("%s is not removing these objects' finalizers", who)).
		withRootNext(fmt.Sprintf("bring %s back so it finishes its cleanup; if it is gone for good, check that what its finalizers guard is gone, then remove them with kubectl finalize remove", who))
}
