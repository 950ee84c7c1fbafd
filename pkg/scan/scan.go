package scan

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
)

// Defaults for Options.
const (
	DefaultConcurrency = 8
	DefaultChunkSize   = 500
	// DefaultPodGraceMargin is how long past the end of its grace period a pod's deletion
	// may wait for its kubelet before the pod is listed.
	DefaultPodGraceMargin = 2 * time.Minute
	// maxListAttempts bounds how often one type is listed again from the start after its
	// continue token expired mid-pagination.
	maxListAttempts = 3
)

// Options select what a scan looks at.
type Options struct {
	// Resources, if not empty, limits the scan to these types.
	Resources []schema.GroupResource
	// Namespace, if set, limits the scan to namespaced objects in it and to the namespace
	// object itself. Empty scans the whole cluster.
	Namespace string
	// Namespaces, like Namespace, limit the scan to several namespaces.
	Namespaces []string
	// NamespacesOf lists each namespaced type it names only in those namespaces, whatever
	// Namespace and Namespaces say: a pass whose RBAC grants a type only in some
	// namespaces (a Role in each) lists it there, and the other types cluster-wide. The
	// index then counts those types only there.
	NamespacesOf map[schema.GroupResource][]string
	// LabelSelector is passed to every list.
	LabelSelector string
	// OlderThan keeps objects terminating for at least this long.
	OlderThan time.Duration
	// PodGraceMargin is how long past the end of its grace period (its deletionTimestamp)
	// a pod's deletion may wait for its kubelet before the pod is listed, finalizers or
	// not; 0 means DefaultPodGraceMargin.
	PodGraceMargin time.Duration
	// Finalizers keeps objects with at least one finalizer that matches.
	Finalizers glob.Set
	// Concurrency is how many resource types are listed at once.
	Concurrency int
	// ChunkSize is the page size of every list; 0 lists each type in one request.
	ChunkSize int64
	// Progress, if set, is called (never concurrently) as types finish.
	Progress func(Progress)
	// Clock is what ages are measured against: the API server's clock
	// (plan.ServerClock), which pipeline.Scan measures when it is nil; nil here means
	// the local clock.
	Clock clock.PassiveClock
	// Index gathers the Result's Index while listing, for the doctor.
	Index bool
	// Observe, if set, sees every object listed, stuck or not (ns is set for
	// namespaces). It is called from several goroutines at once.
	Observe func(r kube.Resource, meta *metav1.ObjectMeta, ns *corev1.Namespace)

	// shared keeps once what the stuck objects of this scan have in common.
	shared *kube.Shared
}

// Progress reports how far a scan is.
type Progress struct {
	TypesDone, TypesTotal int
	ObjectsSeen           int64
	Stuck                 int
}

// Result is what a scan found.
type Result struct {
	// Objects are the stuck objects, longest-terminating first.
	Objects []*kube.Object
	// Incomplete lists what could not be discovered or listed.
	Incomplete []finalizev1alpha1.IncompleteResource
	// Resources are the types that were listed.
	Resources []kube.Resource
	// Groups are the API groups the cluster serves.
	Groups []string
	// ManagerActivity is the latest managedFields time of each field manager across every
	// object listed, stuck or not: a controller that wrote nothing since an object's
	// deletion began is a suspect.
	ManagerActivity map[string]time.Time
	// ManagerGroupActivity is the same per API group of the objects written: a manager
	// name many programs share ("manager") writing to one group says nothing about the
	// program of that name that writes to another.
	ManagerGroupActivity map[ManagerGroup]time.Time
	// ObjectsSeen counts every object listed.
	ObjectsSeen int64
	// Now is the time the scan measured ages against, and Clock the clock it read it
	// from: what follows the scan (the verification, the plan, the write, the doctor)
	// measures ages by the same clock.
	Now   time.Time
	Clock clock.PassiveClock
	// Index is what the doctor needs to know about the objects that are not stuck. It is
	// nil unless Options.Index was set: a diagnosis needs it, a plain scan does not.
	Index *Index
	// Namespaces are the namespaces the scan was limited to (empty: every namespace), and
	// LabelSelector the selector of every list: what the index and ManagerActivity
	// cover, so that nothing is said absent that was not looked for.
	Namespaces    []string
	LabelSelector string
	// Unreadable are the objects the API server could not read: every list of their type
	// that reaches them fails. The scan walked past them (unreadable.go).
	Unreadable []Unreadable
	// Pods are the pods listed because their deletion waits for their kubelet, by uid,
	// as read for their nodes (without managedFields): the doctor reads them from here.
	Pods map[types.UID]*corev1.Pod
}

// ManagerGroup is a field manager and the API group of objects it wrote.
type ManagerGroup struct{ Manager, Group string }

// Scanner lists through these clients.
type Scanner struct {
	Discovery discovery.DiscoveryInterface
	Metadata  metadata.Interface
	Kube      client.Interface
}

// Scan finds the stuck objects. It fails only when it can read nothing at all: when
// discovery itself fails, or every resource type fails to list. Anything less is reported
// in Result.Incomplete.
func (s *Scanner) Scan(ctx context.Context, opts Options) (*Result, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	opts.shared = kube.NewShared()
	var now clock.PassiveClock = clock.RealClock{}
	if opts.Clock != nil {
		now = opts.Clock
	}
	started := time.Now()
	d, err := discover(s.Discovery)
	if err != nil {
		return nil, err
	}
	klog.V(2).InfoS("Discovery done", "resourceTypes", len(d.resources), "failedGroupVersions", len(d.incomplete), "duration", time.Since(started))

	res := &Result{
		Incomplete: relevantFailures(d.incomplete, opts), Groups: d.groups, ManagerActivity: map[string]time.Time{}, ManagerGroupActivity: map[ManagerGroup]time.Time{}, Now: now.Now(), Clock: now,
	}
	if opts.Index {
		res.Index = newIndex()
	}
	res.Namespaces, res.LabelSelector = opts.namespaces(), opts.LabelSelector
	res.Resources = selectResources(d.resources, opts)

	st := &state{res: res, opts: opts, total: len(res.Resources)}
	listStart := time.Now()
	rest := res.Resources
	terminating := map[string]bool{}
	if opts.Index {
		// Namespaces first: the index then records what terminating namespaces hold.
		for i, r := range rest {
			if !r.IsNamespaces() {
				continue
			}
			tr := s.listResource(ctx, r, opts, res.Now, nil)
			if tr.index != nil {
				for _, name := range tr.index.deleting {
					terminating[name] = true
				}
			}
			st.done(r, tr)
			rest = append(append([]kube.Resource{}, rest[:i]...), rest[i+1:]...)
			break
		}
	}
	var g errgroup.Group
	g.SetLimit(opts.Concurrency)
	for _, r := range rest {
		g.Go(func() error {
			st.done(r, s.listResource(ctx, r, opts, res.Now, terminating))
			return nil
		})
	}
	_ = g.Wait() // each type's error is in st
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	klog.V(2).InfoS("Listing done", "resourceTypes", len(res.Resources), "objects", res.ObjectsSeen, "stuck", len(res.Objects), "duration", time.Since(listStart))
	if len(res.Resources) > 0 && st.succeeded == 0 {
		return nil, fmt.Errorf("could not list any resource type: %w", st.firstErr)
	}
	sortObjects(res.Objects)
	sortIncomplete(res.Incomplete)
	if res.Index != nil {
		res.Index.keepStuckOwners(res.Objects)
	}
	return res, nil
}

// selectResources applies the type and namespace filters.
func selectResources(all []kube.Resource, opts Options) []kube.Resource {
	want := map[schema.GroupResource]bool{}
	for _, gr := range opts.Resources {
		want[gr] = true
	}
	var out []kube.Resource
	for _, r := range all {
		if len(want) > 0 && !want[r.GroupResource()] {
			continue
		}
		// A namespaced scan still looks at the namespace itself: a stuck namespace is
		// the first thing to know about it.
		if len(opts.namespaces()) > 0 && !r.Namespaced && !r.IsNamespaces() {
			continue
		}
		out = append(out, r)
	}
	return out
}

// relevantFailures drops discovery failures that cannot hide what was asked for: when
// types are named, only a failure in one of their groups can.
func relevantFailures(failed []finalizev1alpha1.IncompleteResource, opts Options) []finalizev1alpha1.IncompleteResource {
	if len(opts.Resources) == 0 {
		return failed
	}
	groups := map[string]bool{}
	for _, gr := range opts.Resources {
		groups[gr.Group] = true
	}
	var out []finalizev1alpha1.IncompleteResource
	for _, in := range failed {
		if gv, err := schema.ParseGroupVersion(in.GroupVersion); err != nil || groups[gv.Group] {
			out = append(out, in)
		}
	}
	return out
}

// state gathers the results of the concurrent listings.
type state struct {
	mu        sync.Mutex
	res       *Result
	opts      Options
	total     int
	finished  int
	succeeded int
	firstErr  error
}

// typeResult is what listing one type produced.
type typeResult struct {
	objects  []*kube.Object
	seen     int64
	activity map[string]time.Time
	index    *indexer
	err      error
	// pending are the listed pods whose deletion is overdue, whose nodes are not read yet;
	// pods are those pods as read.
	pending []*kube.Object
	pods    map[types.UID]*corev1.Pod
	// unreadable are the objects the API server could not read, walked past; incomplete
	// the namespaces whose objects of the type could not all be read.
	unreadable []Unreadable
	incomplete []finalizev1alpha1.IncompleteResource
}

func (st *state) done(r kube.Resource, tr typeResult) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.finished++
	st.res.ObjectsSeen += tr.seen
	if tr.err == nil && st.res.Index != nil {
		st.res.Index.merge(r, tr.seen, tr.index)
	}
	for uid, p := range tr.pods {
		if st.res.Pods == nil {
			st.res.Pods = map[types.UID]*corev1.Pod{}
		}
		st.res.Pods[uid] = p
	}
	for m, t := range tr.activity {
		if t.After(st.res.ManagerActivity[m]) {
			st.res.ManagerActivity[m] = t
		}
		if k := (ManagerGroup{Manager: m, Group: r.Group}); t.After(st.res.ManagerGroupActivity[k]) {
			st.res.ManagerGroupActivity[k] = t
		}
	}
	st.res.Unreadable = append(st.res.Unreadable, tr.unreadable...)
	st.res.Incomplete = append(st.res.Incomplete, tr.incomplete...)
	switch {
	case tr.err == nil:
		st.succeeded++
		st.res.Objects = append(st.res.Objects, tr.objects...)
	case errors.Is(tr.err, context.Canceled) || errors.Is(tr.err, context.DeadlineExceeded):
	default:
		if st.firstErr == nil {
			st.firstErr = tr.err
		}
		reason := finalizev1alpha1.ReasonListFailed
		if apierrors.IsForbidden(tr.err) {
			reason = finalizev1alpha1.ReasonForbidden
		}
		klog.V(1).InfoS("Listing failed", "resource", r.String(), "err", tr.err)
		in := finalizev1alpha1.IncompleteResource{
			GroupVersion: r.GroupVersion().String(),
			Resource:     r.Resource,
			Reason:       reason,
			Message:      tr.err.Error(),
		}
		if conv, ok := conversionIncomplete(r, tr.err); ok && reason == finalizev1alpha1.ReasonListFailed {
			in = conv
		}
		st.res.Incomplete = append(st.res.Incomplete, in)
	}
	if st.opts.Progress != nil {
		st.opts.Progress(Progress{TypesDone: st.finished, TypesTotal: st.total, ObjectsSeen: st.res.ObjectsSeen, Stuck: len(st.res.Objects)})
	}
}

// listResource lists one type completely. A continue token that expires mid-pagination
// (410 Gone) means the pages so far may not fit the next ones: the type is listed again
// from the start, a bounded number of times.
func (s *Scanner) listResource(ctx context.Context, r kube.Resource, opts Options, now time.Time, terminating map[string]bool) typeResult {
	var tr typeResult
	for attempt := 1; ; attempt++ {
		tr = typeResult{activity: map[string]time.Time{}}
		if opts.Index {
			tr.index = newIndexer(terminating, opts.shared)
		}
		tr.err = s.listPages(ctx, r, opts, now, &tr)
		if tr.err != nil && storageFailure(tr.err) && r.Namespaced && len(opts.namespacesOf(r)) == 0 {
			// An object the API server cannot read fails the whole list: read the type
			// namespace by namespace, from the start (what the pages read so far saw is
			// read again).
			klog.V(1).InfoS("Listing failed to read storage, listing each namespace", "resource", r.String(), "err", tr.err)
			failed := tr.err
			tr = typeResult{activity: map[string]time.Time{}}
			if opts.Index {
				tr.index = newIndexer(terminating, opts.shared)
			}
			tr.err = s.listEachNamespace(ctx, r, opts, now, &tr, failed)
		}
		if tr.err == nil {
			tr.err = s.podNodes(ctx, opts, &tr)
		}
		if tr.err == nil || !expired(tr.err) || attempt == maxListAttempts {
			break
		}
		klog.V(1).InfoS("Continue token expired, listing the type again", "resource", r.String(), "attempt", attempt+1)
	}
	if tr.err != nil && expired(tr.err) {
		tr.err = fmt.Errorf("the list kept expiring after %d attempts: %w", maxListAttempts, tr.err)
	}
	return tr
}

func expired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// namespaces are the namespaces the scan is limited to, or none for the whole cluster.
func (o *Options) namespaces() []string {
	if o.Namespace == "" {
		return o.Namespaces
	}
	return append([]string{o.Namespace}, o.Namespaces...)
}

// namespacesOf are the namespaces a namespaced type r is listed in, or none for the
// whole cluster.
func (o *Options) namespacesOf(r kube.Resource) []string {
	if ns, ok := o.NamespacesOf[r.GroupResource()]; ok && r.Namespaced {
		return ns
	}
	return o.namespaces()
}

func (s *Scanner) listPages(ctx context.Context, r kube.Resource, opts Options, now time.Time, tr *typeResult) error {
	lo := metav1.ListOptions{Limit: opts.ChunkSize, LabelSelector: opts.LabelSelector}
	if r.IsNamespaces() {
		return s.listNamespaces(ctx, opts, lo, now, tr)
	}
	lister := s.Metadata.Resource(r.GroupVersionResource)
	if namespaces := opts.namespacesOf(r); r.Namespaced && len(namespaces) > 0 {
		for _, ns := range namespaces {
			w := &walker{s: s, lister: lister.Namespace(ns), r: r, namespace: ns, selector: lo.LabelSelector}
			if err := s.listPagesOf(ctx, w.lister, r, opts, lo, now, tr, w); err != nil {
				return err
			}
		}
		return nil
	}
	var w *walker
	if !r.Namespaced {
		w = &walker{s: s, lister: lister, r: r, selector: lo.LabelSelector}
	}
	return s.listPagesOf(ctx, lister, r, opts, lo, now, tr, w)
}

// listEachNamespace lists namespaced type r in every namespace, one at a time, walking
// past the objects the API server cannot read. A namespace that still cannot be read is
// incomplete; the others are read.
func (s *Scanner) listEachNamespace(ctx context.Context, r kube.Resource, opts Options, now time.Time, tr *typeResult, failed error) error {
	var names []string
	lo := metav1.ListOptions{Limit: opts.ChunkSize}
	for {
		page, err := s.Kube.CoreV1().Namespaces().List(ctx, lo)
		if err != nil {
			return fmt.Errorf("listing the namespaces to list %s in each: %w", r, err)
		}
		for i := range page.Items {
			names = append(names, page.Items[i].Name)
		}
		if page.Continue == "" {
			break
		}
		lo.Continue = page.Continue
	}
	lister := s.Metadata.Resource(r.GroupVersionResource)
	lo = metav1.ListOptions{Limit: opts.ChunkSize, LabelSelector: opts.LabelSelector}
	read := 0
	for _, ns := range names {
		w := &walker{s: s, lister: lister.Namespace(ns), r: r, namespace: ns, selector: lo.LabelSelector}
		err := s.listPagesOf(ctx, w.lister, r, opts, lo, now, tr, w)
		switch {
		case err == nil:
			read++
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			reason := finalizev1alpha1.ReasonListFailed
			if apierrors.IsForbidden(err) {
				reason = finalizev1alpha1.ReasonForbidden
			}
			tr.incomplete = append(tr.incomplete, finalizev1alpha1.IncompleteResource{
				GroupVersion: r.GroupVersion().String(), Resource: r.Resource, Namespace: ns, Reason: reason, Message: err.Error(),
			})
		}
	}
	if read == 0 {
		// Not one namespace read: the type failed as the cluster-wide list did.
		tr.incomplete = nil
		return failed
	}
	return nil
}

// maxUnreadable bounds the objects one list walks past: beyond it, the list fails.
const maxUnreadable = 1000

// listPagesOf reads one list page by page. With w, a page the API server fails to read
// is read again one object a page up to the object it cannot read, which is found
// (walker.locate) and walked past.
func (s *Scanner) listPagesOf(ctx context.Context, lister metadata.ResourceInterface, r kube.Resource, opts Options, lo metav1.ListOptions, now time.Time, tr *typeResult, w *walker) error {
	limit, last, found := lo.Limit, "", 0
	if limit == 0 {
		limit = DefaultChunkSize // resuming needs pages
	}
	for {
		klog.V(4).InfoS("Listing", "resource", r.String(), "continue", lo.Continue != "")
		page, err := lister.List(ctx, lo)
		if err != nil {
			switch {
			case w == nil || !storageFailure(err):
				return err
			case lo.Limit != 1:
				lo.Limit = 1 // up to the object it cannot read
				continue
			}
			unreadable, after, lerr := w.locate(ctx, lo.Continue, last, err)
			if lerr != nil {
				return lerr
			}
			tr.unreadable = append(tr.unreadable, unreadable...)
			for _, u := range unreadable {
				if u.Uncertain != "" {
					tr.incomplete = append(tr.incomplete, finalizev1alpha1.IncompleteResource{
						GroupVersion: r.GroupVersion().String(), Resource: r.Resource, Namespace: u.Namespace, Reason: finalizev1alpha1.ReasonListFailed,
						Message: fmt.Sprintf("the API server cannot read %s %s, and %s", r.Resource, u.Name, u.Uncertain),
					})
				}
			}
			if found += len(unreadable); found > maxUnreadable {
				return fmt.Errorf("%w (more than %d objects it cannot read)", err, maxUnreadable)
			}
			tok, terr := continueToken(w.rv, after+"\x00")
			if terr != nil {
				return terr
			}
			lo.Continue, lo.Limit, last = tok, limit, after
			continue
		}
		if n := len(page.Items); n > 0 {
			last = page.Items[n-1].Name
		}
		for i := range page.Items {
			meta := &page.Items[i].ObjectMeta
			tr.observe(meta)
			tr.index.observe(r, meta, nil)
			if opts.Observe != nil {
				opts.Observe(r, meta, nil)
			}
			if r.IsPods() {
				tr.listPod(r, meta, opts, now)
				continue
			}
			if !stuck(meta, nil) || !keep(meta, nil, opts, now) {
				continue
			}
			tr.objects = append(tr.objects, opts.shared.NewObject(r, meta, nil))
		}
		if page.Continue == "" {
			return nil
		}
		if page.Continue == lo.Continue {
			return fmt.Errorf("the server returned the same continue token twice; listing %s would never end", r)
		}
		lo.Continue = page.Continue
		if w != nil && page.ResourceVersion != "" {
			_, _ = fmt.Sscan(page.ResourceVersion, &w.rv)
		}
	}
}

// listNamespaces lists namespaces with the typed client: their own finalizers are in
// spec.finalizers and their deletion progress in status.conditions.
func (s *Scanner) listNamespaces(ctx context.Context, opts Options, lo metav1.ListOptions, now time.Time, tr *typeResult) error {
	r := kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace"}
	// Namespaces read by name are not selected by the API server: the label selector
	// applies to them here, as it does to every list.
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return err
	}
	visit := func(ns *corev1.Namespace) {
		tr.observe(&ns.ObjectMeta)
		tr.index.observe(r, &ns.ObjectMeta, ns)
		if opts.Observe != nil {
			opts.Observe(r, &ns.ObjectMeta, ns)
		}
		if stuck(&ns.ObjectMeta, ns) && keep(&ns.ObjectMeta, ns, opts, now) && sel.Matches(labels.Set(ns.Labels)) {
			tr.objects = append(tr.objects, opts.shared.NewObject(r, &ns.ObjectMeta, ns))
		}
	}
	if namespaces := opts.namespaces(); len(namespaces) > 0 {
		for _, name := range namespaces {
			ns, err := s.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			visit(ns)
		}
		return nil
	}
	for {
		page, err := s.Kube.CoreV1().Namespaces().List(ctx, lo)
		if err != nil {
			return err
		}
		for i := range page.Items {
			visit(&page.Items[i])
		}
		if page.Continue == "" {
			return nil
		}
		lo.Continue = page.Continue
	}
}

// observe counts an object and notes when its field managers last wrote.
func (tr *typeResult) observe(meta *metav1.ObjectMeta) {
	tr.seen++
	for i := range meta.ManagedFields {
		e := &meta.ManagedFields[i]
		if e.Time != nil && e.Time.After(tr.activity[e.Manager]) {
			tr.activity[e.Manager] = e.Time.Time
		}
	}
}

// stuck reports whether an object is being deleted and still has finalizers.
func stuck(meta *metav1.ObjectMeta, ns *corev1.Namespace) bool {
	if meta.DeletionTimestamp == nil {
		return false
	}
	return len(meta.Finalizers) > 0 || (ns != nil && len(ns.Spec.Finalizers) > 0)
}

// keep applies the age and finalizer filters.
func keep(meta *metav1.ObjectMeta, ns *corev1.Namespace, opts Options, now time.Time) bool {
	if opts.OlderThan > 0 && now.Sub(meta.DeletionTimestamp.Time) < opts.OlderThan {
		return false
	}
	if len(opts.Finalizers) == 0 {
		return true
	}
	for _, f := range meta.Finalizers {
		if opts.Finalizers.Match(f) {
			return true
		}
	}
	if ns != nil {
		for _, f := range ns.Spec.Finalizers {
			if opts.Finalizers.Match(string(f)) {
				return true
			}
		}
	}
	return false
}

// sortObjects orders longest-terminating first, then by type, namespace and name.
func sortObjects(objs []*kube.Object) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		if !a.Meta.DeletionTimestamp.Equal(b.Meta.DeletionTimestamp) {
			return a.Meta.DeletionTimestamp.Before(b.Meta.DeletionTimestamp)
		}
		if a.Resource.String() != b.Resource.String() {
			return a.Resource.String() < b.Resource.String()
		}
		if a.Meta.Namespace != b.Meta.Namespace {
			return a.Meta.Namespace < b.Meta.Namespace
		}
		return a.Meta.Name < b.Meta.Name
	})
}

// List converts the result to the API type `scan -o json` prints.
func (r *Result) List() *finalizev1alpha1.StuckObjectList {
	list := &finalizev1alpha1.StuckObjectList{
		TypeMeta:   metav1.TypeMeta{APIVersion: finalizev1alpha1.SchemeGroupVersion.String(), Kind: "StuckObjectList"},
		Items:      make([]finalizev1alpha1.StuckObject, 0, len(r.Objects)),
		Incomplete: append([]finalizev1alpha1.IncompleteResource{}, r.Incomplete...),
	}
	for _, o := range r.Objects {
		list.Items = append(list.Items, o.Stuck(r.Now))
	}
	for _, u := range r.Unreadable {
		list.Items = append(list.Items, u.Stuck())
	}
	return list
}
