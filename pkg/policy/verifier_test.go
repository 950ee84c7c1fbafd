package policy

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

var (
	now       = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	databases = scan.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "db.example.com", Version: "v1", Resource: "databases"}, Kind: "Database", Namespaced: true}
	dbFin     = finalizev1alpha1.Finalizer{Name: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers}
)

func database(name, id string, deletedAgo time.Duration) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(databases.GroupVersion().WithKind("Database"))
	u.SetNamespace("prod")
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetResourceVersion("7")
	u.SetFinalizers([]string{dbFin.Name})
	if deletedAgo > 0 {
		ts := metav1.NewTime(now.Add(-deletedAgo))
		u.SetDeletionTimestamp(&ts)
	}
	_ = unstructured.SetNestedField(u.Object, id, "status", "instanceID")
	return u
}

// dbAPI is an HTTPS server that says instances are gone when gone says so.
func dbAPI(t *testing.T, gone func(id string) bool) string {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gone(strings.TrimPrefix(r.URL.Path, "/v1/instances/")) {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	_ = os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	return header + `rules:
- name: dbs
  finalizers: [db.example.com/finalizer]
  resources: [databases.db.example.com]
  minAge: 10m
  verify:
    http:
      url: "` + srv.URL + `/v1/instances/{.status.instanceID}"
      tls: {caFile: "` + ca + `"}
  controls: {count: 2}
`
}

// verifier sees objs as a scan would (controls included) and can read them.
func verifier(t *testing.T, doc string, objs ...*unstructured.Unstructured) (*Verifier, map[string]*scan.Object) {
	t.Helper()
	p, _ := compile(t, doc)
	var ros []runtime.Object
	for _, o := range objs {
		ros = append(ros, o)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{databases.GroupVersionResource: "DatabaseList"}, ros...)
	v := NewVerifier(p, dyn, provider.Options{})
	v.SetClock(func() time.Time { return now })
	stuck := map[string]*scan.Object{}
	for _, o := range objs {
		meta := &metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID(), Finalizers: o.GetFinalizers(), DeletionTimestamp: o.GetDeletionTimestamp(), Labels: o.GetLabels()}
		v.Controls.Observe(databases, meta, nil)
		stuck[o.GetName()] = scan.NewObject(databases, meta, nil)
	}
	return v, stuck
}

func TestVerification(t *testing.T) {
	doc := dbAPI(t, func(id string) bool { return id == "i-gone" })
	v, objs := verifier(t, doc,
		database("orders", "i-gone", time.Hour), database("users", "i-here", time.Hour),
		database("young", "i-gone", time.Minute), database("live", "i-live", 0))
	ask := func(name string) remove.Verification {
		return v.Verify(context.Background(), remove.VerifyRequest{Object: objs[name], Finalizer: dbFin})
	}
	if got := ask("orders"); !got.Gone() || got.Rule != "dbs" || got.ResourceVersion != "7" || !strings.Contains(got.Evidence, "/v1/instances/i-gone: 404 Not Found") {
		t.Errorf("orders: %+v", got)
	}
	if got := ask("users"); got.Gone() || got.Verdict != finalizev1alpha1.VerdictPresent {
		t.Errorf("users: %+v", got)
	}
	if got := ask("young"); got.Gone() || !got.TooYoung || got.Evidence != "terminating for 60s, the rule waits 10m for its controller" {
		t.Errorf("young: %+v", got)
	}
	if st := v.RuleStatuses(); len(st) != 1 || st[0].Broken || st[0].Distrust != "" || len(st[0].Controls) != 1 || st[0].Controls[0].Verdict != finalizev1alpha1.VerdictPresent {
		t.Errorf("rule statuses %+v", st)
	}
	other := objs["orders"]
	other.Finalizers = nil
	if got := v.Verify(context.Background(), remove.VerifyRequest{Object: other, Finalizer: finalizev1alpha1.Finalizer{Name: "other.io/x"}}); got.Rule != "" {
		t.Errorf("a finalizer no rule matches: %+v", got)
	}
}

// TestABrokenProviderRemovesNothing: a provider that answers 404 for everything calls the
// live control gone: its rule is broken and no Gone of it is trusted.
func TestABrokenProviderRemovesNothing(t *testing.T) {
	doc := dbAPI(t, func(string) bool { return true })
	v, objs := verifier(t, doc, database("orders", "i-gone", time.Hour), database("live", "i-live", 0))
	got := v.Verify(context.Background(), remove.VerifyRequest{Object: objs["orders"], Finalizer: dbFin})
	if got.Gone() || got.Verdict != finalizev1alpha1.VerdictGone || !strings.Contains(got.Distrust, "the provider is broken: it called databases.db.example.com/live -n prod gone") {
		t.Errorf("orders: %+v", got)
	}
	if st := v.RuleStatuses(); len(st) != 1 || !st[0].Broken {
		t.Errorf("statuses %+v", st)
	}
}

func TestWithoutALiveControlTheRuleWaits(t *testing.T) {
	doc := dbAPI(t, func(string) bool { return true })
	v, objs := verifier(t, doc, database("orders", "i-gone", time.Hour))
	got := v.Verify(context.Background(), remove.VerifyRequest{Object: objs["orders"], Finalizer: dbFin})
	if got.Gone() || !strings.Contains(got.Distrust, "no live object carries a finalizer this rule matches") || !strings.Contains(got.Distrust, "controls.requireLive: false") {
		t.Errorf("orders: %+v", got)
	}
	v, objs = verifier(t, strings.Replace(doc, "controls: {count: 2}", "controls: {count: 2, requireLive: false}", 1), database("orders", "i-gone", time.Hour))
	if got := v.Verify(context.Background(), remove.VerifyRequest{Object: objs["orders"], Finalizer: dbFin}); !got.Gone() {
		t.Errorf("requireLive false: %+v", got)
	}
}

func TestTheObjectVerifiedIsTheObjectAskedAbout(t *testing.T) {
	doc := dbAPI(t, func(id string) bool { return id == "i-gone" })
	v, objs := verifier(t, doc, database("orders", "i-gone", time.Hour), database("live", "i-live", 0))
	o := objs["orders"]
	o.Meta.UID = "uid-of-the-original"
	if got := v.Verify(context.Background(), remove.VerifyRequest{Object: o, Finalizer: dbFin}); got.Gone() || !strings.Contains(got.Evidence, "was replaced by a namesake") {
		t.Errorf("a namesake: %+v", got)
	}
	noID := database("blank", "", time.Hour)
	v, objs = verifier(t, doc, noID, database("live", "i-live", 0))
	if got := v.Verify(context.Background(), remove.VerifyRequest{Object: objs["blank"], Finalizer: dbFin}); got.Gone() || !strings.Contains(got.Evidence, "resolves to an empty value") {
		t.Errorf("an empty id: %+v", got)
	}
}
