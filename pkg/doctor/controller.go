package doctor

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/preset"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// DefaultProgressWindow is how long a controller may go without writing to an object it
// holds before the doctor stops calling it Progressing. Fifteen minutes is longer than
// the usual cloud deletion step reports back, and close to the longest retry backoff of
// client-go's and controller-runtime's work queues (1000 s): a controller that works on
// an object writes to it well within that, and a person woken at 3 a.m. is not told to
// wait an hour.
const DefaultProgressWindow = 15 * time.Minute

// controllerID is who is expected to remove a finalizer, and how the doctor finds it.
type controllerID struct {
	// manager is the field manager whose writes are measured: the owner found in
	// managedFields, else the controller that wrote the finalizer. Empty when no
	// controller wrote it. Nothing else counts: another manager writing the object (the
	// namespace controller rewriting a namespace's conditions) says nothing about the
	// finalizer's owner.
	manager string
	// who names the controller in messages: the manager, else the owner.
	who string
	// workloads are the names (or app.kubernetes.io/name labels) its workloads may have.
	workloads []string
	// entry is the finalizer's catalogue entry, if any.
	entry *owner.Entry
	// writer is the client that wrote the finalizer when no controller did (kubectl,
	// helm, a GitOps applier): it added the finalizer, but is not expected to remove it.
	writer string
}

// identify names the controller expected to remove fin. When the catalogue knows the
// finalizer but names no workload for it, the field manager that wrote it is the
// controller (unless it is a generic client, or one the catalogue names as the owner:
// Flux's kustomize-controller applies manifests for people, and writes
// finalizers.fluxcd.io for itself).
func (d *diagnoser) identify(o *kube.Object, fin finalizev1alpha1.Finalizer) controllerID {
	var id controllerID
	if e, ok := d.catalog.Lookup(fin.Name); ok {
		id.entry = e
	}
	writers := owner.Writers(o.Meta.ManagedFields, fin.Field, fin.Name)
	if fin.OwnerSource == finalizev1alpha1.OwnerSourceManagedFields {
		id.manager = fin.Owner
	}
	// When the catalogue names the owner (Kubernetes itself, or the owner's field managers
	// or workloads), a writer it does not name is not the owner: velero restoring a
	// Service with the cloud service controller's finalizer only added it (addedBy).
	named := id.entry != nil && (id.entry.ControlPlane || len(id.entry.Managers) > 0 || len(id.entry.Workloads) > 0)
	for _, w := range writers {
		if id.manager == "" && !owner.IsGenericManager(w) && (!named || catalogueNames(id.entry, w)) {
			id.manager = w
		}
	}
	for _, w := range writers {
		if id.manager == "" && id.entry != nil && slices.Contains(id.entry.Managers, w) {
			id.manager = w
		}
	}
	if id.manager == "" && len(writers) > 0 {
		id.writer = writers[0]
	}
	id.who = id.manager
	if id.who == "" {
		id.who = fin.Owner
	}
	if id.manager != "" {
		id.workloads = append(id.workloads, id.manager)
	}
	if id.entry != nil && fin.OwnerSource == finalizev1alpha1.OwnerSourceCatalog {
		for _, n := range id.entry.WorkloadNames() {
			if !slices.Contains(id.workloads, n) {
				id.workloads = append(id.workloads, n)
			}
		}
	}
	return id
}

// catalogueNames says whether the catalogue entry e names field manager w as its owner:
// one of its Managers, a workload name of it (or one followed by a dash), or for a
// finalizer of the control plane's a Kubernetes controller manager.
func catalogueNames(e *owner.Entry, w string) bool {
	if slices.Contains(e.Managers, w) {
		return true
	}
	names := e.WorkloadNames()
	if e.ControlPlane {
		names = append(append(names, "kube-controller-manager", "cloud-controller-manager"), systemReporters[e.Finalizer]...)
	}
	for _, n := range names {
		if w == n || strings.HasPrefix(w, n+"-") {
			return true
		}
	}
	return false
}

// reports says whether an Event's reporter is this controller: its field manager, a
// workload name of it, the reporter Kubernetes' own controller of a system finalizer
// records Events as, or (when nothing wrote the finalizer as a controller) a manager the
// catalogue names; equal, or one of them the other followed by a dash
// (cert-manager-challenges is cert-manager).
func (id *controllerID) reports(reporter string) bool {
	if reporter == "" {
		return false
	}
	names := append([]string{id.manager}, id.workloads...)
	if id.manager == "" && id.entry != nil {
		names = append(names, id.entry.Managers...)
	}
	if id.entry != nil {
		names = append(names, systemReporters[id.entry.Finalizer]...)
	}
	for _, n := range names {
		if n == "" {
			continue
		}
		if strings.EqualFold(reporter, n) || strings.HasPrefix(reporter, n+"-") || strings.HasPrefix(n, reporter+"-") {
			return true
		}
	}
	return false
}

// systemReporters are the reporters of Kubernetes' own controllers that remove a system
// finalizer handled by the controller rules (custom).
var systemReporters = map[string][]string{
	"service.kubernetes.io/load-balancer-cleanup": {"service-controller", "service-lb-controller"},
	"batch.kubernetes.io/job-tracking":            {"job-controller"},
	"resource.kubernetes.io/delete-protection":    {"resource-claim-controller", "resourceclaim-controller"},
	"networking.k8s.io/service-cidr-finalizer":    {"service-cidrs-controller", "servicecidrs-controller"},
	"kubernetes.io/pv-controller":                 {"persistentvolume-controller"},
	"kubernetes":                                  {"namespace-controller"},
	metav1.FinalizerOrphanDependents:              {"garbage-collector-controller"},
	metav1.FinalizerDeleteDependents:              {"garbage-collector-controller"},
	finalizerPVC:                                  {"pvc-protection-controller"},
	finalizerPV:                                   {"pv-protection-controller"},
}

// kubernetesReporters are the reporters of Kubernetes' own components: the kubelet, the
// scheduler, kube-proxy and the controllers of kube-controller-manager and
// cloud-controller-manager. Their warnings about an object are never an operator's: a
// reporter is taken for another party than a finalizer's owner only when it is one of
// these, or the owner of another finalizer the object carries.
var kubernetesReporters = sets.New(
	"kubelet", "default-scheduler", "kube-proxy", "kube-apiserver",
	"persistentvolume-controller", "persistentvolume-expander", "volume_expand", "attachdetach-controller",
	"pvc-protection-controller", "pv-protection-controller", "ephemeral-volume-controller",
	"deployment-controller", "replicaset-controller", "replication-controller", "statefulset-controller",
	"daemonset-controller", "job-controller", "cronjob-controller", "ttl-after-finished-controller",
	"endpoint-controller", "endpointslice-controller", "endpoint-slice-controller", "endpointslice-mirroring-controller",
	"namespace-controller", "node-controller", "node-lifecycle-controller", "nodeipam-controller", "taint-eviction-controller",
	"garbage-collector-controller", "horizontal-pod-autoscaler", "disruption-controller", "resourcequota-controller",
	"serviceaccount-controller", "service-controller", "route-controller", "cloud-node-controller",
	"cloud-node-lifecycle-controller", "certificate-controller", "clusterrole-aggregation-controller",
	"bootstrap-signer", "token-cleaner", "resource-claim-controller", "service-cidrs-controller",
)

// anotherParty says whether reporter is positively someone other than the owner of fin
// on o: a Kubernetes component that is not fin's owner, or the owner of another
// finalizer o carries. Any other reporter may be fin's owner under a name of its own (a
// kubebuilder operator writes as "manager" and records Events as "database-controller"),
// so its warnings count as the owner's.
func (d *diagnoser) anotherParty(o *kube.Object, fin finalizev1alpha1.Finalizer, reporter string) bool {
	if kubernetesReporters.Has(strings.ToLower(reporter)) {
		return true
	}
	for _, other := range o.Finalizers {
		if other.Field != finalizev1alpha1.FieldMetadataFinalizers || other.Name == fin.Name {
			continue
		}
		id := d.identify(o, other)
		if id.reports(reporter) {
			return true
		}
	}
	return false
}

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

// controller explains a custom finalizer by its controller.
func (d *diagnoser) controller(o *kube.Object, fin finalizev1alpha1.Finalizer) finding {
	now := d.f.now
	deleted := o.Meta.DeletionTimestamp.Time
	id := d.identify(o, fin)
	removeCmd := fmt.Sprintf("kubectl finalize remove %s --finalizer %s", o.Ref(), fin.Name)
	if owner.IsSystem(fin.Name) {
		// remove refuses a system finalizer without it: the command shown is the one that works.
		removeCmd += " --allow-system"
	}
	guards := "what the finalizer guards is really gone"
	if id.entry != nil && id.entry.Purpose != "" {
		guards = id.entry.Purpose
	}

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
		if !id.reports(reporterOf(e)) && id.who != "" {
			subject = id.who
			if proof := d.provenOwner(e, &id, fin); proof != "" {
				as = " (" + proof + ")"
			} else {
				as = fmt.Sprintf(" (taken as %s's, not proven: nothing shows it is another party than %s, which is expected to remove %s)", id.who, id.who, fin.Name)
			}
		}
		return rooted(finalizev1alpha1.ReasonControllerFailing, controllerSubject(subject),
			fmt.Sprintf("%s reports %s: %s (%s, last %s ago)%s", reporter, e.Reason, e.Note, times(eventCount(e)), ago(now, eventTime(e)), as),
			fmt.Sprintf("fix what %s reports (kubectl events --for %s); %s removes %s once its cleanup succeeds", reporter, o.Ref(), itOr(subject, reporter), fin.Name),
			fmt.Sprintf("%s is failing to clean up (%s)", subject, e.Reason))
	}

	if id.who == "" {
		return rooted(finalizev1alpha1.ReasonUnknown, finalizev1alpha1.Subject{Kind: "Finalizer", Name: fin.Name},
			fmt.Sprintf("nothing tells who should remove %s: no field manager wrote it as a controller, no known controller owns it, and it names no served API group", fin.Name),
			fmt.Sprintf("find who added it (kubectl get %s -o yaml --show-managed-fields) and what it guards before removing it", o.Ref()),
			"nobody is known to own finalizer "+fin.Name)
	}
	if id.manager == "" && len(id.workloads) == 0 {
		return d.unlocated(o, fin, &id, guards, removeCmd)
	}

	ws := d.f.workloadsOf(id.workloads...)
	var running []workloadState
	for _, w := range ws.found {
		if w.running() {
			running = append(running, w)
		}
	}
	act := d.activity(o, &id)
	window := d.progressWindow
	recentObj := act.wroteObj && now.Sub(act.objLast) < window
	recentElsewhere := act.wroteElsewhere && now.Sub(act.anyLast) < window
	// A workload of the controller was found and none of its replicas is ready: a write
	// elsewhere by a manager of the same name ("manager" is the name of many programs)
	// does not bring it back to life.
	down := len(ws.found) > 0 && len(running) == 0
	alive := len(running) > 0 || recentObj || (recentElsewhere && !down)
	scope := d.f.scope()

	switch {
	case recentObj:
		return progressing(o, fmt.Sprintf("%s is active: it last wrote this object %s ago, after the deletion began %s ago (only the writes of %s, which wrote the finalizer, count); stuck is not proven yet: only after %s without a write to the object",
			id.manager, ago(now, act.objLast), ago(now, deleted), id.manager, duration.HumanDuration(window)), id.who)
	case alive && now.Sub(deleted) < window:
		quiet := fmt.Sprintf("it has not written to this object since; stuck is not proven yet: only after %s without a write to the object", duration.HumanDuration(window))
		if id.manager == "" {
			quiet = fmt.Sprintf("no controller wrote the finalizer, so its writes to the object cannot be told; stuck is not proven yet: only %s after the deletion began", duration.HumanDuration(window))
		}
		return progressing(o, fmt.Sprintf("%s runs (%s), and the deletion began %s ago: %s",
			id.who, strings.Join(aliveEvidence(now, running, act, recentElsewhere), "; "), ago(now, deleted), quiet), id.who)
	case alive:
		return d.idle(o, fin, &id, running, ws, act, recentElsewhere, guards, removeCmd)
	}

	workloadNote := describeWorkloads(id.workloads, ws)
	var lastNote string
	switch {
	case id.manager == "":
	case act.wroteObj:
		lastNote = fmt.Sprintf("%s last wrote this object %s ago, %s after the deletion began, and nothing since (only the writes of %s, which wrote the finalizer, count)",
			id.manager, ago(now, act.objLast), duration.HumanDuration(act.objLast.Sub(deleted)), id.manager)
	case act.seen && act.wroteElsewhere:
		lastNote = fmt.Sprintf("%s has written nothing to this object since the deletion began %s ago (only the writes of %s, which wrote the finalizer, count)",
			id.manager, ago(now, deleted), id.manager)
	case act.seen:
		lastNote = fmt.Sprintf("%s has written nothing since the deletion began %s ago (its last write %s: %s ago; only the writes of %s, which wrote the finalizer, count)",
			id.manager, ago(now, deleted), scope, ago(now, act.anyLast), id.manager)
	default:
		lastNote = fmt.Sprintf("%s has written nothing %s", id.manager, scope)
	}
	// Never claim absence from a partial look: a workload kind that could not be read may
	// hold the controller, running.
	if len(ws.unread) > 0 {
		m := fmt.Sprintf("%s is expected to remove %s, but whether it runs cannot be told: %s", id.who, fin.Name, workloadNote)
		if lastNote != "" {
			m += "; " + lastNote
		}
		kinds := strings.ToLower(strings.Join(ws.unread, "s,")) + "s"
		return rooted(finalizev1alpha1.ReasonUnknown, controllerSubject(id.who), m,
			fmt.Sprintf("get the read the doctor could not make (kubectl get %s -A -l %s=%s, and by name %s; or run the doctor as someone who may list %s) and check that %s runs; if it is gone for good, check that %s, then: %s",
				kinds, appNameLabel, id.workloads[0], id.workloads[0], kinds, id.who, guards, removeCmd),
			fmt.Sprintf("whether %s runs cannot be told", id.who))
	}
	if id.manager == "" {
		return inactive(id.who, fmt.Sprintf("%s is expected to remove %s; %s", id.who, fin.Name, workloadNote), guards, removeCmd)
	}
	// No workload found, and its writes measured only where a narrowed scan looked:
	// whether it runs elsewhere in the cluster is not known.
	if len(ws.found) == 0 && scope != d.f.clusterScope() {
		return rooted(finalizev1alpha1.ReasonUnknown, controllerSubject(id.who),
			fmt.Sprintf("%s is expected to remove %s, but whether it runs cannot be told from this scan: %s; %s, and its writes elsewhere in the cluster were not measured", id.who, fin.Name, workloadNote, lastNote),
			fmt.Sprintf("run the doctor without -n, -l or TYPE/NAME to measure its writes cluster-wide (kubectl finalize doctor); if it is gone for good, check that %s, then: %s", guards, removeCmd),
			fmt.Sprintf("whether %s runs cannot be told from a narrowed scan", id.who))
	}
	fd := inactive(id.who, lastNote+"; "+workloadNote, guards, removeCmd)
	if down && act.wroteElsewhere {
		where := "elsewhere"
		if act.group != nil {
			where = "to " + act.elsewhere()
		}
		fd.message += fmt.Sprintf("; %s also wrote %s %s ago (another instance or another program of that name)", id.manager, where, ago(now, act.anyLast))
	}
	if n := act.ignoredNote(now, id.manager); n != "" {
		fd.message += "; " + n
	}
	return fd
}

// unlocated explains a finalizer whose owner is known by description only: no
// controller wrote it, and no workload name is known. The next step says how to find
// the controller.
func (d *diagnoser) unlocated(o *kube.Object, fin finalizev1alpha1.Finalizer, id *controllerID, guards, removeCmd string) finding {
	wrote := "no field manager wrote the finalizer"
	switch {
	case id.writer != "" && owner.IsGenericManager(id.writer):
		wrote = fmt.Sprintf("the finalizer was written by %s, a client that applies manifests for people, not a controller", id.writer)
	case id.writer != "":
		wrote = fmt.Sprintf("the finalizer was written by %s, which the catalogue does not name as its owner (it added the finalizer, as a restore or a copy does; it is not expected to remove it)", id.writer)
	}
	if fin.OwnerSource != finalizev1alpha1.OwnerSourceCatalog {
		by := ""
		if id.writer != "" {
			by = " (" + wrote + ")"
		}
		return rooted(finalizev1alpha1.ReasonUnknown, controllerSubject("controller of API group "+fin.Owner),
			fmt.Sprintf("%s names API group %s, but no field manager identifies the controller that serves it%s, so its activity cannot be measured", fin.Name, fin.Owner, by),
			fmt.Sprintf("find the controller of API group %s and check that it runs; if it is gone for good, check that %s, then: %s", fin.Owner, guards, removeCmd),
			"the controller of API group "+fin.Owner+" could not be identified")
	}
	locate := fmt.Sprintf("which controller handles %s and that it runs (kubectl get deployments,statefulsets,daemonsets -A; who wrote the object: kubectl get %s -o yaml --show-managed-fields)", o.Resource, o.Ref())
	if id.entry != nil && id.entry.Locate != "" {
		locate = id.entry.Locate
	}
	return rooted(finalizev1alpha1.ReasonUnknown, controllerSubject(id.who),
		fmt.Sprintf("%s is expected to remove %s, but nothing identifies where it runs: %s, and no workload is known for it", id.who, fin.Name, wrote),
		fmt.Sprintf("find out %s; if no controller will remove it, check that %s, then: %s", locate, guards, removeCmd),
		fmt.Sprintf("where %s runs cannot be told", id.who))
}

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

// sharedManagerNames are field manager names many programs write as: kubebuilder's and
// operator-sdk's scaffolds build a binary called manager, and the API server names the
// field manager of a client that names none after its binary. The clients that apply
// manifests for people (owner.IsGenericManager) are shared names too.
var sharedManagerNames = sets.New("manager", "controller-manager", "controller", "operator", "main", "app", "helm-operator", "ansible-operator")

// sharedManagerName reports whether many programs may write as field manager m: its
// writes count for a controller only in the API group of the object the controller
// holds, where the same name is far more likely the same program.
func sharedManagerName(m string) bool {
	return sharedManagerNames.Has(m) || owner.IsGenericManager(m)
}

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
func (d *diagnoser) activity(o *kube.Object, id *controllerID) activity {
	var a activity
	if id.manager == "" {
		return a
	}
	deleted := o.Meta.DeletionTimestamp.Time
	for i := range o.Meta.ManagedFields {
		e := &o.Meta.ManagedFields[i]
		if e.Manager == id.manager && e.Time != nil && e.Time.After(a.objLast) {
			a.objLast = e.Time.Time
		}
	}
	a.wroteObj = a.objLast.After(deleted)
	if sharedManagerName(id.manager) {
		group := o.Resource.Group
		a.group = &group
		a.anyLast, a.seen = d.f.res.ManagerGroupActivity[scan.ManagerGroup{Manager: id.manager, Group: group}]
		if all, ok := d.f.res.ManagerActivity[id.manager]; ok && all.After(a.anyLast) && all.After(deleted) && all.After(a.objLast) {
			a.ignoredLast, a.ignored = all, true
		}
	} else {
		a.anyLast, a.seen = d.f.res.ManagerActivity[id.manager]
	}
	a.wroteElsewhere = a.anyLast.After(deleted) && a.anyLast.After(a.objLast)
	return a
}

// aliveEvidence says why a controller is taken to run.
func aliveEvidence(now time.Time, running []workloadState, act activity, recentElsewhere bool) []string {
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

// idle explains a controller that runs but has not written to the object for the
// progress window: it may not be allowed to act on it (ControllerForbidden), or it
// ignores it for a reason its logs tell (ControllerIdle).
func (d *diagnoser) idle(o *kube.Object, fin finalizev1alpha1.Finalizer, id *controllerID, running []workloadState, ws workloads, act activity, recentElsewhere bool, guards, removeCmd string) finding {
	now := d.f.now
	deleted := o.Meta.DeletionTimestamp.Time
	quiet := fmt.Sprintf("has written nothing to this object since the deletion began %s ago", ago(now, deleted))
	switch {
	case act.wroteObj:
		quiet = fmt.Sprintf("last wrote this object %s ago, %s after the deletion began, and nothing since", ago(now, act.objLast), duration.HumanDuration(act.objLast.Sub(deleted)))
	case id.manager == "":
		quiet = fmt.Sprintf("has not removed %s since the deletion began %s ago (no controller wrote the finalizer, so its writes to the object cannot be told)", fin.Name, ago(now, deleted))
	}
	evidence := strings.Join(aliveEvidence(now, running, act, recentElsewhere), "; ")
	msg := fmt.Sprintf("%s runs (%s) but %s: longer than the progress window (%s), within which a controller at work on an object writes to it", id.who, evidence, quiet, duration.HumanDuration(d.progressWindow))

	// What its pod templates and its ServiceAccounts say, workload by workload.
	var checks, notes, forbidden []string
	var canI string
	for i := range running {
		w := &running[i]
		if ex := w.excludes(o.Meta.Namespace); ex != "" {
			notes = append(notes, fmt.Sprintf("%s %s/%s: %s", w.Kind, w.Namespace, w.Name, ex))
		}
		a := d.f.accessOf(w, o)
		if canI == "" {
			canI = a.canI("patch", o)
		}
		switch {
		case !a.checked:
			checks = append(checks, fmt.Sprintf("whether ServiceAccount %s may act on it could not be checked", a.serviceAccount))
		case len(a.missing) > 0:
			forbidden = append(forbidden, fmt.Sprintf("ServiceAccount %s (of %s %s/%s) may not %s", a.serviceAccount, w.Kind, w.Namespace, w.Name, strings.Join(a.missing, ", nor ")))
		default:
			checks = append(checks, a.allowed(o))
		}
		notes = append(notes, a.notes...)
	}
	switch {
	case len(running) > 0:
	case len(ws.unread) > 0:
		checks = append(checks, describeWorkloads(id.workloads, ws)+", so its permissions cannot be checked from here")
	case len(ws.found) > 0:
		checks = append(checks, describeWorkloads(id.workloads, ws)+", so its permissions cannot be checked from here")
	default:
		checks = append(checks, "no workload of it was found in the cluster (it may run outside), so its permissions cannot be checked from here")
	}
	if len(forbidden) > 0 && len(forbidden) == len(running) {
		m := fmt.Sprintf("%s runs (%s) but %s", id.who, evidence, strings.Join(forbidden, "; "))
		if len(notes) > 0 {
			m += "; " + strings.Join(notes, "; ")
		}
		return rooted(finalizev1alpha1.ReasonControllerForbidden, controllerSubject(id.who), m,
			fmt.Sprintf("grant what it lacks (a Role or ClusterRole with those verbs on %s, bound to its ServiceAccount; an operator upgraded without its RBAC, or installed for other namespaces, often lacks it), and check: %s; it then removes %s itself", o.Resource, canI, fin.Name),
			fmt.Sprintf("%s may not act on the objects it holds", id.who)).
			withRootNext(fmt.Sprintf("grant %s's ServiceAccount the permissions named above; it then removes its finalizers itself", id.who))
	}
	for _, c := range append(checks, notes...) {
		msg += "; " + c
	}
	var steps []string
	for _, w := range running {
		steps = append(steps, w.logsCommand(now.Sub(deleted)))
	}
	next := "find out why a running " + id.who + " ignores it: "
	if len(steps) > 0 {
		next += "its logs (" + strings.Join(steps, "; ") + ")"
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
	return rooted(finalizev1alpha1.ReasonControllerIdle, controllerSubject(id.who), msg, next,
		fmt.Sprintf("%s runs but does not act on the objects it holds", id.who)).
		withRootNext(fmt.Sprintf("read %s's logs for the objects it holds, and check that it watches their namespaces and may patch them", id.who))
}

// inNamespace is where o is, for people.
func inNamespace(o *kube.Object) string {
	if o.Meta.Namespace == "" {
		return "across the cluster"
	}
	return "in namespace " + o.Meta.Namespace
}

// logsKind is kubectl's short name of each workload kind.
var logsKind = map[string]string{"Deployment": "deploy", "StatefulSet": "sts", "DaemonSet": "ds"}

// sinceFlag is a --since value that covers d, in whole minutes (at least one).
func sinceFlag(d time.Duration) string {
	m := int(d/time.Minute) + 1
	if m >= 60*48 {
		return "48h"
	}
	return fmt.Sprintf("%dm", m)
}

// describeWorkloads says what was found of a controller's workloads, and never claims
// absence from a look that failed.
func describeWorkloads(names []string, ws workloads) string {
	var found []string
	for _, w := range ws.found {
		found = append(found, w.String())
	}
	switch {
	case len(found) > 0 && len(ws.unread) > 0:
		return fmt.Sprintf("its %s; its %ss could not be read, so whether another of its workloads runs is not known", strings.Join(found, ", "), strings.Join(ws.unread, "s, "))
	case len(found) > 0:
		return "its " + strings.Join(found, ", ")
	case len(ws.unread) > 0:
		return fmt.Sprintf("its %ss could not be read, so whether it runs in the cluster is not known", strings.Join(ws.unread, "s, "))
	case len(names) > 0:
		return fmt.Sprintf("no Deployment, StatefulSet or DaemonSet named %s was found in the cluster (by name or app.kubernetes.io/name label; it may run outside the cluster)", strings.Join(names, " or "))
	}
	return "no workload is known for it"
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

// provenOwner proves, when it cheaply can, that a warning whose reporter name is not
// the owner's comes from the owner all the same: the Event was written by the field
// manager that wrote the finalizer (its managedFields), or its reportingInstance is a pod
// name of one of the owner's workloads (controller-runtime reports the pod's hostname).
// It says how, or "" when nothing proves it.
func (d *diagnoser) provenOwner(e *eventsv1.Event, id *controllerID, fin finalizev1alpha1.Finalizer) string {
	if id.manager != "" {
		for _, m := range e.ManagedFields {
			if m.Manager == id.manager {
				return fmt.Sprintf("its Event was written by field manager %s, which wrote %s", id.manager, fin.Name)
			}
		}
	}
	if e.ReportingInstance == "" || len(id.workloads) == 0 {
		return ""
	}
	for _, w := range d.f.workloadsOf(id.workloads...).found {
		if strings.HasPrefix(e.ReportingInstance, w.Name+"-") {
			return fmt.Sprintf("it reports from %s, a pod name of its %s %s/%s", e.ReportingInstance, w.Kind, w.Namespace, w.Name)
		}
	}
	return ""
}

// itOr is "it" when the controller is the reporter, else the controller's name.
func itOr(controller, reporter string) string {
	if controller == reporter {
		return "it"
	}
	return controller
}

// ownedWarnings are the warnings about o since its deletion began that count as fin's
// owner's: those id reported, and those of any reporter not proven to be another party
// (anotherParty); latest first.
func (d *diagnoser) ownedWarnings(o *kube.Object, fin finalizev1alpha1.Finalizer, id *controllerID) []eventsv1.Event {
	var out []eventsv1.Event
	for _, e := range d.f.warningsFor(o, o.Meta.DeletionTimestamp.Time) {
		if r := reporterOf(&e); id.reports(r) || !d.anotherParty(o, fin, r) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return eventTime(&out[i]).After(eventTime(&out[j])) })
	return out
}

// warningContext are the warnings about o from Kubernetes components that own none of
// the finalizers it carries, the latest of each reporter and reason: what they report is
// context, not why the finalizers stay (the volume controller failing to provision a
// claim does not hold the snapshot controller's finalizer). Warnings are read only for
// objects that carry a finalizer of a controller outside Kubernetes' own rules. A
// warning of any other reporter counts as a finalizer owner's (ownedWarnings); when no
// finding of o is ControllerFailing (a rule other than the controller's explained the
// finalizer), it is context too, without a claim about whose it is.
func (d *diagnoser) warningContext(o *kube.Object, fs []finding) []string {
	var ids []controllerID
	custom := false
	for _, fin := range o.Finalizers {
		if fin.Field != finalizev1alpha1.FieldMetadataFinalizers {
			continue
		}
		switch fin.Name {
		case metav1.FinalizerDeleteDependents, metav1.FinalizerOrphanDependents, finalizerPVC, finalizerPV, finalizerCRD:
		default:
			custom = true
		}
		ids = append(ids, d.identify(o, fin))
	}
	if !custom {
		return nil
	}
	failing := slices.ContainsFunc(fs, func(f finding) bool { return f.reason == finalizev1alpha1.ReasonControllerFailing })
	warns := d.f.warningsFor(o, o.Meta.DeletionTimestamp.Time)
	sort.Slice(warns, func(i, j int) bool { return eventTime(&warns[i]).After(eventTime(&warns[j])) })
	var out []string
	seen := map[string]bool{}
	for i := range warns {
		e := &warns[i]
		reporter := reporterOf(e)
		if slices.ContainsFunc(ids, func(id controllerID) bool { return id.reports(reporter) }) || seen[reporter+"\x00"+e.Reason] {
			continue
		}
		whose := "it owns none of the object's finalizers"
		if !kubernetesReporters.Has(strings.ToLower(reporter)) {
			if failing {
				continue // counted as a finalizer owner's (ownedWarnings)
			}
			whose = "whether it acts for one of the object's finalizers is not known"
		}
		seen[reporter+"\x00"+e.Reason] = true
		if reporter == "" {
			reporter = "an unnamed reporter"
		}
		out = append(out, fmt.Sprintf("%s reports %s: %s (%s, last %s ago; %s)", reporter, e.Reason, e.Note, times(eventCount(e)), ago(d.f.now, eventTime(e)), whose))
	}
	return out
}

// times is "once", "7 times".
func times(n int32) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func inactive(who, msg, guards, removeCmd string) finding {
	return rooted(finalizev1alpha1.ReasonControllerInactive, controllerSubject(who), msg,
		fmt.Sprintf("bring %s back (reinstall it, scale it up or fix its crash) so it finishes its cleanup; if it is gone for good, check that %s, then: %s", who, guards, removeCmd),
		fmt.Sprintf("%s is not removing its finalizers", who)).
		withRootNext(fmt.Sprintf("bring %s back so it finishes its cleanup; if it is gone for good, check that what its finalizers guard is gone, then remove them with kubectl finalize remove", who))
}

// warningsFor returns the warning Events about o that were reported after since.
// Events about cluster-scoped objects are recorded in the default namespace.
func (f *facts) warningsFor(o *kube.Object, since time.Time) []eventsv1.Event {
	if !f.warningsRead {
		f.warningsRead = true
		f.readWarningsClusterWide()
	}
	ns := eventNamespace(o)
	events, ok := f.events[ns]
	if !ok {
		// Only the warnings about stuck objects whose events live in ns are kept.
		stuck := map[types.UID]bool{}
		for _, s := range f.res.Objects {
			if eventNamespace(s) == ns {
				stuck[s.Meta.UID] = true
			}
		}
		err := f.each(func(opts metav1.ListOptions) (runtime.Object, error) {
			return f.kube.EventsV1().Events(ns).List(f.ctx, opts)
		},
			metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning}, func(obj runtime.Object) error {
				if e := obj.(*eventsv1.Event); stuck[e.Regarding.UID] {
					events = append(events, *e)
				}
				return nil
			})
		if err != nil {
			f.warnf("could not list events in namespace %s, so failing controllers there may look inactive: %v", ns, err)
			events = nil
		}
		f.events[ns] = events
	}
	var out []eventsv1.Event
	for i := range events {
		e := &events[i]
		if e.Regarding.UID != o.Meta.UID || reporterOf(e) == "kubectl-finalize" {
			continue
		}
		if !eventTime(e).Before(since) {
			out = append(out, *e)
		}
	}
	return out
}

// readWarningsClusterWide reads the warnings about every stuck object in one
// cluster-wide list, when that takes fewer requests than one list per namespace that
// holds stuck objects: the scan counted the events, and a page of warnings holds up to
// f.chunk of them, so the cluster-wide list takes at most ceil(events/chunk) pages. A
// cluster-wide list that is refused or fails leaves the reads to one list per namespace.
func (f *facts) readWarningsClusterWide() {
	where := map[types.UID]string{} // stuck object → the namespace of its Events
	namespaces := sets.New[string]()
	for _, o := range f.res.Objects {
		ns := eventNamespace(o)
		where[o.Meta.UID] = ns
		namespaces.Insert(ns)
	}
	total, counted := f.res.Index.Counts[schema.GroupResource{Resource: "events"}]
	if !counted || namespaces.Len() < 2 || pagesOf(total, f.chunk) >= namespaces.Len() {
		return
	}
	found := map[string][]eventsv1.Event{}
	err := f.each(func(opts metav1.ListOptions) (runtime.Object, error) {
		return f.kube.EventsV1().Events(metav1.NamespaceAll).List(f.ctx, opts)
	},
		metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning}, func(obj runtime.Object) error {
			if e := obj.(*eventsv1.Event); where[e.Regarding.UID] == e.Namespace && e.Namespace != "" {
				found[e.Namespace] = append(found[e.Namespace], *e)
			}
			return nil
		})
	if err != nil {
		klog.V(2).InfoS("Listing warning Events cluster-wide failed; listing them namespace by namespace", "err", err)
		return
	}
	for ns := range namespaces {
		f.events[ns] = found[ns] // read, even when there were none
	}
}

// pagesOf is how many pages of chunk hold n items; chunk 0 is one page.
func pagesOf(n, chunk int64) int {
	if chunk <= 0 || n <= chunk {
		return 1
	}
	return int((n + chunk - 1) / chunk)
}

// eventNamespace is where the Events about o are: its namespace, or default for a
// cluster-scoped object.
func eventNamespace(o *kube.Object) string {
	if o.Meta.Namespace == "" {
		return metav1.NamespaceDefault
	}
	return o.Meta.Namespace
}

// eventTime is when an event was last seen.
func eventTime(e *eventsv1.Event) time.Time {
	t := e.EventTime.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if e.DeprecatedLastTimestamp.After(t) {
		t = e.DeprecatedLastTimestamp.Time
	}
	return t
}

// eventCount is how many times an event was seen.
func eventCount(e *eventsv1.Event) int32 {
	switch {
	case e.Series != nil:
		return e.Series.Count
	case e.DeprecatedCount > 0:
		return e.DeprecatedCount
	}
	return 1
}

func reporterOf(e *eventsv1.Event) string {
	if e.ReportingController != "" {
		return e.ReportingController
	}
	return e.DeprecatedSource.Component
}

// external reads the external resource behind fin when a preset knows where its operator
// keeps it: one read of the full object (and for some presets its namespace).
func (d *diagnoser) external(o *kube.Object, fin finalizev1alpha1.Finalizer) *finalizev1alpha1.External {
	p, ok := preset.ForFinalizer(fin.Name)
	if !ok {
		return nil
	}
	var client dynamic.ResourceInterface = d.f.dyn.Resource(o.Resource.GroupVersionResource)
	if o.Meta.Namespace != "" {
		client = d.f.dyn.Resource(o.Resource.GroupVersionResource).Namespace(o.Meta.Namespace)
	}
	full, err := client.Get(d.f.ctx, o.Meta.Name, metav1.GetOptions{})
	if err != nil {
		d.f.warnf("could not read %s to name its external resource: %v", o.Ref(), err)
		return nil
	}
	var ns *corev1.Namespace
	if p.NeedsNamespace && o.Meta.Namespace != "" {
		if ns, err = d.f.kube.CoreV1().Namespaces().Get(d.f.ctx, o.Meta.Namespace, metav1.GetOptions{}); err != nil {
			d.f.warnf("could not read namespace %s for its deletion policy: %v", o.Meta.Namespace, err)
			ns = nil
		}
	}
	ext := &finalizev1alpha1.External{Preset: p.Name, Identity: p.IdentityOf(full, fin.Name)}
	ext.Retained, _ = p.Retained(full, ns, fin.Name)
	ext.Held, _ = p.Held(full, ns, fin.Name)
	return ext
}

// describeExternal says what to look up, for people.
func describeExternal(ext *finalizev1alpha1.External) string {
	var ids []string
	for k, v := range ext.Identity {
		ids = append(ids, k+"="+v)
	}
	sort.Strings(ids)
	s := "its external resource (preset " + ext.Preset + ") is "
	if len(ids) == 0 {
		s += "not named on the object yet"
	} else {
		s += strings.Join(ids, ", ")
	}
	switch {
	case ext.Held != "":
		s += "; its operator must not be bypassed (" + ext.Held + ")"
	case ext.Retained != "":
		s += "; it is meant to outlive the object (" + ext.Retained + "), so the finalizer guards no deletion"
	}
	return s
}
