package write

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
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
	out, err := r.Remove(context.Background(), plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1"}, Finalizer: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers}, DryRunNone)
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
	tgt := plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1"}, Finalizer: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers}
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
	_, err := r.Remove(context.Background(), plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1"}, Finalizer: "db.example.com/finalizer"}, DryRunNone)
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts, the object kept changing") {
		t.Fatalf("got %v", err)
	}
}

// TestAWriteWithoutAnAnswerIsReadAgain: a server error or a broken connection leaves a
// write's outcome unknown. The object is read again and the removal decided anew: sent
// again if the finalizer is still there, reported as already removed if not, and a
// failure that says the outcome is unknown if the object cannot be read.
func TestAWriteWithoutAnAnswerIsReadAgain(t *testing.T) {
	fin := "db.example.com/finalizer"
	tgt := plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1"}, Finalizer: fin, Field: finalizev1alpha1.FieldMetadataFinalizers}
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

// TestEveryKindHasAWrite: the remover makes the write of every kind of removal the plan
// may decide.
func TestEveryKindHasAWrite(t *testing.T) {
	for _, k := range plan.Kinds {
		if writes[k] == nil {
			t.Errorf("%T has no write", k)
		}
	}
	if len(writes) != len(plan.Kinds) {
		t.Errorf("%d writes for %d kinds", len(writes), len(plan.Kinds))
	}
}
