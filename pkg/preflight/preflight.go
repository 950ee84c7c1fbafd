package preflight

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/controller"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Target is an object whose deletion is asked about.
type Target struct {
	kube.Ref
	// keep: the release's manifest annotates it helm.sh/resource-policy (policy), so
	// Helm's uninstall does not delete it.
	keep   bool
	policy string
}

// Release names a Helm release.
type Release struct {
	Namespace, Name string
}

// Options say which deletion to predict.
type Options struct {
	// Targets are the objects named.
	Targets []Target
	// Release, if set, adds the objects of the release's manifest, read from its record
	// in the cluster; Mapper then resolves their kinds.
	Release *Release
	Mapper  meta.RESTMapper
	// Scan sets how the cluster is listed (concurrency, page size, progress); its type,
	// namespace and selector filters are not used: the prediction needs every object.
	Scan scan.Options
}

// Preflight reads the cluster through Clients.
type Preflight struct {
	Clients *client.Clients
}

// Result is a prediction and the reads that failed without making it incomplete.
type Result struct {
	Report   *finalizev1alpha1.PreflightReport
	Warnings []string
}

// Run predicts what deleting the targets would leave stuck. It fails when a named target
// does not exist, the release cannot be read, or the cluster cannot be listed at all.
func (p *Preflight) Run(ctx context.Context, opts Options) (*Result, error) {
	rep := &finalizev1alpha1.PreflightReport{
		TypeMeta: metav1.TypeMeta{APIVersion: finalizev1alpha1.SchemeGroupVersion.String(), Kind: "PreflightReport"},
		Targets:  []finalizev1alpha1.ObjectReference{}, Hazards: []finalizev1alpha1.Hazard{}, Incomplete: []finalizev1alpha1.IncompleteResource{},
	}
	r := &run{p: p, ctx: ctx, opts: opts, rep: rep, set: newDeletionSet()}
	targets := opts.Targets
	if opts.Release != nil {
		rel, objs, warnings, err := readRelease(ctx, p.Clients.Kube, opts.Mapper, *opts.Release)
		if err != nil {
			return nil, err
		}
		rep.HelmRelease, rep.HelmRevision = opts.Release.Namespace+"/"+opts.Release.Name, rel.Version
		r.warnings = append(r.warnings, warnings...)
		targets = append(targets, objs...)
	}
	if err := r.resolveTargets(targets, opts.Release != nil); err != nil {
		return nil, err
	}
	if err := r.list(); err != nil {
		return nil, err
	}
	r.predict()
	sortHazards(rep.Hazards)
	return &Result{Report: rep, Warnings: r.warnings}, nil
}

// run is one prediction.
type run struct {
	p    *Preflight
	ctx  context.Context
	opts Options
	rep  *finalizev1alpha1.PreflightReport
	set  *deletionSet

	res      *scan.Result
	kept     *listing
	finder   *controller.Finder
	warnings []string
	// controllers caches the controller of each (object, finalizer).
	controllers map[types.UID]map[string]finalizerController
	// gone caches how the deletion takes each service away (serviceGone).
	gone map[types.NamespacedName]string
	// apiServices are every APIService, once apiServicesListed (eachAPIService).
	apiServices       []*unstructured.Unstructured
	apiServicesListed bool
}

func (r *run) warnf(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}

// warnOnce is warnf for reads that may fail alike for several controllers: it says
// each thing once.
func (r *run) warnOnce(format string, args ...any) {
	if msg := fmt.Sprintf(format, args...); !slices.Contains(r.warnings, msg) {
		r.warnings = append(r.warnings, msg)
	}
}

// incomplete records a read that failed: the prediction may miss hazards there.
func (r *run) incomplete(gvr schema.GroupVersionResource, err error) {
	reason := finalizev1alpha1.ReasonListFailed
	if apierrors.IsForbidden(err) {
		reason = finalizev1alpha1.ReasonForbidden
	}
	r.rep.Incomplete = append(r.rep.Incomplete, finalizev1alpha1.IncompleteResource{
		GroupVersion: gvr.GroupVersion().String(), Resource: gvr.Resource, Reason: reason, Message: err.Error(),
	})
}

// resolveTargets reads each target's metadata: its uid, and for a Helm object whether
// Helm keeps it on uninstall. A named target that does not exist is an error; an object
// of the release that does not exist (deleted by hand) is a warning.
func (r *run) resolveTargets(targets []Target, release bool) error {
	seen := map[string]bool{}
	for i, t := range targets {
		key := t.Resource.String() + "/" + t.Namespace + "/" + t.Name
		if seen[key] {
			continue
		}
		seen[key] = true
		fromRelease := release && i >= len(r.opts.Targets)
		if fromRelease && t.keep {
			r.warnf("%s is not deleted with the release: it is annotated %s=%s in the release's manifest", t.Ref, helmResourcePolicy, t.policy)
			continue
		}
		res := r.p.Clients.Metadata.Resource(t.Resource.GroupVersionResource)
		var m *metav1.PartialObjectMetadata
		var err error
		if t.Resource.Namespaced {
			m, err = res.Namespace(t.Namespace).Get(r.ctx, t.Name, metav1.GetOptions{})
		} else {
			m, err = res.Get(r.ctx, t.Name, metav1.GetOptions{})
		}
		switch {
		case apierrors.IsNotFound(err) && fromRelease:
			r.warnf("%s of the release does not exist in the cluster", t.Ref)
			continue
		case apierrors.IsNotFound(err):
			return fmt.Errorf("%s: %w", t.Ref, err)
		case err != nil:
			return fmt.Errorf("reading %s: %w", t.Ref, err)
		}
		ref := t.Resource.Ref(m.Namespace, m.Name, m.UID)
		r.rep.Targets = append(r.rep.Targets, ref)
		r.set.addTarget(ref)
	}
	if len(r.rep.Targets) == 0 {
		return fmt.Errorf("nothing to check: none of the objects of the release exists in the cluster")
	}
	return nil
}

// list lists the whole cluster once, metadata only, keeping what the prediction needs.
func (r *run) list() error {
	r.kept = newListing(r.set)
	opts := r.opts.Scan
	opts.Resources, opts.Namespace, opts.Namespaces, opts.LabelSelector, opts.Finalizers, opts.OlderThan = nil, "", nil, "", nil, 0
	opts.Index = true
	opts.Observe = r.kept.observe
	s := &scan.Scanner{Discovery: r.p.Clients.Discovery, Metadata: r.p.Clients.Metadata, Kube: r.p.Clients.Kube}
	res, err := s.Scan(r.ctx, opts)
	if err != nil {
		return err
	}
	r.res = res
	r.rep.Incomplete = append(r.rep.Incomplete, res.Incomplete...)
	r.set.collectGarbage(r.kept.dependents)
	r.rep.Deleted = r.kept.deletedCount(r.set)
	owner.NewResolver(owner.Builtin(), res.Groups).Annotate(r.kept.finalized)
	r.finder = &controller.Finder{Dynamic: r.p.Clients.Dynamic, Scan: res, ChunkSize: opts.ChunkSize, Warnf: r.warnOnce}
	return nil
}

// predict finds every hazard.
func (r *run) predict() {
	r.controllers = map[types.UID]map[string]finalizerController{}
	for _, h := range hazards {
		r.rep.Hazards = append(r.rep.Hazards, h.find(r)...)
	}
	sortIncomplete(r.rep.Incomplete)
}

// deletionSet is what a deletion removes.
type deletionSet struct {
	// uids are the targets and the dependents the garbage collector deletes.
	uids map[types.UID]finalizev1alpha1.ObjectReference
	// namespaces are the namespaces deleted, with all they hold.
	namespaces map[string]bool
	// types are the types of the CRDs deleted, with all their instances.
	types map[schema.GroupResource]string
	// byName finds the targets by type, namespace and name.
	byName map[string]bool
	// ofTypes are the uids of the objects listed whose type is deleted: the garbage
	// collector deletes their dependents too, in any namespace (a cluster-scoped custom
	// resource that owns an operator's Deployment).
	ofTypes map[types.UID]string
	// garbage counts the dependents the garbage collector deletes that are not in a
	// namespace or of a type deleted anyway.
	garbage int
}

func newDeletionSet() *deletionSet {
	return &deletionSet{uids: map[types.UID]finalizev1alpha1.ObjectReference{}, namespaces: map[string]bool{},
		types: map[schema.GroupResource]string{}, byName: map[string]bool{}, ofTypes: map[types.UID]string{}}
}

func nameKey(gr schema.GroupResource, namespace, name string) string {
	return gr.String() + "/" + namespace + "/" + name
}

func (s *deletionSet) addTarget(ref finalizev1alpha1.ObjectReference) {
	s.uids[ref.UID] = ref
	s.byName[nameKey(ref.GroupResource(), ref.Namespace, ref.Name)] = true
	switch ref.GroupResource() {
	case schema.GroupResource{Resource: "namespaces"}:
		s.namespaces[ref.Name] = true
	case crdResource:
		resource, group, _ := strings.Cut(ref.Name, ".")
		s.types[schema.GroupResource{Group: group, Resource: resource}] = ref.Name
	}
}

// has reports whether the deletion removes the object.
func (s *deletionSet) has(ref finalizev1alpha1.ObjectReference) bool {
	if ref.UID != "" {
		if _, ok := s.uids[ref.UID]; ok {
			return true
		}
	}
	gr := ref.GroupResource()
	return s.namespaces[ref.Namespace] || s.types[gr] != "" || s.byName[nameKey(gr, ref.Namespace, ref.Name)] ||
		(gr == schema.GroupResource{Resource: "namespaces"} && s.namespaces[ref.Name])
}

// collectGarbage adds the dependents the garbage collector deletes: those whose every
// owner is deleted, until nothing more is added.
func (s *deletionSet) collectGarbage(deps []dependent) {
	for changed := true; changed; {
		changed = false
		for i := range deps {
			d := &deps[i]
			if s.has(d.ref) {
				continue
			}
			all := true
			for _, o := range d.owners {
				if !s.ownerDeleted(o, d.ref.Namespace) {
					all = false
					break
				}
			}
			if all {
				s.uids[d.ref.UID] = d.ref
				s.garbage++
				changed = true
			}
		}
	}
}

// ownerDeleted says whether the owner of uid is deleted, for a dependent in namespace
// (empty: cluster-scoped). The garbage collector never deletes a cluster-scoped
// dependent for a namespaced owner: that reference cannot be resolved.
func (s *deletionSet) ownerDeleted(uid types.UID, namespace string) bool {
	if ref, ok := s.uids[uid]; ok {
		return namespace != "" || ref.Namespace == ""
	}
	if ns, ok := s.ofTypes[uid]; ok {
		return namespace != "" || ns == ""
	}
	return false
}

// dependent is an object with ownerReferences.
type dependent struct {
	ref    finalizev1alpha1.ObjectReference
	owners []types.UID
}

// listing is what the prediction keeps of the listing of the cluster. It grows with the
// number of objects that carry finalizers or owners, never with their size.
type listing struct {
	mu  sync.Mutex
	set *deletionSet
	// finalized are the objects that carry metadata finalizers, sharing what they repeat
	// (shared).
	finalized []*kube.Object
	shared    *kube.Shared
	// dependents are the objects with ownerReferences.
	dependents []dependent
	// claims are the PersistentVolumeClaims, services the Services and workloads the
	// Deployments, StatefulSets and DaemonSets, by namespace and name.
	claims    []finalizev1alpha1.ObjectReference
	services  map[types.NamespacedName]finalizev1alpha1.ObjectReference
	workloads map[string]finalizev1alpha1.ObjectReference
	// inSet counts the objects listed that are in a namespace or of a type deleted, or
	// named.
	inSet int
	// nsLabels are the labels of every namespace.
	nsLabels map[string]map[string]string
	// ofType counts the objects of each type the deletion deletes with its CRD.
	ofType map[schema.GroupResource]int
	// present are the namespaces that hold objects of each type of an API group (the
	// types a conversion webhook may serve).
	present map[schema.GroupResource]map[string]bool
}

func newListing(set *deletionSet) *listing {
	return &listing{set: set, shared: kube.NewShared(), services: map[types.NamespacedName]finalizev1alpha1.ObjectReference{},
		workloads: map[string]finalizev1alpha1.ObjectReference{}, nsLabels: map[string]map[string]string{},
		present: map[schema.GroupResource]map[string]bool{}, ofType: map[schema.GroupResource]int{}}
}

// observe sees every object listed; it is called from several goroutines at once.
func (l *listing) observe(r kube.Resource, m *metav1.ObjectMeta, ns *corev1.Namespace) {
	ref := r.Ref(m.Namespace, m.Name, m.UID)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.set.has(ref) {
		l.inSet++
	}
	if l.set.types[r.GroupResource()] != "" {
		l.set.ofTypes[m.UID] = m.Namespace
		l.ofType[r.GroupResource()]++
	}
	if len(m.Finalizers) > 0 {
		l.finalized = append(l.finalized, l.shared.NewObject(r, m, nil))
	}
	if len(m.OwnerReferences) > 0 {
		d := dependent{ref: ref}
		for _, o := range m.OwnerReferences {
			d.owners = append(d.owners, o.UID)
		}
		l.dependents = append(l.dependents, d)
	}
	switch gr := r.GroupResource(); {
	case gr == claimGR:
		l.claims = append(l.claims, ref)
	case gr == serviceGR:
		l.services[types.NamespacedName{Namespace: m.Namespace, Name: m.Name}] = ref
	case workloadGRs[gr]:
		l.workloads[nameKey(gr, m.Namespace, m.Name)] = ref
	}
	if ns != nil {
		l.nsLabels[ns.Name] = ns.Labels
	}
	if gr := r.GroupResource(); m.Namespace != "" && strings.Contains(gr.Group, ".") {
		if l.present[gr] == nil {
			l.present[gr] = map[string]bool{}
		}
		l.present[gr][m.Namespace] = true
	}
}

// deletedCount is how many objects the deletion removes: those counted while listing,
// and the dependents the garbage collector deletes besides.
func (l *listing) deletedCount(s *deletionSet) int {
	return l.inSet + s.garbage
}

// The types the prediction looks at.
var (
	crdResource = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	claimGR     = schema.GroupResource{Resource: "persistentvolumeclaims"}
	serviceGR   = schema.GroupResource{Resource: "services"}
	workloadGRs = map[schema.GroupResource]bool{
		{Group: "apps", Resource: "deployments"}: true, {Group: "apps", Resource: "statefulsets"}: true, {Group: "apps", Resource: "daemonsets"}: true,
	}
	workloadKindGR = map[string]schema.GroupResource{
		"Deployment": {Group: "apps", Resource: "deployments"}, "StatefulSet": {Group: "apps", Resource: "statefulsets"}, "DaemonSet": {Group: "apps", Resource: "daemonsets"},
	}
)

// sortHazards orders hazards by reason, then cause.
func sortHazards(hs []finalizev1alpha1.Hazard) {
	sort.SliceStable(hs, func(i, j int) bool {
		if rank[hs[i].Reason] != rank[hs[j].Reason] {
			return rank[hs[i].Reason] < rank[hs[j].Reason]
		}
		return hs[i].Cause.String() < hs[j].Cause.String()
	})
}

func sortIncomplete(list []finalizev1alpha1.IncompleteResource) {
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].GroupVersion != list[j].GroupVersion {
			return list[i].GroupVersion < list[j].GroupVersion
		}
		return list[i].Resource < list[j].Resource
	})
}

// sortRefs orders references by namespace, type and name.
func sortRefs(refs []finalizev1alpha1.ObjectReference) {
	sort.SliceStable(refs, func(i, j int) bool {
		a, b := refs[i], refs[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.GroupResource().String() != b.GroupResource().String() {
			return a.GroupResource().String() < b.GroupResource().String()
		}
		return a.Name < b.Name
	})
}
