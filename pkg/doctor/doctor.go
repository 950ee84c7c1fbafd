package doctor

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Options tune a diagnosis; the zero value is the default.
type Options struct {
	// Catalog names well-known finalizers; nil means owner.Builtin().
	Catalog *owner.Catalog
	// NamespaceGrace is how long a namespace may go without deletion conditions before
	// the namespace controller is said to be inactive; zero means defaultNamespaceGrace.
	NamespaceGrace time.Duration
	// ChunkSize is the page size of the doctor's own lists (pods, events, webhooks,
	// APIServices); 0 lists each in one request. Diagnose through the pipeline uses the
	// scan's.
	ChunkSize int64
	// ProgressWindow is how long a controller may go without writing to an object it
	// holds and still be called Progressing; zero means DefaultProgressWindow.
	ProgressWindow time.Duration
}

// Doctor diagnoses the objects of a scan.
type Doctor struct {
	Kube    client.Interface
	Dynamic dynamic.Interface
	Options
}

// ErrNoIndex means a diagnosis was asked of a scan made without its index: without it the
// doctor cannot see dependents, namespace content or workloads, and would be wrong.
var ErrNoIndex = errors.New("the doctor needs the scan's index of dependents, namespace content and workloads: scan with Options.Index")

// Report is the diagnosis of every object of a scan.
type Report struct {
	Result *scan.Result
	// Roots are the root causes, the ones that explain most objects first.
	Roots []*finalizev1alpha1.RootCause
	// Warnings name the reads that failed and what the diagnosis could not check.
	Warnings []string

	// unreadable are the causes of Result.Unreadable, in order.
	unreadable []*finalizev1alpha1.Cause

	// objects is what the diagnosis keeps of each object, by UID: one map entry each,
	// with the root causes of an object worked out when asked (rootsOf), not kept for
	// each of thousands of objects stuck alike (#36).
	objects map[types.UID]entry
	// byKey are the root causes by what tells them apart.
	byKey map[rootKey]*finalizev1alpha1.RootCause
}

// entry is what the diagnosis keeps of one object.
type entry struct {
	cause *finalizev1alpha1.Cause
	// leaves are the root causes the object's own findings name.
	leaves []*rootSpec
	// waits are the stuck objects it waits for.
	waits []*kube.Object
}

// Diagnose explains every object of res, which must come from a scan with Options.Index.
func (d *Doctor) Diagnose(ctx context.Context, res *scan.Result) (*Report, error) {
	if res.Index == nil {
		return nil, ErrNoIndex
	}
	catalog := d.Catalog
	if catalog == nil {
		catalog = owner.Builtin()
	}
	grace := d.NamespaceGrace
	if grace == 0 {
		grace = defaultNamespaceGrace
	}
	f := newFacts(ctx, d.Kube, d.Dynamic, res)
	f.chunk, f.workloads.ChunkSize = d.ChunkSize, d.ChunkSize
	window := d.ProgressWindow
	if window <= 0 {
		window = DefaultProgressWindow
	}
	dg := &diagnoser{f: f, catalog: catalog, namespaceGrace: grace, progressWindow: window}
	rep := &Report{Result: res, objects: make(map[types.UID]entry, len(res.Objects))}
	// Thousands of objects held by one dead operator name one root cause, said the same
	// way: each is kept once until the roots are gathered (#36).
	shared := map[rootSpec]*rootSpec{}
	// Their causes often say the same of each (the next step names the object): one
	// copy of each message.
	said := map[string]string{}
	for _, o := range res.Objects {
		findings := dg.diagnose(o)
		c := merge(findings)
		if m, ok := said[c.Message]; ok {
			c.Message = m
		} else {
			said[c.Message] = c.Message
		}
		e := entry{cause: c}
		for _, fd := range findings {
			if fd.root != nil {
				spec, ok := shared[*fd.root]
				if !ok {
					spec = fd.root
					shared[*spec] = spec
				}
				if !slices.ContainsFunc(e.leaves, func(l *rootSpec) bool { return l.key() == spec.key() }) {
					e.leaves = append(e.leaves, spec)
				}
			}
			e.waits = append(e.waits, fd.waitsOn...)
		}
		rep.objects[o.Meta.UID] = e
	}
	rep.gatherRoots()
	// Each object the API server cannot read is a root cause, the one a namespace that
	// holds it waits for too.
	for _, u := range res.Unreadable {
		c, spec := unreadableCause(u)
		rep.unreadable = append(rep.unreadable, c)
		ref := u.Resource.Ref(u.Namespace, u.Name, "")
		var root *finalizev1alpha1.RootCause
		for _, r := range rep.Roots {
			// The subject names a Kind without its group: the root is this object's only
			// when no other object that nobody can read is in it.
			if r.Reason == spec.reason && r.Subject == spec.subject && !slices.ContainsFunc(r.Objects, func(o finalizev1alpha1.ObjectReference) bool {
				return o.UID == "" && o != ref
			}) {
				root = r
			}
		}
		if root == nil {
			root = &finalizev1alpha1.RootCause{Reason: spec.reason, Subject: spec.subject, Message: spec.message, NextStep: spec.next}
			rep.Roots = append(rep.Roots, root)
		}
		root.Objects = append(root.Objects, ref)
	}
	sortRoots(rep.Roots)
	dg.describeConversionIncomplete()
	rep.Warnings = dg.f.warnings
	return rep, nil
}

// merge turns the findings of one object into its cause.
func merge(findings []finding) *finalizev1alpha1.Cause {
	sort.SliceStable(findings, func(i, j int) bool { return priority(findings[i].reason) < priority(findings[j].reason) })
	top := findings[0]
	c := &finalizev1alpha1.Cause{Reason: top.reason, Message: top.message, NextStep: top.next}
	var also []string
	seen := map[string]bool{}
	for _, fd := range findings {
		if c.External == nil {
			c.External = fd.external
		}
		for _, b := range fd.blockers {
			k := b.Target.Kind + "/" + b.Target.Namespace + "/" + b.Target.Name
			if !seen[k] {
				seen[k] = true
				c.Blockers = append(c.Blockers, b)
			}
		}
		if fd.message != top.message && !slices.Contains(also, fd.message) {
			also = append(also, fd.message)
		}
	}
	for _, fd := range findings {
		for _, c := range fd.context {
			if !slices.Contains(also, c) {
				also = append(also, c)
			}
		}
	}
	if len(also) > 0 {
		// One copy of each message, which thousands of objects stuck alike share.
		c.Message = unique.Make(c.Message + "; also: " + strings.Join(also, "; ")).Value()
	}
	return c
}

// gatherRoots follows what each object waits for down to root causes, and groups the
// objects by root cause.
func (rep *Report) gatherRoots() {
	rep.byKey = map[rootKey]*finalizev1alpha1.RootCause{}
	// Twice: once to count the objects of each root cause, then to list them in a slice
	// of that size. Ten thousand objects held by one dead operator are one list.
	counts := map[rootKey]int{}
	for _, o := range rep.Result.Objects {
		for _, s := range rep.specsOf(o) {
			if _, ok := rep.byKey[s.key()]; !ok {
				rep.byKey[s.key()] = &finalizev1alpha1.RootCause{Reason: s.reason, Subject: s.subject, Message: s.message, NextStep: s.next}
			}
			counts[s.key()]++
		}
	}
	for _, o := range rep.Result.Objects {
		ref := o.Ref().API()
		for _, s := range rep.specsOf(o) {
			r := rep.byKey[s.key()]
			if r.Objects == nil {
				r.Objects = make([]finalizev1alpha1.ObjectReference, 0, counts[s.key()])
			}
			r.Objects = append(r.Objects, ref)
		}
	}
	for _, r := range rep.byKey {
		rep.Roots = append(rep.Roots, r)
	}
	sortRoots(rep.Roots)
}

// specsOf are the root causes o comes down to, through what it waits for, one of each.
func (rep *Report) specsOf(o *kube.Object) []*rootSpec {
	e := rep.objects[o.Meta.UID]
	if len(e.waits) == 0 && len(e.leaves) > 0 {
		// Most objects: their own findings name their root causes, one of each.
		return e.leaves
	}
	var specs []*rootSpec
	seen := map[rootKey]bool{}
	var walk func(uid types.UID, visiting map[types.UID]bool)
	walk = func(uid types.UID, visiting map[types.UID]bool) {
		if visiting[uid] {
			return // a cycle of objects waiting for each other adds nothing
		}
		visiting[uid] = true
		defer delete(visiting, uid)
		e := rep.objects[uid]
		for _, s := range e.leaves {
			if !seen[s.key()] {
				seen[s.key()] = true
				specs = append(specs, s)
			}
		}
		for _, w := range e.waits {
			walk(w.Meta.UID, visiting)
		}
	}
	walk(o.Meta.UID, map[types.UID]bool{})
	if len(specs) == 0 {
		specs = []*rootSpec{{
			reason:  finalizev1alpha1.ReasonUnknown,
			subject: subjectOf(o),
			message: "the objects it waits for wait for it in turn",
			next:    "inspect the objects in the cycle one by one",
		}}
	}
	return specs
}

// rootsOf are the root causes that explain o.
func (rep *Report) rootsOf(o *kube.Object) []*finalizev1alpha1.RootCause {
	var out []*finalizev1alpha1.RootCause
	for _, s := range rep.specsOf(o) {
		if r := rep.byKey[s.key()]; r != nil {
			out = append(out, r)
		}
	}
	return out
}

// sortRoots orders root causes: the ones that explain most objects first.
func sortRoots(roots []*finalizev1alpha1.RootCause) {
	sort.Slice(roots, func(i, j int) bool {
		a, b := roots[i], roots[j]
		if len(a.Objects) != len(b.Objects) {
			return len(a.Objects) > len(b.Objects)
		}
		if priority(a.Reason) != priority(b.Reason) {
			return priority(a.Reason) < priority(b.Reason)
		}
		return a.Subject.Kind+a.Subject.Namespace+a.Subject.Name < b.Subject.Kind+b.Subject.Namespace+b.Subject.Name
	})
}

// Narrow is rep for the objects of res alone, a narrowing of rep.Result
// (scan.Result.Narrow): their causes are the ones measured on the whole of rep.Result, and
// each root cause keeps the objects of res it explains.
func (rep *Report) Narrow(res *scan.Result) *Report {
	kept := map[types.UID]bool{}
	for _, o := range res.Objects {
		kept[o.Meta.UID] = true
	}
	out := &Report{Result: res, Warnings: rep.Warnings, objects: rep.objects, byKey: map[rootKey]*finalizev1alpha1.RootCause{}}
	for _, u := range res.Unreadable {
		for i, v := range rep.Result.Unreadable {
			if v.Resource == u.Resource && v.Namespace == u.Namespace && v.Name == u.Name {
				out.unreadable = append(out.unreadable, rep.unreadable[i])
			}
		}
	}
	unreadable := func(ref finalizev1alpha1.ObjectReference) bool {
		for _, u := range res.Unreadable {
			if ref == u.Resource.Ref(u.Namespace, u.Name, "") {
				return true
			}
		}
		return false
	}
	keys := make(map[*finalizev1alpha1.RootCause]rootKey, len(rep.byKey))
	for k, r := range rep.byKey {
		keys[r] = k
	}
	for _, r := range rep.Roots {
		var objs []finalizev1alpha1.ObjectReference
		for _, ref := range r.Objects {
			if kept[ref.UID] || unreadable(ref) {
				objs = append(objs, ref)
			}
		}
		if len(objs) == 0 {
			continue
		}
		c := *r
		c.Objects = objs
		out.Roots = append(out.Roots, &c)
		// A kept object's root causes all list it, so all are kept. The root causes of
		// objects nobody can read have no key: they are found in Roots.
		if k, ok := keys[r]; ok {
			out.byKey[k] = &c
		}
	}
	sortRoots(out.Roots)
	return out
}

// Cause is the diagnosis of o.
func (rep *Report) Cause(o *kube.Object) *finalizev1alpha1.Cause {
	return rep.objects[o.Meta.UID].cause
}

// List is the scan's list with every cause filled in.
func (rep *Report) List() *finalizev1alpha1.StuckObjectList {
	list := rep.Result.List()
	for i := range list.Items {
		if i < len(rep.Result.Objects) {
			list.Items[i].Cause = rep.Cause(rep.Result.Objects[i])
		} else {
			list.Items[i].Cause = rep.unreadable[i-len(rep.Result.Objects)]
		}
	}
	return list
}

// Diagnosis is what `doctor` prints: for target, the target and everything it waits for,
// and only the root causes that explain it; without a target, everything.
func (rep *Report) Diagnosis(target *kube.Object) *finalizev1alpha1.Diagnosis {
	out, n, item := rep.diagnosisItems(target)
	out.Items = make([]finalizev1alpha1.StuckObject, 0, n)
	for i := range n {
		out.Items = append(out.Items, item(i))
	}
	return out
}

// diagnosisItems is Diagnosis without its items: there are n, and item makes the i-th.
func (rep *Report) diagnosisItems(target *kube.Object) (d *finalizev1alpha1.Diagnosis, n int, item func(i int) finalizev1alpha1.StuckObject) {
	out := &finalizev1alpha1.Diagnosis{
		TypeMeta:   metav1.TypeMeta{APIVersion: finalizev1alpha1.SchemeGroupVersion.String(), Kind: "Diagnosis"},
		RootCauses: []finalizev1alpha1.RootCause{},
		Items:      []finalizev1alpha1.StuckObject{},
		Incomplete: append([]finalizev1alpha1.IncompleteResource{}, rep.Result.Incomplete...),
	}
	objs := rep.Result.Objects
	roots := rep.Roots
	if target != nil {
		ref := target.Ref().API()
		out.Target = &ref
		objs = rep.closure(target)
		roots = rep.rootsOf(target)
	}
	// Every object the API server cannot read; for a namespace, those it holds.
	var unreadable []int
	for i, u := range rep.Result.Unreadable {
		if target == nil || target.Resource.IsNamespaces() && u.Namespace == target.Meta.Name {
			unreadable = append(unreadable, i)
		}
	}
	for _, r := range roots {
		out.RootCauses = append(out.RootCauses, *r)
	}
	now := rep.Result.Now
	return out, len(objs) + len(unreadable), func(i int) finalizev1alpha1.StuckObject {
		if i < len(objs) {
			so := objs[i].Stuck(now)
			so.Cause = rep.Cause(objs[i])
			return so
		}
		u := unreadable[i-len(objs)]
		so := rep.Result.Unreadable[u].Stuck()
		so.Cause = rep.unreadable[u]
		return so
	}
}

// UnreadableDiagnosis is the Diagnosis of the object of resource r, namespace and name
// that the scan found the API server cannot read, with its root cause; nil when the scan
// found no such object.
func (rep *Report) UnreadableDiagnosis(r kube.Resource, namespace, name string) *finalizev1alpha1.Diagnosis {
	for i, u := range rep.Result.Unreadable {
		if u.Resource.GroupResource() != r.GroupResource() || u.Namespace != namespace || u.Name != name {
			continue
		}
		so := u.Stuck()
		so.Cause = rep.unreadable[i]
		ref := so.Target
		out := &finalizev1alpha1.Diagnosis{
			TypeMeta:   metav1.TypeMeta{APIVersion: finalizev1alpha1.SchemeGroupVersion.String(), Kind: "Diagnosis"},
			Target:     &ref,
			RootCauses: []finalizev1alpha1.RootCause{},
			Items:      []finalizev1alpha1.StuckObject{so},
			Incomplete: append([]finalizev1alpha1.IncompleteResource{}, rep.Result.Incomplete...),
		}
		for _, root := range rep.Roots {
			if root.Reason == finalizev1alpha1.ReasonUnreadable && slices.Contains(root.Objects, ref) {
				out.RootCauses = append(out.RootCauses, *root)
			}
		}
		return out
	}
	return nil
}

// closure is o and every stuck object it waits for, transitively, o first.
func (rep *Report) closure(o *kube.Object) []*kube.Object {
	seen := map[types.UID]bool{}
	var out []*kube.Object
	var visit func(*kube.Object)
	visit = func(x *kube.Object) {
		if seen[x.Meta.UID] {
			return
		}
		seen[x.Meta.UID] = true
		out = append(out, x)
		for _, w := range rep.objects[x.Meta.UID].waits {
			visit(w)
		}
	}
	visit(o)
	return out
}
