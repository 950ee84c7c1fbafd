package policy

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

var (
	now       = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	databases = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "db.example.upbound.io", Version: "v1", Resource: "databases"}, Kind: "Database", Namespaced: true}
	dbFin     = finalizev1alpha1.Finalizer{Name: "db.example.upbound.io/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers}
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
	return codeAPI(t, func(id string) int {
		if gone(id) {
			return http.StatusNotFound
		}
		return http.StatusOK
	})
}

// codeAPI is an HTTPS server that answers each instance with the status code code says,
// and a policy whose rule dbs asks it, with two controls.
func codeAPI(t *testing.T, code func(id string) int) string {
	t.Helper()
	return apiPolicy(t, code, "  controls: {count: 2}\n")
}

// apiPolicy is an HTTPS server that answers each instance with the status code code
// says, and a policy whose rule dbs asks it; tail ends the rule.
func apiPolicy(t *testing.T, code func(id string) int, tail string) string {
	t.Helper()
	// It answers like a cloud API: a JSON body, an error's included.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		c := code(strings.TrimPrefix(r.URL.Path, "/v1/instances/"))
		w.WriteHeader(c)
		_, _ = w.Write([]byte(`{"status":` + strconv.Itoa(c) + `}`))
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	_ = os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	return header + `rules:
- name: dbs
  finalizers: [db.example.upbound.io/finalizer]
  resources: [databases.db.example.upbound.io]
  minAge: 10m
  verify:
    http:
      url: "` + srv.URL + `/v1/instances/{.status.instanceID}"
      tls: {caFile: "` + ca + `"}
` + tail
}

func TestVerification(t *testing.T) {
	doc := dbAPI(t, func(id string) bool { return id == "i-gone" })
	v, objs := verifier(t, doc,
		database("orders", "i-gone", time.Hour), database("users", "i-here", time.Hour),
		database("young", "i-gone", time.Minute), database("live", "i-live", 0))
	ask := func(name string) plan.Verification {
		return v.Verify(context.Background(), plan.VerifyRequest{Object: objs[name], Finalizer: dbFin})
	}
	if got := ask("orders"); !got.Gone() || got.Rule != "dbs" || got.ResourceVersion != "7" || !strings.Contains(got.Evidence, "/v1/instances/i-gone: 404 Not Found") {
		t.Errorf("orders: %+v", got)
	}
	if got := ask("users"); got.Gone() || got.Verdict != finalizev1alpha1.VerdictPresent {
		t.Errorf("users: %+v", got)
	}
	if got := ask("young"); got.Gone() || got.Status != plan.TooYoung || got.Evidence != "terminating for 60s, the rule waits 10m for its controller" {
		t.Errorf("young: %+v", got)
	}
	if st := v.RuleStatuses(); len(st) != 1 || st[0].Broken || st[0].Distrust != "" || len(st[0].Controls) != 1 || st[0].Controls[0].Verdict != finalizev1alpha1.VerdictPresent {
		t.Errorf("rule statuses %+v", st)
	}
	other := objs["orders"]
	other.Finalizers = nil
	if got := v.Verify(context.Background(), plan.VerifyRequest{Object: other, Finalizer: finalizev1alpha1.Finalizer{Name: "other.io/x"}}); got.Rule != "" {
		t.Errorf("a finalizer no rule matches: %+v", got)
	}
}

// TestABrokenProviderRemovesNothing: a provider that answers 404 for everything calls the
// live control gone: its rule is broken and no Gone of it is trusted.
func TestABrokenProviderRemovesNothing(t *testing.T) {
	doc := dbAPI(t, func(string) bool { return true })
	v, objs := verifier(t, doc, database("orders", "i-gone", time.Hour), database("live", "i-live", 0))
	got := v.Verify(context.Background(), plan.VerifyRequest{Object: objs["orders"], Finalizer: dbFin})
	if got.Gone() || got.Verdict != finalizev1alpha1.VerdictGone || !strings.Contains(distrust(got), "the provider is broken: it called databases.db.example.upbound.io/live -n prod gone") {
		t.Errorf("orders: %+v", got)
	}
	if st := v.RuleStatuses(); len(st) != 1 || !st[0].Broken {
		t.Errorf("statuses %+v", st)
	}
}

// TestAControlIsAnObjectNotAFinalizer: the first live object carries two finalizers the
// rule matches; it is one of the rule's two controls, asked once, so the second is the
// other live object, which the broken provider calls gone.
func TestAControlIsAnObjectNotAFinalizer(t *testing.T) {
	doc := strings.Replace(dbAPI(t, func(id string) bool { return id != "i-live" }),
		"finalizers: [db.example.upbound.io/finalizer]", "finalizers: [db.example.upbound.io/finalizer, db.example.upbound.io/other]", 1)
	twice := database("a-live", "i-live", 0)
	twice.SetFinalizers([]string{dbFin.Name, "db.example.upbound.io/other"})
	v, objs := verifier(t, doc, twice, database("b-live", "i-called-gone", 0), database("orders", "i-gone", time.Hour))
	got := v.Verify(context.Background(), plan.VerifyRequest{Object: objs["orders"], Finalizer: dbFin})
	if got.Gone() || !strings.Contains(distrust(got), "the provider is broken: it called databases.db.example.upbound.io/b-live -n prod gone") {
		t.Errorf("orders: %+v", got)
	}
	st := v.RuleStatuses()
	if len(st) != 1 || !st[0].Broken || len(st[0].Controls) != 2 || st[0].Controls[0].Target.Name != "a-live" || st[0].Controls[0].Finalizer != dbFin.Name ||
		st[0].Controls[1].Target.Name != "b-live" {
		t.Errorf("statuses %+v", st)
	}
}

// TestEveryHolderOfASharedFinalizerCounts: an ingress with a load balancer of its own
// that also belongs to a group is the rule's control under its own finalizer, and a live
// holder of the group's.
func TestEveryHolderOfASharedFinalizerCounts(t *testing.T) {
	p, _ := compile(t, header+`rules:
- name: lb
  preset: aws-load-balancer
  resources: [ingresses.networking.k8s.io]
  verify: {exec: {command: [/bin/check, "{identity.stack}"]}}
`)
	ingresses := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}, Kind: "Ingress", Namespaced: true}
	c := newControls(p)
	c.Observe(ingresses, &metav1.ObjectMeta{Namespace: "web", Name: "front", Finalizers: []string{"ingress.k8s.aws/resources", "group.ingress.k8s.aws/shop"}}, nil)
	if n, names := c.liveHolders("group.ingress.k8s.aws/shop"); n != 1 || len(names) != 1 {
		t.Errorf("live holders of the group's finalizer: %d %v, want the ingress", n, names)
	}
	if got := c.For(p.Rules[0], ingresses.GroupResource()); len(got) != 1 || got[0].finalizer != "ingress.k8s.aws/resources" {
		t.Errorf("controls %+v, want the ingress once, under its own load balancer's finalizer", got)
	}
}

func TestWithoutALiveControlTheRuleWaits(t *testing.T) {
	doc := dbAPI(t, func(string) bool { return true })
	v, objs := verifier(t, doc, database("orders", "i-gone", time.Hour))
	got := v.Verify(context.Background(), plan.VerifyRequest{Object: objs["orders"], Finalizer: dbFin})
	if got.Gone() || !strings.Contains(distrust(got), "no live object carries a finalizer this rule matches") || !strings.Contains(distrust(got), "controls.requireLive: false") {
		t.Errorf("orders: %+v", got)
	}
	v, objs = verifier(t, strings.Replace(doc, "controls: {count: 2}", "controls: {count: 2, requireLive: false}", 1), database("orders", "i-gone", time.Hour))
	if got := v.Verify(context.Background(), plan.VerifyRequest{Object: objs["orders"], Finalizer: dbFin}); !got.Gone() {
		t.Errorf("requireLive false: %+v", got)
	}
}

func TestTheObjectVerifiedIsTheObjectAskedAbout(t *testing.T) {
	doc := dbAPI(t, func(id string) bool { return id == "i-gone" })
	v, objs := verifier(t, doc, database("orders", "i-gone", time.Hour), database("live", "i-live", 0))
	o := objs["orders"]
	o.Meta.UID = "uid-of-the-original"
	if got := v.Verify(context.Background(), plan.VerifyRequest{Object: o, Finalizer: dbFin}); got.Gone() || !strings.Contains(got.Evidence, "was replaced by a namesake") {
		t.Errorf("a namesake: %+v", got)
	}
	noID := database("blank", "", time.Hour)
	v, objs = verifier(t, doc, noID, database("live", "i-live", 0))
	if got := v.Verify(context.Background(), plan.VerifyRequest{Object: objs["blank"], Finalizer: dbFin}); got.Gone() || !strings.Contains(got.Evidence, "resolves to an empty value") {
		t.Errorf("an empty id: %+v", got)
	}
}

const crossplaneFin = "finalizer.managedresource.crossplane.io"

var caches = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "db.example.upbound.io", Version: "v1", Resource: "caches"}, Kind: "Cache", Namespaced: true}

// operator is the field manager of the Crossplane provider in these tests, an upjet
// provider's binary as its client names itself: it wrote the finalizer of every managed
// resource.
const operator = "provider"

// managed is a Crossplane managed resource of r: its finalizer written by operator, its
// external name by manager (none when empty), deleted unless live, with spec.
func managed(r kube.Resource, name, externalName, manager string, live bool, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(r.GroupVersion().WithKind(r.Kind))
	u.SetNamespace("prod")
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetResourceVersion("7")
	u.SetFinalizers([]string{crossplaneFin})
	u.SetAnnotations(map[string]string{"crossplane.io/external-name": externalName})
	const finalizerBy = `"f:finalizers":{".":{},"v:\"` + crossplaneFin + `\"":{}}`
	const annotationBy = `"f:annotations":{".":{},"f:crossplane.io/external-name":{}}`
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{` + fields + `}}`)}
	}
	switch manager {
	case "":
		u.SetManagedFields([]metav1.ManagedFieldsEntry{entry(operator, finalizerBy)})
	case operator:
		u.SetManagedFields([]metav1.ManagedFieldsEntry{entry(operator, finalizerBy+","+annotationBy)})
	default:
		u.SetManagedFields([]metav1.ManagedFieldsEntry{entry(operator, finalizerBy), entry(manager, annotationBy)})
	}
	if !live {
		ts := metav1.NewTime(now.Add(-time.Hour))
		u.SetDeletionTimestamp(&ts)
	}
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

// paused sets Crossplane's paused annotation on o.
func paused(o *unstructured.Unstructured) *unstructured.Unstructured {
	a := o.GetAnnotations()
	a["crossplane.io/paused"] = "true"
	o.SetAnnotations(a)
	return o
}

// presetAPI is a policy with a crossplane-managed rule over databases and caches, asking
// an HTTPS server that says names are gone when gone says so.
func presetAPI(t *testing.T, gone func(name string) bool, extra string) string {
	t.Helper()
	return presetOf(dbAPI(t, gone), extra)
}

// presetOf turns a policy of dbAPI or codeAPI into one with a crossplane-managed rule
// over databases and caches.
func presetOf(doc, extra string) string {
	return strings.Replace(strings.Replace(doc, `- name: dbs
  finalizers: [db.example.upbound.io/finalizer]
  resources: [databases.db.example.upbound.io]`, `- name: dbs
  preset: crossplane-managed
  resources: [databases.db.example.upbound.io, caches.db.example.upbound.io]`+extra, 1), "{.status.instanceID}", "{identity.externalName}", 1)
}

// verifier sees objs (databases and caches) as a scan would, controls included, and
// can read them.
func verifier(t *testing.T, doc string, objs ...*unstructured.Unstructured) (*Verifier, map[string]*kube.Object) {
	t.Helper()
	p, _ := compile(t, doc)
	var ros []runtime.Object
	for _, o := range objs {
		ros = append(ros, o)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{databases.GroupVersionResource: "DatabaseList", caches.GroupVersionResource: "CacheList"}, ros...)
	v := NewVerifier(p, dyn, provider.Options{})
	v.Clock = testingclock.NewFakePassiveClock(now)
	stuck := map[string]*kube.Object{}
	for _, o := range objs {
		r := databases
		if o.GetKind() == "Cache" {
			r = caches
		}
		meta := &metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID(), Finalizers: o.GetFinalizers(),
			DeletionTimestamp: o.GetDeletionTimestamp(), Labels: o.GetLabels(), Annotations: o.GetAnnotations()}
		v.Controls.Observe(r, meta, nil)
		stuck[o.GetName()] = kube.NewObject(r, meta, nil)
	}
	return v, stuck
}

func verifyPreset(v *Verifier, o *kube.Object) plan.Verification {
	return v.Verify(context.Background(), plan.VerifyRequest{Object: o, Finalizer: finalizev1alpha1.Finalizer{Name: crossplaneFin, Field: finalizev1alpha1.FieldMetadataFinalizers}})
}

// TestAControlTheObjectDecidesProvesNothing: retained, held and shared objects are not
// controls; the next live object is drawn in their place, or the rule is not trusted.
func TestAControlTheObjectDecidesProvesNothing(t *testing.T) {
	everything := func(string) bool { return true }
	orphan := map[string]any{"deletionPolicy": "Orphan"}
	tests := []struct {
		name     string
		controls []*unstructured.Unstructured
		extra    string
		distrust string
		broken   bool
	}{
		{name: "retained by its spec", controls: []*unstructured.Unstructured{managed(databases, "a-orphan", "live-1", operator, true, orphan)},
			distrust: "proves nothing about the provider (databases.db.example.upbound.io/a-orphan -n prod: retained by design: spec.deletionPolicy: Orphan)"},
		{name: "held", controls: []*unstructured.Unstructured{paused(managed(databases, "a-paused", "live-1", operator, true, nil))},
			distrust: "no live object carries a finalizer this rule matches among databases.db.example.upbound.io (the holders of a shared finalizer and objects an annotation holds or retains do not count"},
		{name: "its external name not the operator's", controls: []*unstructured.Unstructured{managed(databases, "a-annotated", "live-1", "kubectl-annotate", true, nil)},
			distrust: "annotation crossplane.io/external-name was last written by kubectl-annotate"},
		{name: "a retained one is replaced by the next", controls: []*unstructured.Unstructured{
			managed(databases, "a-orphan", "live-1", operator, true, orphan), managed(databases, "b-live", "live-2", operator, true, nil)},
			extra: "\n  controls: {count: 1}", distrust: "the provider is broken: it called databases.db.example.upbound.io/b-live -n prod gone", broken: true},
		{name: "requireLive false acts unchecked", controls: []*unstructured.Unstructured{managed(databases, "a-orphan", "live-1", operator, true, orphan)},
			extra: "\n  controls: {count: 2, requireLive: false}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := presetAPI(t, everything, "")
			if tt.extra != "" {
				doc = strings.Replace(presetAPI(t, everything, tt.extra), "  controls: {count: 2}\n", "", 1)
			}
			v, objs := verifier(t, doc, append(tt.controls, managed(databases, "stuck", "deleted-1", operator, false, nil))...)
			got := verifyPreset(v, objs["stuck"])
			if got.Verdict != finalizev1alpha1.VerdictGone || !strings.Contains(distrust(got), tt.distrust) || (tt.distrust == "") != got.Gone() {
				t.Errorf("stuck: %+v; want distrust %q", got, tt.distrust)
			}
			st := v.RuleStatuses()
			if len(st) != 1 || st[0].Broken != tt.broken {
				t.Fatalf("statuses %+v", st)
			}
			for _, c := range st[0].Controls {
				if c.Target.Name == "a-orphan" || c.Target.Name == "a-annotated" {
					t.Errorf("a control the object decides was counted: %+v", c)
				}
			}
		})
	}
}

// TestControlsArePerType: a Gone of one type is trusted only on controls of that type,
// and a provider broken for any type is trusted for none.
func TestControlsArePerType(t *testing.T) {
	gone := func(name string) bool { return strings.HasPrefix(name, "deleted") }
	v, objs := verifier(t, presetAPI(t, gone, ""),
		managed(databases, "db-control", "live-db", operator, true, nil),
		managed(databases, "db-stuck", "deleted-db", operator, false, nil),
		managed(caches, "cache-stuck", "deleted-cache", operator, false, nil))
	if got := verifyPreset(v, objs["db-stuck"]); !got.Gone() {
		t.Errorf("db-stuck: %+v", got)
	}
	if got := verifyPreset(v, objs["cache-stuck"]); got.Gone() || !strings.Contains(distrust(got), "no live object carries a finalizer this rule matches among caches.db.example.upbound.io") {
		t.Errorf("cache-stuck: %+v", got)
	}

	// A live cache the provider calls gone: the rule is broken, for databases too.
	v, objs = verifier(t, presetAPI(t, gone, ""),
		managed(databases, "db-control", "live-db", operator, true, nil),
		managed(caches, "cache-control", "deleted-but-live", operator, true, nil),
		managed(databases, "db-stuck", "deleted-db", operator, false, nil))
	if got := verifyPreset(v, objs["db-stuck"]); got.Gone() || !strings.Contains(distrust(got), "it called caches.db.example.upbound.io/cache-control -n prod gone") {
		t.Errorf("db-stuck with a broken cache control: %+v", got)
	}
	if st := v.RuleStatuses(); len(st) != 1 || !st[0].Broken {
		t.Errorf("statuses %+v", st)
	}
}

// TestTheIdentityIsTheOperators: an external name a generic client wrote, or that no
// managedFields entry accounts for, is Unknown and not asked about, unless the rule
// trusts any writer or does not use it.
func TestTheIdentityIsTheOperators(t *testing.T) {
	var asked []string
	gone := func(name string) bool { asked = append(asked, name); return strings.HasPrefix(name, "deleted") }
	tests := []struct {
		name, manager, extra string
		url                  string
		verdict              finalizev1alpha1.Verdict
		says                 string
	}{
		{name: "the operator", manager: operator, verdict: finalizev1alpha1.VerdictGone, says: "404"},
		{name: "kubectl annotate", manager: "kubectl-annotate", verdict: finalizev1alpha1.VerdictUnknown,
			says: "annotation crossplane.io/external-name was last written by kubectl-annotate, not by the operator"},
		{name: "helm", manager: "helm", verdict: finalizev1alpha1.VerdictUnknown, says: "was last written by helm"},
		// Clients no list of generic clients names: none of them wrote the finalizer.
		{name: "curl through kubectl proxy", manager: "curl", verdict: finalizev1alpha1.VerdictUnknown,
			says: "annotation crossplane.io/external-name was last written by curl, not by the operator, whose field managers are provider, crossplane-*-provider or crossplane-provider-* (as preset crossplane-managed names them; identity externalName)"},
		{name: "the Python client", manager: "OpenAPI-Generator", verdict: finalizev1alpha1.VerdictUnknown, says: "was last written by OpenAPI-Generator, not by the operator"},
		{name: "kubectl --field-manager", manager: "crossplane-helper", verdict: finalizev1alpha1.VerdictUnknown, says: "was last written by crossplane-helper, not by the operator"},
		{name: "nobody known", manager: "", verdict: finalizev1alpha1.VerdictUnknown, says: "no managedFields entry says who wrote annotation crossplane.io/external-name"},
		{name: "any writer trusted", manager: "kubectl-annotate", extra: "\n  trustIdentityFromAnyWriter: true", verdict: finalizev1alpha1.VerdictGone, says: "404"},
		// The rule names the operator's field managers in place of the preset's: its
		// provider writes as provider-aws, and the preset's names are not the operator's
		// any more.
		{name: "the rule's operator", manager: "provider-aws", extra: "\n  operatorManagers: [provider-aws, provider]", verdict: finalizev1alpha1.VerdictGone, says: "404"},
		{name: "not the rule's operator", manager: operator, extra: "\n  operatorManagers: [provider-aws]", verdict: finalizev1alpha1.VerdictUnknown,
			says: "was last written by provider, not by the operator, whose field managers are provider-aws (as rule dbs's operatorManagers names them; identity externalName)"},
		// A request that names the resource by none of its identity values (the object's
		// name) is a guess, however often it coincides (#38).
		{name: "not used by the request", manager: "kubectl-annotate", url: "{.metadata.name}", verdict: finalizev1alpha1.VerdictUnknown,
			says: "the rule asks about objects of upjet providers (API group db.example.upbound.io) by none of the values their operator names the resource by"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked = nil
			doc := presetAPI(t, gone, tt.extra)
			if tt.url != "" {
				doc = strings.Replace(doc, "{identity.externalName}", tt.url, 1)
			}
			name := "deleted-stuck"
			v, objs := verifier(t, doc, managed(databases, "live-control", "live-1", operator, true, nil), managed(databases, name, name, tt.manager, false, nil))
			got := verifyPreset(v, objs[name])
			if got.Verdict != tt.verdict || !strings.Contains(got.Evidence, tt.says) {
				t.Errorf("got %s %q; want %s saying %q", got.Verdict, got.Evidence, tt.verdict, tt.says)
			}
			if tt.verdict == finalizev1alpha1.VerdictUnknown && slices.Contains(asked, name) {
				t.Errorf("the provider was asked about an identity the operator did not write: %v", asked)
			}
		})
	}
}

// TestARuleThatCannotVerifySaysWhy: a provider that cannot be built, or whose every
// control answered Unknown, makes the rule's status say why it cannot verify, whatever
// the stuck objects' answers were.
func TestARuleThatCannotVerifySaysWhy(t *testing.T) {
	doc := apiPolicy(t, func(id string) int {
		if id == "i-gone" {
			return http.StatusNotFound
		}
		return http.StatusUnauthorized
	}, "")
	for _, stuck := range []string{"i-gone", "i-expired"} {
		v, objs := verifier(t, doc, database("stuck", stuck, time.Hour), database("live", "i-live", 0))
		if got := v.Verify(context.Background(), plan.VerifyRequest{Object: objs["stuck"], Finalizer: dbFin}); got.Gone() {
			t.Errorf("%s: %+v", stuck, got)
		}
		st := v.RuleStatuses()
		if len(st) != 1 || !strings.Contains(st[0].CannotVerify, "every live object its provider was asked about answered Unknown") ||
			!strings.Contains(st[0].CannotVerify, "401") || st[0].Broken {
			t.Errorf("%s: statuses %+v", stuck, st)
		}
	}

	unset := strings.Replace(doc, `      tls:`, `      headers: [{name: Authorization, valueFrom: {env: KUBECTL_FINALIZE_UNIT_TOKEN_NEVER_SET}}]
      tls:`, 1)
	v, objs := verifier(t, unset, database("stuck", "i-gone", time.Hour), database("live", "i-live", 0))
	if got := v.Verify(context.Background(), plan.VerifyRequest{Object: objs["stuck"], Finalizer: dbFin}); got.Gone() || !strings.Contains(got.Evidence, "KUBECTL_FINALIZE_UNIT_TOKEN_NEVER_SET") {
		t.Errorf("unbuildable: %+v", got)
	}
	if st := v.RuleStatuses(); len(st) != 1 || !strings.Contains(st[0].CannotVerify, "header Authorization: environment variable KUBECTL_FINALIZE_UNIT_TOKEN_NEVER_SET") {
		t.Errorf("unbuildable: statuses %+v", st)
	}
}

func TestTrustIdentityFromAnyWriterNeedsAPreset(t *testing.T) {
	doc := dbAPI(t, func(string) bool { return false })
	spec, errs := Decode([]byte(strings.Replace(doc, "  minAge: 10m\n", "  minAge: 10m\n  trustIdentityFromAnyWriter: true\n", 1)))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, errs, _ := Compile(spec); len(errs) != 1 || !strings.Contains(errs[0].Error(), "rules[0].trustIdentityFromAnyWriter") || !strings.Contains(errs[0].Error(), "names none") {
		t.Errorf("without a preset: %v", errs)
	}
	_, warnings := compile(t, presetAPI(t, func(string) bool { return false }, "\n  trustIdentityFromAnyWriter: true"))
	if len(warnings) != 1 || !strings.Contains(warnings[0], "rule dbs sets trustIdentityFromAnyWriter: its identity values (annotation crossplane.io/external-name, status.atProvider.arn, status.atProvider.id, "+
		"status.atProvider.manifest.apiVersion, status.atProvider.manifest.kind, status.atProvider.manifest.metadata.namespace, status.atProvider.manifest.metadata.name, "+
		"status.atProvider.manifest.metadata.uid, providerConfigRef of the ProviderConfigUsage)") {
		t.Errorf("warnings %q", warnings)
	}
}

// TestARuleNoneOfWhoseControlsCouldBeCheckedCannotVerify: under requireLive, a Gone held
// back only because no control of its type could be asked (none is live, or each live one
// was decided by the object alone) makes the rule unable to verify, naming the type and
// why: the pass fails instead of staying green while it removes nothing. An answer that
// was not Gone held nothing back, and requireLive: false acts unchecked.
func TestARuleNoneOfWhoseControlsCouldBeCheckedCannotVerify(t *testing.T) {
	gone := func(name string) bool { return strings.HasPrefix(name, "deleted") }
	orphan := map[string]any{"deletionPolicy": "Orphan"}
	tests := []struct {
		name        string
		extra       string
		objs        []*unstructured.Unstructured
		stuck       string
		gone        bool
		cannot, not []string
	}{
		{name: "no live object", objs: []*unstructured.Unstructured{managed(databases, "stuck", "deleted-1", operator, false, nil)}, stuck: "stuck",
			cannot: []string{"no live control of databases.db.example.upbound.io could be asked, so the Gone of databases.db.example.upbound.io/stuck -n prod was held back: " +
				"no live object carries a finalizer this rule matches among databases.db.example.upbound.io", "set controls.requireLive: false in the rule"}},
		{name: "every live one retained", objs: []*unstructured.Unstructured{managed(databases, "a-orphan", "live-1", operator, true, orphan), managed(databases, "stuck", "deleted-1", operator, false, nil)},
			stuck: "stuck", cannot: []string{"no live control of databases.db.example.upbound.io could be asked",
				"what an object decides alone proves nothing about the provider (databases.db.example.upbound.io/a-orphan -n prod: retained by design: spec.deletionPolicy: Orphan)"}},
		{name: "every live one's identity not the operator's", objs: []*unstructured.Unstructured{managed(databases, "a-curled", "live-1", "curl", true, nil), managed(databases, "stuck", "deleted-1", operator, false, nil)},
			stuck: "stuck", cannot: []string{"no live control of databases.db.example.upbound.io could be asked", "was last written by curl, not by the operator"}},
		{name: "per type", objs: []*unstructured.Unstructured{managed(databases, "db-control", "live-db", operator, true, nil),
			managed(databases, "db-stuck", "deleted-db", operator, false, nil), managed(caches, "stuck", "deleted-cache", operator, false, nil)},
			stuck: "stuck", cannot: []string{"no live control of caches.db.example.upbound.io could be asked, so the Gone of caches.db.example.upbound.io/stuck -n prod was held back"},
			not: []string{"databases"}},
		{name: "a Present held nothing back", objs: []*unstructured.Unstructured{managed(databases, "stuck", "here-1", operator, false, nil)}, stuck: "stuck"},
		{name: "requireLive false acts unchecked", extra: "\n  controls: {count: 2, requireLive: false}",
			objs: []*unstructured.Unstructured{managed(databases, "stuck", "deleted-1", operator, false, nil)}, stuck: "stuck", gone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := presetAPI(t, gone, "")
			if tt.extra != "" {
				doc = strings.Replace(presetAPI(t, gone, tt.extra), "  controls: {count: 2}\n", "", 1)
			}
			v, objs := verifier(t, doc, tt.objs...)
			if got := verifyPreset(v, objs[tt.stuck]); got.Gone() != tt.gone || got.Unread() {
				t.Errorf("stuck: %+v", got)
			}
			if db := objs["db-stuck"]; db != nil {
				if got := verifyPreset(v, db); !got.Gone() {
					t.Errorf("db-stuck: its own type's control answered Present: %+v", got)
				}
			}
			st := v.RuleStatuses()
			if len(st) != 1 || st[0].Broken {
				t.Fatalf("statuses %+v", st)
			}
			if len(tt.cannot) == 0 && st[0].CannotVerify != "" {
				t.Errorf("cannot verify %q; want none", st[0].CannotVerify)
			}
			for _, says := range tt.cannot {
				if !strings.Contains(st[0].CannotVerify, says) {
					t.Errorf("cannot verify %q; want it to say %q", st[0].CannotVerify, says)
				}
			}
			for _, says := range tt.not {
				if strings.Contains(st[0].CannotVerify, says) {
					t.Errorf("cannot verify %q; want it not to say %q", st[0].CannotVerify, says)
				}
			}
		})
	}
}

// TestCannotVerifyIsPerType: a rule whose controls of one type answer Present while every
// control of another type answers Unknown (a 401 from that service's endpoint) cannot
// verify that type: the rule says so, naming it, and the pass fails. A Gone of the type
// whose controls answered Present is still trusted.
func TestCannotVerifyIsPerType(t *testing.T) {
	code := func(unauthorized string) func(string) int {
		return func(id string) int {
			switch {
			case strings.HasPrefix(id, unauthorized):
				return http.StatusUnauthorized
			case strings.HasPrefix(id, "deleted"):
				return http.StatusNotFound
			}
			return http.StatusOK
		}
	}
	for _, tt := range []struct {
		unauthorized string
		cannot       string
	}{
		{unauthorized: "cache-", cannot: "every live object its provider was asked about answered Unknown among caches.db.example.upbound.io (caches.db.example.upbound.io/cache-control -n prod: Unknown: "},
		{unauthorized: "nothing"},
	} {
		v, objs := verifier(t, presetOf(codeAPI(t, code(tt.unauthorized)), ""),
			managed(databases, "db-control", "live-db", operator, true, nil),
			managed(caches, "cache-control", "cache-live", operator, true, nil),
			managed(databases, "db-stuck", "deleted-db", operator, false, nil))
		if got := verifyPreset(v, objs["db-stuck"]); !got.Gone() {
			t.Errorf("%s: db-stuck: %+v", tt.unauthorized, got)
		}
		st := v.RuleStatuses()
		if len(st) != 1 || st[0].Broken || !strings.Contains(st[0].CannotVerify, tt.cannot) || (tt.cannot == "") != (st[0].CannotVerify == "") {
			t.Errorf("%s: statuses %+v; want cannot verify saying %q", tt.unauthorized, st, tt.cannot)
			continue
		}
		if tt.cannot != "" && (!strings.Contains(st[0].CannotVerify, "401") || strings.Contains(st[0].CannotVerify, "databases")) {
			t.Errorf("cannot verify %q", st[0].CannotVerify)
		}
	}
}

// TestAnUnreadableNamespaceIsAReadError: a preset that reads the namespace (ack) and
// cannot (Forbidden) has not verified anything: the target's verification is a read
// error, whether its own namespace or a control's could not be read, never an Unknown
// the object decided.
func TestAnUnreadableNamespaceIsAReadError(t *testing.T) {
	const ackFin = "finalizers.rds.services.k8s.aws/DBInstance"
	doc := strings.Replace(strings.Replace(dbAPI(t, func(id string) bool { return strings.Contains(id, ":db:deleted") }),
		"  finalizers: [db.example.upbound.io/finalizer]\n", "  preset: ack\n", 1), "{.status.instanceID}", "{identity.arn}", 1)
	ackDB := func(ns, name, arn string, live bool) *unstructured.Unstructured {
		u := database(name, "", time.Hour)
		if live {
			u = database(name, "", 0)
		}
		u.SetNamespace(ns)
		u.SetFinalizers([]string{ackFin})
		_ = unstructured.SetNestedField(u.Object, arn, "status", "ackResourceMetadata", "arn")
		u.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: "controller", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{".":{},"v:\"` + ackFin + `\"":{}}}}`)},
			{Manager: "controller", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:ackResourceMetadata":{"f:arn":{}}}}`)}})
		return u
	}
	namespace := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
		u.SetName(name)
		return u
	}
	run := func(objs ...*unstructured.Unstructured) (*Verifier, map[string]*kube.Object) {
		p, _ := compile(t, doc)
		ros := []runtime.Object{namespace("prod"), namespace("locked")}
		for _, o := range objs {
			ros = append(ros, o)
		}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			databases.GroupVersionResource: "DatabaseList", {Version: "v1", Resource: "namespaces"}: "NamespaceList"}, ros...)
		dyn.PrependReactor("get", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if name := a.(k8stesting.GetAction).GetName(); name == "locked" {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, name, errors.New("RBAC: no get namespaces"))
			}
			return false, nil, nil
		})
		v := NewVerifier(p, dyn, provider.Options{})
		v.Clock = testingclock.NewFakePassiveClock(now)
		stuck := map[string]*kube.Object{}
		for _, o := range objs {
			meta := &metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID(), Finalizers: o.GetFinalizers(), DeletionTimestamp: o.GetDeletionTimestamp()}
			v.Controls.Observe(databases, meta, nil)
			stuck[o.GetName()] = kube.NewObject(databases, meta, nil)
		}
		return v, stuck
	}
	verify := func(v *Verifier, o *kube.Object) plan.Verification {
		return v.Verify(context.Background(), plan.VerifyRequest{Object: o, Finalizer: finalizev1alpha1.Finalizer{Name: ackFin, Field: finalizev1alpha1.FieldMetadataFinalizers}})
	}

	arnOf := func(id string) string { return "arn:aws:rds:eu-west-1:123456789012:db:" + id }
	v, objs := run(ackDB("prod", "control", arnOf("live-1"), true), ackDB("prod", "stuck", arnOf("deleted-1"), false))
	if got := verify(v, objs["stuck"]); !got.Gone() {
		t.Errorf("readable namespaces: %+v", got)
	}

	v, objs = run(ackDB("prod", "control", arnOf("live-1"), true), ackDB("locked", "stuck", arnOf("deleted-1"), false))
	got := verify(v, objs["stuck"])
	if got.Gone() || !strings.Contains(readError(got), "reading namespace locked for preset ack") || !strings.Contains(readError(got), "forbidden") {
		t.Errorf("the target's namespace unreadable: %+v", got)
	}

	v, objs = run(ackDB("locked", "control", arnOf("live-1"), true), ackDB("prod", "stuck", arnOf("deleted-1"), false))
	got = verify(v, objs["stuck"])
	if got.Gone() || !strings.Contains(readError(got), "what its live objects need to check its provider could not be read: databases.db.example.upbound.io/control -n locked") ||
		!strings.Contains(readError(got), "reading namespace locked for preset ack") {
		t.Errorf("a control's namespace unreadable: %+v", got)
	}
	if st := v.RuleStatuses(); len(st) != 1 || st[0].Broken || len(st[0].Controls) != 0 {
		t.Errorf("statuses %+v", st)
	}
}

// TestAProviderThatAnswersOnlyUnknownWithNoControlCannotVerify: no live object is left to
// check the provider with (its operator is uninstalled), and the provider answers Unknown
// about every stuck object (an expired token): nothing shows that it works, with or
// without requireLive, and the rule cannot verify. One answer that is not Unknown, or a
// control that answered, is enough to say nothing of the kind.
func TestAProviderThatAnswersOnlyUnknownWithNoControlCannotVerify(t *testing.T) {
	code := func(id string) int {
		switch {
		case strings.HasPrefix(id, "expired"):
			return http.StatusUnauthorized
		case strings.HasPrefix(id, "deleted"):
			return http.StatusNotFound
		}
		return http.StatusOK
	}
	for _, tt := range []struct {
		name, extra string
		objs        []*unstructured.Unstructured
		cannot      string
	}{
		{name: "requireLive", objs: []*unstructured.Unstructured{managed(databases, "a", "expired-1", operator, false, nil), managed(databases, "b", "expired-2", operator, false, nil)},
			cannot: "no live control of databases.db.example.upbound.io answered, and its provider answered Unknown about every stuck object of it (databases.db.example.upbound.io/a -n prod: "},
		{name: "requireLive false", extra: "\n  controls: {count: 2, requireLive: false}", objs: []*unstructured.Unstructured{managed(databases, "a", "expired-1", operator, false, nil)},
			cannot: "its provider answered Unknown about every stuck object of it"},
		{name: "one Present answer", objs: []*unstructured.Unstructured{managed(databases, "a", "expired-1", operator, false, nil), managed(databases, "b", "here-2", operator, false, nil)}},
		{name: "a control answered", objs: []*unstructured.Unstructured{managed(databases, "a", "expired-1", operator, false, nil), managed(databases, "live", "here-1", operator, true, nil)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := presetOf(codeAPI(t, code), "")
			if tt.extra != "" {
				doc = strings.Replace(presetOf(codeAPI(t, code), tt.extra), "  controls: {count: 2}\n", "", 1)
			}
			v, objs := verifier(t, doc, tt.objs...)
			for _, o := range tt.objs {
				if o.GetDeletionTimestamp() != nil {
					if got := verifyPreset(v, objs[o.GetName()]); got.Gone() {
						t.Errorf("%s: %+v", o.GetName(), got)
					}
				}
			}
			st := v.RuleStatuses()
			if tt.cannot == "" {
				for _, s := range st {
					if s.CannotVerify != "" {
						t.Errorf("cannot verify %q; want none", s.CannotVerify)
					}
				}
				return
			}
			if len(st) != 1 || !strings.Contains(st[0].CannotVerify, tt.cannot) {
				t.Errorf("statuses %+v; want cannot verify saying %q", st, tt.cannot)
			}
		})
	}
}

// distrust is why a verification's Gone is not trusted, "" when it is.
func distrust(v plan.Verification) string {
	if v.Distrusted() {
		return v.Detail
	}
	return ""
}

// readError is the read a verification needed and could not make, "" when none failed.
func readError(v plan.Verification) string {
	if v.Unread() {
		return v.Detail
	}
	return ""
}

// TestControlsThatCannotTellSaySo: a control whose identity is its own name cannot show
// that the rule asks by the identity the operator uses (a rule reading the name would
// pass it too): when every control asked is such, the rule's status says so; one
// control whose identity differs is enough to say nothing (#38).
func TestControlsThatCannotTellSaySo(t *testing.T) {
	gone := func(name string) bool { return strings.HasPrefix(name, "deleted") }
	for _, tc := range []struct {
		name    string
		control *unstructured.Unstructured
		warns   bool
	}{
		{"named as itself", managed(databases, "live-1", "live-1", operator, true, nil), true},
		{"named otherwise", managed(databases, "live-control", "live-1", operator, true, nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, objs := verifier(t, presetAPI(t, gone, ""), tc.control, managed(databases, "deleted-stuck", "deleted-stuck", operator, false, nil))
			if got := verifyPreset(v, objs["deleted-stuck"]); got.Verdict != finalizev1alpha1.VerdictGone {
				t.Fatalf("got %s %q", got.Verdict, got.Evidence)
			}
			var warnings []string
			for _, st := range v.RuleStatuses() {
				warnings = append(warnings, st.Warnings...)
			}
			said := slices.ContainsFunc(warnings, func(w string) bool {
				return strings.Contains(w, "its controls of databases.db.example.upbound.io cannot tell whether the identity it asks by is the one the operator uses")
			})
			if said != tc.warns {
				t.Errorf("warnings %q; want the controls' warning: %v", warnings, tc.warns)
			}
		})
	}
}
