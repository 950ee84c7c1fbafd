package scan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// obj builds object metadata: deletedAgo < 0 means not being deleted.
func obj(apiVersion, kind, ns, name string, deletedAgo time.Duration, finalizers ...string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Finalizers: finalizers},
	}
	if deletedAgo >= 0 {
		ts := metav1.NewTime(now.Add(-deletedAgo))
		m.DeletionTimestamp = &ts
	}
	return m
}

// fixture is a fake cluster.
type fixture struct {
	disc *failingDiscovery
	meta *metadatafake.FakeMetadataClient
	kube *kubefake.Clientset
}

// failingDiscovery fails discovery of the group versions in fail.
type failingDiscovery struct {
	*fakediscovery.FakeDiscovery
	fail map[string]error
}

func (d *failingDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	if err, ok := d.fail[gv]; ok {
		return nil, err
	}
	return d.FakeDiscovery.ServerResourcesForGroupVersion(gv)
}

func newFixture(objs []runtime.Object, namespaces ...runtime.Object) *fixture {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	resources := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"list", "get"}},
			{Name: "namespaces", Kind: "Namespace", Verbs: []string{"list", "get"}},
			{Name: "events", Kind: "Event", Namespaced: true, Verbs: []string{"list"}},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}},
			{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: []string{"get"}},
		}},
		{GroupVersion: "events.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "events", Kind: "Event", Namespaced: true, Verbs: []string{"list"}}}},
		{GroupVersion: "metrics.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "PodMetrics", Namespaced: true, Verbs: []string{"list"}}}},
		{GroupVersion: "db.example.com/v1", APIResources: []metav1.APIResource{{Name: "databases", Kind: "Database", Namespaced: true, Verbs: []string{"list"}}}},
		{GroupVersion: "lb.example.com/v1", APIResources: []metav1.APIResource{{Name: "loadbalancers", Kind: "LoadBalancer", Verbs: []string{"list"}}}},
	}
	fake := &clienttesting.Fake{Resources: resources}
	return &fixture{
		disc: &failingDiscovery{FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: fake}, fail: map[string]error{}},
		meta: metadatafake.NewSimpleMetadataClient(scheme, objs...),
		kube: kubefake.NewClientset(namespaces...),
	}
}

func (f *fixture) scan(t *testing.T, opts Options) *Result {
	t.Helper()
	opts.Clock = testingclock.NewFakePassiveClock(now)
	res, err := (&Scanner{Discovery: f.disc, Metadata: f.meta, Kube: f.kube}).Scan(context.Background(), opts)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return res
}

func names(res *Result) []string {
	var out []string
	for _, o := range res.Objects {
		out = append(out, fmt.Sprintf("%s %s/%s", o.Resource, o.Meta.Namespace, o.Meta.Name))
	}
	return out
}

func terminatingNamespace(name string, deletedAgo time.Duration, spec []corev1.FinalizerName, meta ...string) *corev1.Namespace {
	ts := metav1.NewTime(now.Add(-deletedAgo))
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), DeletionTimestamp: &ts, Finalizers: meta},
		Spec:       corev1.NamespaceSpec{Finalizers: spec},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
}

func TestScanFindsOnlyStuckObjects(t *testing.T) {
	f := newFixture([]runtime.Object{
		obj("v1", "ConfigMap", "a", "stuck-old", 3*time.Hour, "example.com/x"),
		obj("v1", "ConfigMap", "a", "stuck-new", time.Minute, "example.com/x", "example.com/y"),
		obj("v1", "ConfigMap", "a", "healthy-with-finalizer", -1, "example.com/x"),
		obj("v1", "ConfigMap", "a", "deleting-without-finalizers", time.Hour),
		obj("db.example.com/v1", "Database", "b", "orders", 2*time.Hour, "db.example.com/finalizer"),
		obj("lb.example.com/v1", "LoadBalancer", "", "edge", 30*time.Minute, "lb.example.com/release"),
	},
		terminatingNamespace("gone", 4*time.Hour, []corev1.FinalizerName{"kubernetes"}),
		terminatingNamespace("meta-only", 10*time.Minute, nil, "kopf.zalando.org/KopfFinalizerMarker"),
		terminatingNamespace("done", 5*time.Minute, nil),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "active"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}},
	)
	res := f.scan(t, Options{})
	want := []string{
		"namespaces /gone",
		"configmaps a/stuck-old",
		"databases.db.example.com b/orders",
		"loadbalancers.lb.example.com /edge",
		"namespaces /meta-only",
		"configmaps a/stuck-new",
	}
	if got := names(res); !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if len(res.Incomplete) != 0 {
		t.Errorf("incomplete: %+v", res.Incomplete)
	}
	if res.ObjectsSeen != 10 {
		t.Errorf("ObjectsSeen = %d, want 10", res.ObjectsSeen)
	}
	gone := res.Objects[0]
	if gone.Namespace == nil || len(gone.Finalizers) != 1 || gone.Finalizers[0] != (finalizev1alpha1.Finalizer{Name: "kubernetes", Field: "spec.finalizers"}) {
		t.Errorf("namespace gone: %+v", gone.Finalizers)
	}
	// The metrics API and the events.k8s.io alias of core events are not listed;
	// resources without the list verb and subresources neither.
	var listed []string
	for _, r := range res.Resources {
		listed = append(listed, r.String())
	}
	if want := []string{"configmaps", "databases.db.example.com", "events", "loadbalancers.lb.example.com", "namespaces"}; !slices.Equal(listed, want) {
		t.Errorf("listed types %q, want %q", listed, want)
	}
}

func TestScanNeverGetsSingleObjects(t *testing.T) {
	var objs []runtime.Object
	for i := range 50 {
		objs = append(objs, obj("v1", "ConfigMap", "a", fmt.Sprintf("cm-%d", i), time.Hour, "example.com/x"))
	}
	f := newFixture(objs, terminatingNamespace("gone", time.Hour, []corev1.FinalizerName{"kubernetes"}))
	res := f.scan(t, Options{})
	if len(res.Objects) != 51 {
		t.Fatalf("found %d, want 51", len(res.Objects))
	}
	for _, a := range append(f.meta.Actions(), f.kube.Actions()...) {
		if a.GetVerb() != "list" {
			t.Errorf("a scan sends only lists, saw %s %s", a.GetVerb(), a.GetResource())
		}
	}
}

func TestScanFilters(t *testing.T) {
	f := newFixture([]runtime.Object{
		obj("v1", "ConfigMap", "a", "old", 3*time.Hour, "example.com/x"),
		obj("v1", "ConfigMap", "a", "new", time.Minute, "argocd.argoproj.io/hook-finalizer"),
		obj("v1", "ConfigMap", "b", "other-ns", 3*time.Hour, "example.com/x"),
		obj("lb.example.com/v1", "LoadBalancer", "", "edge", 3*time.Hour, "lb.example.com/release"),
	}, terminatingNamespace("a", 3*time.Hour, []corev1.FinalizerName{"kubernetes"}), terminatingNamespace("b", time.Hour, []corev1.FinalizerName{"kubernetes"}))
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{"older than", Options{OlderThan: 2 * time.Hour}, []string{"configmaps a/old", "configmaps b/other-ns", "loadbalancers.lb.example.com /edge", "namespaces /a"}},
		{"finalizer glob", Options{Finalizers: glob.Set{glob.MustCompile("*.argoproj.io/*")}}, []string{"configmaps a/new"}},
		{"namespace keeps the namespace itself, drops cluster-scoped types", Options{Namespace: "a"}, []string{"configmaps a/old", "namespaces /a", "configmaps a/new"}},
		{"types", Options{Resources: []schema.GroupResource{{Group: "lb.example.com", Resource: "loadbalancers"}}}, []string{"loadbalancers.lb.example.com /edge"}},
		// A type's own namespaces win over the scan's; a cluster-scoped type is listed
		// cluster-wide whatever they say.
		{"namespaces of a type", Options{Resources: []schema.GroupResource{{Resource: "configmaps"}, {Group: "lb.example.com", Resource: "loadbalancers"}},
			NamespacesOf: map[schema.GroupResource][]string{{Resource: "configmaps"}: {"b"}, {Group: "lb.example.com", Resource: "loadbalancers"}: {"a"}}},
			[]string{"configmaps b/other-ns", "loadbalancers.lb.example.com /edge"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(f.scan(t, tt.opts)); !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestScanReportsWhatItCannotRead(t *testing.T) {
	f := newFixture([]runtime.Object{
		obj("v1", "ConfigMap", "a", "stuck", time.Hour, "example.com/x"),
	})
	f.disc.fail["db.example.com/v1"] = errors.New("the server is currently unable to handle the request")
	f.meta.PrependReactor("list", "loadbalancers", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "lb.example.com", Resource: "loadbalancers"}, "", errors.New("no RBAC"))
	})
	f.meta.PrependReactor("list", "events", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is slow"))
	})
	res := f.scan(t, Options{})
	if got := names(res); !slices.Equal(got, []string{"configmaps a/stuck"}) {
		t.Errorf("the scan must go on: got %q", got)
	}
	want := []finalizev1alpha1.IncompleteResource{
		{GroupVersion: "db.example.com/v1", Reason: "DiscoveryFailed", Message: "the server is currently unable to handle the request"},
		{GroupVersion: "lb.example.com/v1", Resource: "loadbalancers", Reason: "Forbidden", Message: `loadbalancers.lb.example.com is forbidden: no RBAC`},
		{GroupVersion: "v1", Resource: "events", Reason: "ListFailed", Message: "Internal error occurred: etcd is slow"},
	}
	if !slices.Equal(res.Incomplete, want) {
		t.Errorf("incomplete:\n got %+v\nwant %+v", res.Incomplete, want)
	}
	// Naming only configmaps, a discovery failure of another group cannot hide anything.
	res = f.scan(t, Options{Resources: []schema.GroupResource{{Resource: "configmaps"}}})
	if len(res.Incomplete) != 0 {
		t.Errorf("scan of configmaps only: incomplete %+v", res.Incomplete)
	}
}

func TestScanFailsWhenNothingCanBeListed(t *testing.T) {
	f := newFixture(nil)
	f.meta.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	})
	f.kube.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	})
	_, err := (&Scanner{Discovery: f.disc, Metadata: f.meta, Kube: f.kube}).Scan(context.Background(), Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "could not list any resource type: ") {
		t.Fatalf("got %v, want a failure: a scan that read nothing is not a clean scan", err)
	}
}

// pager serves a type in pages and expires the continue token the first expiries times
// it is used. client-go's fake drops Limit and Continue from list actions, so it plugs in
// below the fake, as the List of the resource.
type pager struct {
	items    []metav1.PartialObjectMetadata
	expiries int
	calls    int
	// stuckToken makes the server answer every page with the same continue token.
	stuckToken bool
}

func (p *pager) list(opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	p.calls++
	start := 0
	if opts.Continue != "" {
		if p.expiries > 0 {
			p.expiries--
			return nil, apierrors.NewResourceExpired("The provided continue parameter is too old")
		}
		if _, err := fmt.Sscanf(opts.Continue, "%d", &start); err != nil {
			return nil, err
		}
	}
	end := min(start+int(opts.Limit), len(p.items))
	list := &metav1.PartialObjectMetadataList{Items: p.items[start:end]}
	if end < len(p.items) {
		list.Continue = fmt.Sprint(end)
	}
	if p.stuckToken {
		list.Continue = "1"
	}
	return list, nil
}

type pagingMetadata struct {
	metadata.Interface
	p *pager
}

func (m pagingMetadata) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return pagingResource{Getter: m.Interface.Resource(gvr), p: m.p}
}

type pagingResource struct {
	metadata.Getter
	p *pager
}

func (r pagingResource) List(_ context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return r.p.list(opts)
}

func TestScanRelistsATypeWhoseContinueTokenExpired(t *testing.T) {
	var items []metav1.PartialObjectMetadata
	for i := range 5 {
		items = append(items, *obj("v1", "ConfigMap", "a", fmt.Sprintf("cm-%d", i), time.Hour, "example.com/x"))
	}
	tests := []struct {
		name       string
		pager      pager
		wantFound  int
		wantCalls  int
		wantReason string
	}{
		{"no expiry: three pages", pager{}, 5, 3, ""},
		{"one expiry: listed again from the start, nothing twice", pager{expiries: 1}, 5, 2 + 3, ""},
		{"expires every time: reported, not half-listed", pager{expiries: 10}, 0, 2 * maxListAttempts, "the list kept expiring after 3 attempts"},
		{"a server that repeats its continue token is not followed forever", pager{stuckToken: true}, 0, 2, "the server returned the same continue token twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(nil)
			p := tt.pager
			p.items = items
			opts := Options{ChunkSize: 2, Resources: []schema.GroupResource{{Resource: "configmaps"}}, Clock: testingclock.NewFakePassiveClock(now)}
			res, err := (&Scanner{Discovery: f.disc, Metadata: pagingMetadata{Interface: f.meta, p: &p}, Kube: f.kube}).Scan(context.Background(), opts)
			if tt.wantReason != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantReason) {
					t.Fatalf("got %v, want an error saying %q (the only type failed)", err, tt.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Objects) != tt.wantFound || p.calls != tt.wantCalls {
				t.Errorf("found %d in %d requests, want %d in %d", len(res.Objects), p.calls, tt.wantFound, tt.wantCalls)
			}
		})
	}
}

func TestScanRecordsManagerActivity(t *testing.T) {
	healthy := obj("v1", "ConfigMap", "a", "busy", -1)
	t1 := metav1.NewTime(now.Add(-time.Minute))
	t0 := metav1.NewTime(now.Add(-time.Hour))
	healthy.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "db-operator", Time: &t1}, {Manager: "kubectl-edit", Time: &t0}}
	stuck := obj("db.example.com/v1", "Database", "a", "orders", 2*time.Hour, "db.example.com/finalizer")
	stuck.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "db-operator", Time: &t0}}
	stuck.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: strings.Repeat("x", 10000), "keep": "me"}
	f := newFixture([]runtime.Object{healthy, stuck})
	res := f.scan(t, Options{})
	if got := res.ManagerActivity["db-operator"]; !got.Equal(t1.Time) {
		t.Errorf("db-operator last wrote %v, want %v (healthy objects count too)", got, t1)
	}
	if core, db := res.ManagerGroupActivity[ManagerGroup{"db-operator", ""}], res.ManagerGroupActivity[ManagerGroup{"db-operator", "db.example.com"}]; !core.Equal(t1.Time) || !db.Equal(t0.Time) {
		t.Errorf("db-operator last wrote %v to the core group and %v to db.example.com, want %v and %v", core, db, t1, t0)
	}
	if len(res.Objects) != 1 {
		t.Fatal(res.Objects)
	}
	// A stuck object's annotations are read from the full object when they matter (a
	// preset's settings); its list entry keeps none, the last-applied configuration
	// least of all (#36).
	if res.Objects[0].Meta.Annotations != nil {
		t.Errorf("annotations kept: %v", res.Objects[0].Meta.Annotations)
	}
	list := res.List()
	if list.Items[0].TerminatingSeconds != 7200 || list.Kind != "StuckObjectList" || list.Incomplete == nil {
		t.Errorf("list: %+v", list)
	}
}

// TestNarrowIsTheScanItNarrows: a scan of the whole cluster narrowed by opts finds what a
// scan with opts finds, and reports what such a scan could not read.
func TestNarrowIsTheScanItNarrows(t *testing.T) {
	labelled := obj("v1", "ConfigMap", "b", "labelled", 3*time.Hour, "example.com/x")
	labelled.Labels = map[string]string{"team": "orders"}
	f := newFixture([]runtime.Object{
		obj("v1", "ConfigMap", "a", "old", 3*time.Hour, "example.com/x"),
		obj("v1", "ConfigMap", "a", "new", time.Minute, "argocd.argoproj.io/hook-finalizer"),
		obj("v1", "ConfigMap", "b", "other-ns", 3*time.Hour, "example.com/x"),
		labelled,
		obj("lb.example.com/v1", "LoadBalancer", "", "edge", 3*time.Hour, "lb.example.com/release"),
		obj("db.example.com/v1", "Database", "a", "orders", 3*time.Hour, "db.example.com/finalizer"),
	}, terminatingNamespace("a", 3*time.Hour, []corev1.FinalizerName{"kubernetes"}), terminatingNamespace("b", time.Hour, []corev1.FinalizerName{"kubernetes"}))
	f.disc.fail["metrics.k8s.io/v1beta1"] = errors.New("the server is currently unable to handle the request")
	f.meta.PrependReactor("list", "loadbalancers", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "lb.example.com", Resource: "loadbalancers"}, "", errors.New("no RBAC"))
	})
	f.meta.PrependReactor("list", "databases", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is slow"))
	})
	for _, opts := range []Options{
		{},
		{OlderThan: 2 * time.Hour},
		{Finalizers: glob.Set{glob.MustCompile("*.argoproj.io/*")}},
		{Namespace: "a"},
		{Namespace: "b", LabelSelector: "team=orders"},
		{LabelSelector: "team in (orders, billing)"},
		{Resources: []schema.GroupResource{{Resource: "configmaps"}}},
		{Resources: []schema.GroupResource{{Group: "db.example.com", Resource: "databases"}}},
		{Namespaces: []string{"a", "b"}, OlderThan: 2 * time.Hour},
	} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			if opts.Narrows() != (fmt.Sprint(opts) != fmt.Sprint(Options{})) {
				t.Errorf("Narrows() = %v", opts.Narrows())
			}
			wide := f.scan(t, opts.Wide())
			if wide.Namespaces != nil || wide.LabelSelector != "" {
				t.Fatalf("Wide kept a narrowing: %+v", opts.Wide())
			}
			got, err := wide.Narrow(opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.Clock = testingclock.NewFakePassiveClock(now)
			want, err := (&Scanner{Discovery: f.disc, Metadata: f.meta, Kube: f.kube}).Scan(context.Background(), opts)
			if err != nil {
				// The one type asked for fails: the narrower scan fails, and the narrowed
				// one reports the type incomplete.
				if len(got.Objects) != 0 || len(got.Incomplete) == 0 || got.Incomplete[len(got.Incomplete)-1].Resource != opts.Resources[0].Resource {
					t.Errorf("the scan failed (%v), the narrowed one says %q, incomplete %+v", err, names(got), got.Incomplete)
				}
				return
			}
			if g, w := names(got), names(want); !slices.Equal(g, w) {
				t.Errorf("objects:\n got  %q\n want %q", g, w)
			}
			if !slices.Equal(got.Incomplete, want.Incomplete) {
				t.Errorf("incomplete:\n got  %+v\n want %+v", got.Incomplete, want.Incomplete)
			}
			// What was read stays what was read: the whole cluster.
			if got.Namespaces != nil || got.LabelSelector != "" || got.ObjectsSeen != wide.ObjectsSeen {
				t.Errorf("Narrow changed what the scan says it read: %v %q %d", got.Namespaces, got.LabelSelector, got.ObjectsSeen)
			}
		})
	}
	if _, err := (&Result{}).Narrow(Options{LabelSelector: "team in ("}); err == nil {
		t.Error("a label selector that does not parse is taken")
	}
}
