package doctor

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/preset"
)

// controllerName is the field manager of the controller expected to remove fin: the
// owner found in managedFields, else the controller that added it. Nothing else counts:
// another manager writing the object (the namespace controller rewriting a namespace's
// conditions) says nothing about the finalizer's owner.
func controllerName(fin finalizev1alpha1.Finalizer) string {
	if fin.OwnerSource == finalizev1alpha1.OwnerSourceManagedFields {
		return fin.Owner
	}
	if fin.AddedBy != "" && !owner.IsGenericManager(fin.AddedBy) {
		return fin.AddedBy
	}
	return ""
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
	ctrl := controllerName(fin)
	who := ctrl
	if who == "" {
		who = fin.Owner
	}
	removeCmd := fmt.Sprintf("kubectl finalize remove %s --finalizer %s", o.Ref(), fin.Name)
	guards := "what the finalizer guards is really gone"
	var names []string
	if ctrl != "" {
		names = append(names, ctrl)
	}
	if e, ok := d.catalog.Lookup(fin.Name); ok {
		if e.Purpose != "" {
			guards = e.Purpose
		}
		if fin.OwnerSource == finalizev1alpha1.OwnerSourceCatalog {
			names = append(names, e.WorkloadNames()...)
		}
	}

	// Warnings since the deletion began: the controller is alive, and failing.
	if warns := d.f.warningsFor(o, deleted); len(warns) > 0 {
		sort.Slice(warns, func(i, j int) bool { return eventTime(&warns[i]).After(eventTime(&warns[j])) })
		e := &warns[0]
		reporter := reporterOf(e)
		if reporter == "" {
			reporter = who
		}
		return rooted(finalizev1alpha1.ReasonControllerFailing, controllerSubject(reporter),
			fmt.Sprintf("%s reports %s: %s (%s, last %s ago)", reporter, e.Reason, e.Note, times(eventCount(e)), ago(now, eventTime(e))),
			fmt.Sprintf("fix what %s reports (kubectl events --for %s); it removes %s once its cleanup succeeds", reporter, o.Ref(), fin.Name),
			fmt.Sprintf("%s is failing to clean up (%s)", reporter, e.Reason))
	}

	if who == "" {
		return rooted(finalizev1alpha1.ReasonUnknown, finalizev1alpha1.Subject{Kind: "Finalizer", Name: fin.Name},
			fmt.Sprintf("nothing tells who should remove %s: no field manager wrote it as a controller, no known controller owns it, and it names no served API group", fin.Name),
			fmt.Sprintf("find who added it (kubectl get %s -o yaml --show-managed-fields) and what it guards before removing it", o.Ref()),
			"nobody is known to own finalizer "+fin.Name)
	}

	ready, notReady, workloadNote := d.workloadStates(names)
	if ctrl != "" {
		last, seen := d.f.res.ManagerActivity[ctrl]
		// managedFields times have one-second resolution: a write in the second of the
		// deletion proves nothing.
		if seen && last.After(deleted) {
			return progressing(o, fmt.Sprintf("%s is active: it last wrote %s ago, after the deletion began %s ago (only the writes of %s, which wrote the finalizer, count); stuck is not proven yet",
				ctrl, ago(now, last), ago(now, deleted), ctrl), ctrl)
		}
		lastNote := fmt.Sprintf("%s has written nothing in the cluster", ctrl)
		if seen {
			lastNote = fmt.Sprintf("%s has written nothing since the deletion began %s ago (its last write: %s ago; only the writes of %s, which wrote the finalizer, count)", ctrl, ago(now, deleted), ago(now, last), ctrl)
		}
		return inactive(ctrl, lastNote+"; "+workloadNote, guards, removeCmd)
	}

	// The owner is known by name only: its workloads tell.
	switch {
	case len(notReady) > 0:
		return inactive(who, fmt.Sprintf("%s is expected to remove %s; %s", who, fin.Name, workloadNote), guards, removeCmd)
	case len(ready) > 0:
		return progressing(o, fmt.Sprintf("%s; no field manager wrote the finalizer, so its writes cannot be told apart, and stuck is not proven yet", workloadNote), who)
	case len(names) > 0:
		return inactive(who, fmt.Sprintf("%s is expected to remove %s; %s", who, fin.Name, workloadNote), guards, removeCmd)
	case fin.OwnerSource == finalizev1alpha1.OwnerSourceCatalog:
		return rooted(finalizev1alpha1.ReasonUnknown, controllerSubject(who),
			fmt.Sprintf("%s is expected to remove %s, but nothing identifies where it runs: no field manager wrote the finalizer, and no workload is known for it", who, fin.Name),
			fmt.Sprintf("check that %s runs and is healthy; if it is gone for good, check that %s, then: %s", who, guards, removeCmd),
			fmt.Sprintf("where %s runs cannot be told", who))
	}
	return rooted(finalizev1alpha1.ReasonUnknown, controllerSubject("controller of API group "+fin.Owner),
		fmt.Sprintf("%s names API group %s, but no field manager identifies the controller that serves it, so its activity cannot be measured", fin.Name, fin.Owner),
		fmt.Sprintf("find the controller of API group %s and check that it runs; if it is gone for good, check that %s, then: %s", fin.Owner, guards, removeCmd),
		"the controller of API group "+fin.Owner+" could not be identified")
}

// workloadStates reads the workloads named names and says what they show.
func (d *diagnoser) workloadStates(names []string) (ready, notReady []string, note string) {
	for _, w := range d.f.workloadsOf(names...) {
		if w.Desired > 0 && w.Ready >= w.Desired {
			ready = append(ready, w.String())
		} else {
			notReady = append(notReady, w.String())
		}
	}
	switch {
	case len(notReady) > 0:
		note = "its " + strings.Join(notReady, ", ")
	case len(ready) > 0:
		note = "its " + strings.Join(ready, ", ")
	case len(names) > 0:
		note = fmt.Sprintf("no Deployment, StatefulSet or DaemonSet named %s was found (by name or app.kubernetes.io/name label; it may run outside the cluster)", strings.Join(names, " or "))
	default:
		note = "no workload is known for it"
	}
	return ready, notReady, note
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

// workloadState is what a controller's workload looks like.
type workloadState struct {
	Kind, Namespace, Name string
	Ready, Desired        int64
}

func (w *workloadState) String() string {
	return fmt.Sprintf("%s %s/%s has %d/%d ready replicas", w.Kind, w.Namespace, w.Name, w.Ready, w.Desired)
}

// workloadFields say where each kind of workload keeps its desired and ready replicas.
var workloadFields = map[string]struct {
	resource       schema.GroupVersionResource
	desired, ready []string
	desiredDefault int64
}{
	"Deployment":  {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, []string{"spec", "replicas"}, []string{"status", "readyReplicas"}, 1},
	"StatefulSet": {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, []string{"spec", "replicas"}, []string{"status", "readyReplicas"}, 1},
	"DaemonSet":   {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, []string{"status", "desiredNumberScheduled"}, []string{"status", "numberReady"}, 0},
}

// workloadsOf finds the Deployments, StatefulSets and DaemonSets named like a controller,
// or labelled app.kubernetes.io/name with its name, and reads their readiness.
func (f *facts) workloadsOf(names ...string) []workloadState {
	var out []workloadState
	for _, w := range f.res.Index.Workloads {
		match := false
		for _, n := range names {
			if n != "" && (w.Name == n || w.AppName == n) {
				match = true
			}
		}
		fields, known := workloadFields[w.Kind]
		if !match || !known {
			continue
		}
		u, err := f.dyn.Resource(fields.resource).Namespace(w.Namespace).Get(f.ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			f.warnf("could not read %s %s/%s: %v", strings.ToLower(w.Kind), w.Namespace, w.Name, err)
			continue
		}
		st := workloadState{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Desired: fields.desiredDefault}
		if v, ok, _ := unstructured.NestedInt64(u.Object, fields.desired...); ok {
			st.Desired = v
		}
		st.Ready, _, _ = unstructured.NestedInt64(u.Object, fields.ready...)
		out = append(out, st)
	}
	return out
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
