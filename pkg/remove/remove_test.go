package remove

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

func TestPatchIsGuarded(t *testing.T) {
	got, err := Patch("0f1c-uid", 2, "db.example.com/finalizer")
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"test","path":"/metadata/uid","value":"0f1c-uid"},` +
		`{"op":"test","path":"/metadata/finalizers/2","value":"db.example.com/finalizer"},` +
		`{"op":"remove","path":"/metadata/finalizers/2"}]`
	if string(got) != want {
		t.Fatalf("patch\n got %s\nwant %s", got, want)
	}
}

var configmaps = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

func fakeObject(uid string, finalizers ...string) *metav1.PartialObjectMetadata {
	ts := metav1.Now()
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cfg", UID: types.UID("uid-" + uid), Finalizers: finalizers, DeletionTimestamp: &ts},
	}
}

// TestRemoveSendsOnlyTheGuardedPatch asserts the exact requests: a read, then one JSON
// patch with the test ops, and nothing else.
func TestRemoveSendsOnlyTheGuardedPatch(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	client := metadatafake.NewSimpleMetadataClient(scheme, fakeObject("1", "a.example.com/x", "db.example.com/finalizer"))
	var patches []string
	client.PrependReactor("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchActionImpl)
		patches = append(patches, string(p.GetPatchType())+" "+string(p.GetPatch()))
		return false, nil, nil
	})
	r := &Remover{Metadata: client}
	out, err := r.Remove(context.Background(), Target{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1", Finalizer: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers}, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result != Removed || out.Attempts != 1 {
		t.Errorf("outcome %+v", out)
	}
	want := `application/json-patch+json [{"op":"test","path":"/metadata/uid","value":"uid-1"},{"op":"test","path":"/metadata/finalizers/1","value":"db.example.com/finalizer"},{"op":"remove","path":"/metadata/finalizers/1"}]`
	if len(patches) != 1 || patches[0] != want {
		t.Errorf("patches %q\nwant [%q]", patches, want)
	}
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if strings.Join(verbs, ",") != "get,patch" {
		t.Errorf("requests %v, want get,patch", verbs)
	}
}

func TestRemoveRefusesAnotherUIDAndClientDryRunSendsNothing(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	client := metadatafake.NewSimpleMetadataClient(scheme, fakeObject("2", "db.example.com/finalizer"))
	r := &Remover{Metadata: client}
	tgt := Target{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1", Finalizer: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers}
	if _, err := r.Remove(context.Background(), tgt, DryRunNone); !errors.Is(err, ErrUIDChanged) {
		t.Fatalf("got %v, want ErrUIDChanged", err)
	}
	tgt.UID = "uid-2"
	out, err := r.Remove(context.Background(), tgt, DryRunClient)
	if err != nil || out.Result != WouldRemove || len(out.Remaining) != 0 {
		t.Fatalf("client dry run: %+v %v", out, err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("a client dry run sends no %s", a.GetVerb())
		}
	}
	tgt.UID = ""
	if _, err := r.Remove(context.Background(), tgt, DryRunNone); err == nil {
		t.Error("a removal without the uid it was decided for must be refused")
	}
}

func TestRemoveGivesUpWhenTheTestKeepsFailing(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	client := metadatafake.NewSimpleMetadataClient(scheme, fakeObject("1", "db.example.com/finalizer"))
	client.PrependReactor("patch", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cfg", nil)
	})
	r := &Remover{Metadata: client, MaxAttempts: 3}
	_, err := r.Remove(context.Background(), Target{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1", Finalizer: "db.example.com/finalizer"}, DryRunNone)
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts, the object kept changing") {
		t.Fatalf("got %v", err)
	}
}

// TestPlanRefuses covers every refusal, and shows the flags that unlock each.
func TestPlanRefuses(t *testing.T) {
	ts := metav1.NewTime(time.Now().Add(-time.Hour))
	obj := func(r kube.Resource, ns, name string, fins ...finalizev1alpha1.Finalizer) *kube.Object {
		return &kube.Object{Resource: r, Meta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), DeletionTimestamp: &ts}, Finalizers: fins}
	}
	custom := finalizev1alpha1.Finalizer{Name: "db.example.com/finalizer", Field: "metadata.finalizers", Owner: "database-operator", OwnerSource: "managedFields"}
	pvcFin := finalizev1alpha1.Finalizer{Name: "kubernetes.io/pvc-protection", Field: "metadata.finalizers", System: true, Owner: "pvc-protection controller (kube-controller-manager)"}
	nsFin := finalizev1alpha1.Finalizer{Name: "kubernetes", Field: "spec.finalizers", System: true, Owner: "namespace controller (kube-controller-manager)"}
	db := obj(configmaps, "a", "db", custom)
	claim := obj(kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, Kind: "PersistentVolumeClaim", Namespaced: true}, "a", "data", pvcFin)
	nsRes := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}
	full := obj(nsRes, "", "full", nsFin)
	empty := obj(nsRes, "", "empty", nsFin)
	res := &scan.Result{Objects: []*kube.Object{db, claim, full, empty}, Index: &scan.Index{Content: map[string]*scan.NamespaceContent{
		"full": {Count: 2, ByType: map[string]int64{"configmaps": 2}, Sample: []scan.ObjectRef{{Resource: configmaps, Namespace: "full", Name: "left"}}},
	}}}
	causeOf := func(*kube.Object) *finalizev1alpha1.Cause { return nil }
	tests := []struct {
		name     string
		req      Request
		opts     Options
		wantKind finalizev1alpha1.RefusalKind
		wantWhy  string
	}{
		{"unverified", Request{Object: db, Finalizers: []string{custom.Name}}, Options{}, finalizev1alpha1.RefusalUnverified, "nothing verified that what the finalizer guards is done"},
		{"forced without a reason", Request{Object: db, Finalizers: []string{custom.Name}}, Options{ForceUnverified: true}, finalizev1alpha1.RefusalUnverified, "nothing verified"},
		{"forced", Request{Object: db, Finalizers: []string{custom.Name}}, Options{ForceUnverified: true, Reason: "INC-1"}, "", ""},
		{"no such finalizer", Request{Object: db, Finalizers: []string{"nope"}}, Options{ForceUnverified: true, Reason: "x"}, finalizev1alpha1.RefusalNoSuchFinalizer, "it has no such finalizer (it has: db.example.com/finalizer)"},
		{"system", Request{Object: claim, All: true}, Options{ForceUnverified: true, Reason: "x"}, finalizev1alpha1.RefusalSystem, "system finalizer of pvc-protection controller"},
		{"system allowed", Request{Object: claim, All: true}, Options{ForceUnverified: true, Reason: "x", AllowSystem: true}, "", ""},
		{"namespace with content", Request{Object: full, All: true}, Options{ForceUnverified: true, Reason: "x", AllowSystem: true}, finalizev1alpha1.RefusalStranding, "the namespace still holds 2 objects (configmaps: 2: configmaps/left, ...)"},
		{"namespace with content, stranding allowed", Request{Object: full, All: true}, Options{ForceUnverified: true, Reason: "x", AllowSystem: true, AllowStranding: true}, "", ""},
		{"empty namespace", Request{Object: empty, All: true}, Options{ForceUnverified: true, Reason: "x", AllowSystem: true}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := (&Planner{Result: res, CauseOf: causeOf, Catalog: owner.Builtin()}).Plan(context.Background(), []Request{tt.req}, tt.opts)
			if tt.wantWhy == "" {
				if len(p.Refusals) != 0 || len(p.Actions) != 1 {
					t.Fatalf("want one action, got %+v", p)
				}
				return
			}
			if len(p.Refusals) != 1 || len(p.Actions) != 0 {
				t.Fatalf("want one refusal, got %+v", p)
			}
			r := p.Refusals[0]
			if r.Kind != tt.wantKind || !strings.Contains(r.Why, tt.wantWhy) {
				t.Errorf("refusal %+v, want kind %q and why containing %q", r, tt.wantKind, tt.wantWhy)
			}
		})
	}
	// With an incomplete scan, an empty-looking namespace is not proven empty.
	res.Incomplete = []finalizev1alpha1.IncompleteResource{{GroupVersion: "metrics.example.com/v1", Reason: "DiscoveryFailed"}}
	p := (&Planner{Result: res, CauseOf: causeOf}).Plan(context.Background(), []Request{{Object: empty, All: true}}, Options{ForceUnverified: true, Reason: "x", AllowSystem: true})
	if len(p.Refusals) != 1 || p.Refusals[0].Kind != finalizev1alpha1.RefusalStranding || !strings.Contains(p.Refusals[0].Why, "the scan could not list metrics.example.com/v1") {
		t.Errorf("incomplete scan: %+v", p)
	}
}

// TestAWriteWithoutAnAnswerIsReadAgain: a server error or a broken connection leaves a
// write's outcome unknown. The object is read again and the removal decided anew: sent
// again if the finalizer is still there, reported as already removed if not, and a
// failure that says the outcome is unknown if the object cannot be read.
func TestAWriteWithoutAnAnswerIsReadAgain(t *testing.T) {
	fin := "db.example.com/finalizer"
	tgt := Target{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1", Finalizer: fin, Field: finalizev1alpha1.FieldMetadataFinalizers}
	setup := func(onPatch func(client *metadatafake.FakeMetadataClient, n int) error) (*metadatafake.FakeMetadataClient, *Remover) {
		scheme := runtime.NewScheme()
		_ = metav1.AddMetaToScheme(scheme)
		client := metadatafake.NewSimpleMetadataClient(scheme, fakeObject("1", fin))
		n := 0
		client.PrependReactor("patch", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
			n++
			if err := onPatch(client, n); err != nil {
				return true, nil, err
			}
			return false, nil, nil
		})
		return client, &Remover{Metadata: client}
	}
	verbs := func(client *metadatafake.FakeMetadataClient) string {
		var out []string
		for _, a := range client.Actions() {
			out = append(out, a.GetVerb())
		}
		return strings.Join(out, ",")
	}
	timeout := apierrors.NewTimeoutError("etcd did not answer in time", 0)

	// Not applied: sent again.
	client, r := setup(func(_ *metadatafake.FakeMetadataClient, n int) error {
		if n == 1 {
			return timeout
		}
		return nil
	})
	out, err := r.Remove(context.Background(), tgt, DryRunNone)
	if err != nil || out.Result != Removed || out.Attempts != 2 || verbs(client) != "get,patch,get,patch" {
		t.Errorf("a write that was not applied: %+v %v (%s)", out, err, verbs(client))
	}

	// Applied, but the answer was lost: the read shows it.
	client, r = setup(func(client *metadatafake.FakeMetadataClient, n int) error {
		if n == 1 {
			_ = client.Tracker().Update(configmaps.GroupVersionResource, fakeObject("1"), "a")
			return apierrors.NewInternalError(errors.New("connection to etcd lost"))
		}
		return nil
	})
	out, err = r.Remove(context.Background(), tgt, DryRunNone)
	if err != nil || out.Result != AlreadyRemoved || verbs(client) != "get,patch,get" {
		t.Errorf("a write applied without an answer: %+v %v (%s)", out, err, verbs(client))
	}

	// The server is gone after the write: unknown, and said so.
	_, r = setup(func(client *metadatafake.FakeMetadataClient, n int) error {
		client.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
		})
		return timeout
	})
	_, err = r.Remove(context.Background(), tgt, DryRunNone)
	if err == nil || !strings.Contains(err.Error(), "the API server did not answer the write (Timeout: etcd did not answer in time), then reading configmaps/cfg -n a: dial tcp") ||
		!strings.Contains(err.Error(), "whether the finalizer was removed is unknown") {
		t.Errorf("a write without an answer, then no server: %v", err)
	}
}
