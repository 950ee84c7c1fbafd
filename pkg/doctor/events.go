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
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/controller"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// The warning Events about stuck objects: read once per namespace (or cluster-wide when
// that takes fewer requests), and whose they are: the finalizer's owner's, or context.

// provenOwner proves, when it cheaply can, that a warning whose reporter name is not
// the owner's comes from the owner all the same: the Event was written by the field
// manager that wrote the finalizer (its managedFields), or its reportingInstance is a pod
// name of one of the owner's workloads (controller-runtime reports the pod's hostname).
// It says how, or "" when nothing proves it.
func (d *diagnoser) provenOwner(e *eventsv1.Event, id *controller.Identity, fin finalizev1alpha1.Finalizer) string {
	if id.Manager != "" {
		for _, m := range e.ManagedFields {
			if m.Manager == id.Manager {
				return fmt.Sprintf("its Event was written by field manager %s, which wrote %s", id.Manager, fin.Name)
			}
		}
	}
	if e.ReportingInstance == "" || len(id.WorkloadNames) == 0 {
		return ""
	}
	for _, w := range d.f.workloads.Workloads(d.f.ctx, id.WorkloadNames...).Found {
		if strings.HasPrefix(e.ReportingInstance, w.Name+"-") {
			return fmt.Sprintf("it reports from %s, a pod name of its %s %s/%s", e.ReportingInstance, w.Kind, w.Namespace, w.Name)
		}
	}
	return ""
}

// ownedWarnings are the warnings about o since its deletion began that count as fin's
// owner's: those id reported, and those of any reporter not proven to be another party
// (anotherParty); latest first.
func (d *diagnoser) ownedWarnings(o *kube.Object, fin finalizev1alpha1.Finalizer, id *controller.Identity) []eventsv1.Event {
	var out []eventsv1.Event
	for _, e := range d.f.warningsFor(o, o.Meta.DeletionTimestamp.Time) {
		if r := reporterOf(&e); id.Reports(r) || !d.anotherParty(o, fin, r) {
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
	var ids []controller.Identity
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
		ids = append(ids, controller.Identify(d.catalog, o, fin))
	}
	if !custom {
		return nil
	}
	failing := slices.ContainsFunc(fs, func(f finding) bool { return f.reason == finalizev1alpha1.ReasonControllerFailing })
	warns := d.f.warningsFor(o, o.Meta.DeletionTimestamp.Time)
	sort.Slice(warns, func(i, j int) bool { return eventTime(&warns[i]).After(eventTime(&warns[j])) })
	var out []string
	seen := map[[2]string]bool{} // reporter and reason
	for i := range warns {
		e := &warns[i]
		reporter := reporterOf(e)
		if slices.ContainsFunc(ids, func(id controller.Identity) bool { return id.Reports(reporter) }) || seen[[2]string{reporter, e.Reason}] {
			continue
		}
		whose := "it owns none of the object's finalizers"
		if !controller.KubernetesComponent(reporter) {
			if failing {
				continue // counted as a finalizer owner's (ownedWarnings)
			}
			whose = "whether it acts for one of the object's finalizers is not known"
		}
		seen[[2]string{reporter, e.Reason}] = true
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

// warningsFor returns the warning Events about o that were reported after since.
// Events about cluster-scoped objects are recorded in the default namespace.
func (f *facts) warningsFor(o *kube.Object, since time.Time) []eventsv1.Event {
	once(f, clusterWarningsKey{}, f.readWarningsClusterWide)
	ns := eventNamespace(o)
	events := once(f, warningsKey(ns), func() []eventsv1.Event {
		var events []eventsv1.Event
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
			return nil
		}
		return events
	})
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

// warningsKey keys the warning Events about stuck objects in one namespace;
// clusterWarningsKey is set once the cluster-wide read was considered.
type (
	warningsKey        string
	clusterWarningsKey struct{}
)

// readWarningsClusterWide reads the warnings about every stuck object in one
// cluster-wide list, when that takes fewer requests than one list per namespace that
// holds stuck objects: the scan counted the events, and a page of warnings holds up to
// f.chunk of them, so the cluster-wide list takes at most ceil(events/chunk) pages. A
// cluster-wide list that is refused or fails leaves the reads to one list per namespace.
func (f *facts) readWarningsClusterWide() bool {
	where := map[types.UID]string{} // stuck object → the namespace of its Events
	namespaces := sets.New[string]()
	for _, o := range f.res.Objects {
		ns := eventNamespace(o)
		where[o.Meta.UID] = ns
		namespaces.Insert(ns)
	}
	total, counted := f.res.Index.Counts[schema.GroupResource{Resource: "events"}]
	if !counted || namespaces.Len() < 2 || pagesOf(total, f.chunk) >= namespaces.Len() {
		return false
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
		return false
	}
	for ns := range namespaces {
		f.read[warningsKey(ns)] = found[ns] // read, even when there were none
	}
	return true
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

// anotherParty says whether reporter is positively someone other than the owner of fin
// on o: a Kubernetes component that is not fin's owner, or the owner of another
// finalizer o carries. Any other reporter may be fin's owner under a name of its own (a
// kubebuilder operator writes as "manager" and records Events as "database-controller"),
// so its warnings count as the owner's.
func (d *diagnoser) anotherParty(o *kube.Object, fin finalizev1alpha1.Finalizer, reporter string) bool {
	if controller.KubernetesComponent(reporter) {
		return true
	}
	for _, other := range o.Finalizers {
		if other.Field != finalizev1alpha1.FieldMetadataFinalizers || other.Name == fin.Name {
			continue
		}
		id := controller.Identify(d.catalog, o, other)
		if id.Reports(reporter) {
			return true
		}
	}
	return false
}
