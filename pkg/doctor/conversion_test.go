package doctor

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// What kube-apiserver v1.36 reports when the conversion webhook of databases.db.example.com
// (stored at v1, served at v1 and v2) has no service.
const convFailed = `conversion webhook for db.example.com/v1, Kind=Database failed: Post "https://db-webhook.ops.svc:443/convert?timeout=30s": service "db-webhook" not found`

// conversionCRDObject is databases.db.example.com: v1 stored, v2 served, a conversion
// webhook at service ops/db-webhook or at url, objects stored at stored.
func conversionCRDObject(url string, stored ...string) *unstructured.Unstructured {
	cc := map[string]any{"service": map[string]any{"namespace": "ops", "name": "db-webhook", "path": "/convert"}}
	if url != "" {
		cc = map[string]any{"url": url}
	}
	var storedVersions []any
	for _, v := range stored {
		storedVersions = append(storedVersions, v)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "databases.db.example.com"},
		"spec": map[string]any{"group": "db.example.com", "names": map[string]any{"kind": "Database", "plural": "databases"},
			"versions":   []any{map[string]any{"name": "v1", "served": true, "storage": true}, map[string]any{"name": "v2", "served": true, "storage": false}},
			"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{"clientConfig": cc}}},
		"status": map[string]any{"storedVersions": storedVersions},
	}}
}

// convDown makes lists of databases fail now as the API server fails them while the
// webhook is down.
func convDown() *failList {
	return &failList{resource: "databases", err: apierrors.NewInternalError(errors.New(convFailed))}
}

// withDatabases: discovery served databases.db.example.com at v2, its preferred version.
func withDatabases(res *scan.Result) *scan.Result {
	res.Resources = append(res.Resources, kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "db.example.com", Version: "v2", Resource: "databases"}, Kind: "Database", Namespaced: true})
	return res
}

// blockedNamespace is a namespace whose deletion the namespace controller reports as
// failed on msg.
func blockedNamespace(name, msg string) *kube.Object {
	ts := metav1.NewTime(now.Add(-10 * 60e9))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), DeletionTimestamp: &ts},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
		Status: corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
			{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionTrue, Reason: "ContentDeletionFailed", Message: "Failed to delete all resource types, 1 remaining: " + msg},
			{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse, Reason: "ContentRemoved", Message: "All content successfully removed"},
		}}}
	o := kube.NewObject(namespaces, &ns.ObjectMeta, ns)
	owner.NewResolver(owner.Builtin(), nil).Annotate([]*kube.Object{o})
	return o
}

func TestAFailingConversionWebhookIsTheRootOfEveryNamespaceItBlocks(t *testing.T) {
	a, b := blockedNamespace("team-a", convFailed), blockedNamespace("team-b", convFailed)
	res := result(a, b)
	res.Resources = []kube.Resource{{GroupVersionResource: databases.GroupVersion().WithResource("databases"), Kind: "Database", Namespaced: true}}
	res.Resources[0].Version = "v2"
	res.Incomplete = []finalizev1alpha1.IncompleteResource{{GroupVersion: "db.example.com/v2", Resource: "databases",
		Reason: finalizev1alpha1.ReasonConversionWebhookUnavailable, Message: "the conversion webhook of CRD databases.db.example.com (service ops/db-webhook) fails: ...; the API server said: " + convFailed}}
	rep := diagnose(t, res, conversionCRDObject("", "v1"), convDown())
	for _, o := range []*kube.Object{a, b} {
		wantCause(t, rep, o, finalizev1alpha1.ReasonConversionWebhookUnavailable,
			"the namespace controller cannot list databases.db.example.com in the namespace: the conversion webhook of CRD databases.db.example.com (service ops/db-webhook) fails: service ops/db-webhook does not exist",
			"restore the conversion webhook of CRD databases.db.example.com: service ops/db-webhook",
			`kubectl patch crd databases.db.example.com --type=json -p '[{"op":"test","path":"/spec/versions/1/name","value":"v2"},{"op":"replace","path":"/spec/versions/1/served","value":false}]'`,
			"kubectl get databases.v1.db.example.com -A",
			"lists of databases at v2 fail", "no namespace being deleted can finish while that list fails there",
			"the same list made now fails too (kubectl get databases.v2.db.example.com -n "+o.Meta.Name+" --chunk-size=0)")
		c := rep.Cause(o)
		if strings.Contains(c.Message, "no namespace can finish deleting") {
			t.Errorf("says every namespace is blocked, not the namespaces whose list fails: %s", c.Message)
		}
		if strings.Contains(c.NextStep, "xargs") {
			t.Errorf("a next step that lists every type fails on this one: %s", c.NextStep)
		}
		if len(c.Blockers) != 1 || c.Blockers[0].Target.Kind != "CustomResourceDefinition" || c.Blockers[0].Target.Name != "databases.db.example.com" {
			t.Errorf("blockers %+v, want the CRD", c.Blockers)
		}
	}
	// One root cause for both, and nothing else.
	wantRoot(t, rep, finalizev1alpha1.ReasonConversionWebhookUnavailable, finalizev1alpha1.Subject{Kind: "CustomResourceDefinition", Name: "databases.db.example.com"}, 2)
	if len(rep.Roots) != 1 {
		t.Errorf("roots %+v, want only the conversion webhook", rep.Roots)
	}
	// The scan's incomplete entry says the same.
	d := rep.Diagnosis(nil)
	if len(d.Incomplete) != 1 || !strings.Contains(d.Incomplete[0].Message, "service ops/db-webhook does not exist") || !strings.Contains(d.Incomplete[0].Message, "the API server said: "+convFailed) {
		t.Errorf("incomplete %+v", d.Incomplete)
	}
}

func TestAConversionWebhookNextStepDependsOnWhatIsStored(t *testing.T) {
	// Objects stored at two versions: no served flag can make them readable.
	ns := blockedNamespace("team-a", convFailed)
	rep := diagnose(t, withDatabases(result(ns)), conversionCRDObject("", "v1", "v2"), convDown())
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable, "Objects may be stored at v1 and v2 (status.storedVersions)", "bring it back")
	if strings.Contains(rep.Cause(ns).NextStep, "kubectl patch") {
		t.Errorf("with objects at two versions, no patch is safe: %s", rep.Cause(ns).NextStep)
	}

	// A service that exists without ready endpoints, looked up now.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "db-webhook"}}
	rep = diagnose(t, withDatabases(result(ns)), conversionCRDObject("", "v1"), svc, convDown())
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable, "service ops/db-webhook has no ready endpoints")

	// A URL webhook whose TLS fails: as the API server observed it.
	tls := `conversion webhook for db.example.com/v1, Kind=Database failed: Post "https://127.0.0.1:9443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`
	ns = blockedNamespace("team-c", tls)
	rep = diagnose(t, withDatabases(result(ns)), conversionCRDObject("https://127.0.0.1:9443/convert", "v1"), &failList{resource: "databases", err: errors.New(tls)})
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable,
		"the conversion webhook of CRD databases.db.example.com (https://127.0.0.1:9443/convert) fails: its TLS handshake fails: tls: failed to verify certificate: x509: certificate signed by unknown authority",
		"restore the conversion webhook of CRD databases.db.example.com at https://127.0.0.1:9443/convert")

	// The CRD cannot be read, but discovery names it: what the API server said is
	// still enough to describe it.
	ns = blockedNamespace("team-d", convFailed)
	rep = diagnose(t, withDatabases(result(ns)), convDown())
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable, "CRD databases.db.example.com", "service ops/db-webhook does not exist")
}

// TestTheCRDOfAFailingConversionIsResolvedNotGuessed: nothing the scan listed names the
// type (doctor TYPE/NAME of another type); its CRD is found by spec.group and
// spec.names.kind, whatever its plural, and when no CRD matches, the name is said
// unresolved, never made up from the kind.
func TestTheCRDOfAFailingConversionIsResolvedNotGuessed(t *testing.T) {
	crd := conversionCRDObject("", "v1")
	crd.SetName("dbs.db.example.com")
	_ = unstructured.SetNestedMap(crd.Object, map[string]any{"kind": "Database", "plural": "dbs"}, "spec", "names")
	ns := blockedNamespace("team-a", convFailed)
	rep := diagnose(t, result(ns), crd, &failList{resource: "dbs", err: apierrors.NewInternalError(errors.New(convFailed))})
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable, "the conversion webhook of CRD dbs.db.example.com (service ops/db-webhook) fails",
		"lists of dbs at v2 fail", "kubectl patch crd dbs.db.example.com", "kubectl get dbs.v2.db.example.com -n team-a --chunk-size=0")
	wantRoot(t, rep, finalizev1alpha1.ReasonConversionWebhookUnavailable, finalizev1alpha1.Subject{Kind: "CustomResourceDefinition", Name: "dbs.db.example.com"}, 1)

	rep = diagnose(t, result(ns))
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable,
		"the conversion webhook of CRD with kind Database in group db.example.com (service ops/db-webhook) (its name could not be resolved: no CRD has spec.group db.example.com and spec.names.kind Database) fails",
		"kubectl get crd -o custom-columns=NAME:.metadata.name,GROUP:.spec.group,KIND:.spec.names.kind")
	c := rep.Cause(ns)
	if strings.Contains(c.Message+c.NextStep, "databases.db.example.com") || strings.Contains(c.NextStep, "kubectl patch") {
		t.Errorf("a CRD name made up from the kind: %s / %s", c.Message, c.NextStep)
	}
}

// TestTheUnservePatchIsOfferedOnlyWhenItHelps: serving only the storage version helps
// only when the objects the API server failed to convert are stored at it and lists fail
// at another version.
func TestTheUnservePatchIsOfferedOnlyWhenItHelps(t *testing.T) {
	// The API server failed converting objects stored at v2, not the storage version v1:
	// status.storedVersions is wrong, and unserving v2 hides objects nobody can read.
	fromV2 := strings.Replace(convFailed, "db.example.com/v1,", "db.example.com/v2,", 1)
	ns := blockedNamespace("team-a", fromV2)
	rep := diagnose(t, withDatabases(result(ns)), conversionCRDObject("", "v1"), &failList{resource: "databases", err: errors.New(fromV2)})
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable, "failed to convert objects stored at db.example.com/v2, not at the storage version v1", "serving fewer versions cannot help")
	if c := rep.Cause(ns); strings.Contains(c.NextStep, "kubectl patch") {
		t.Errorf("an unserve patch for objects stored at another version: %s", c.NextStep)
	}

	// Lists fail at the storage version itself.
	ns = blockedNamespace("team-b", convFailed)
	res := result(ns)
	res.Resources = append(res.Resources, kube.Resource{GroupVersionResource: databases.GroupVersion().WithResource("databases"), Kind: "Database", Namespaced: true})
	rep = diagnose(t, res, conversionCRDObject("", "v1"), convDown())
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable, "Lists fail at the storage version v1 itself")
	if c := rep.Cause(ns); strings.Contains(c.NextStep, "kubectl patch") {
		t.Errorf("an unserve patch when lists fail at the storage version: %s", c.NextStep)
	}
}

// TestAStaleConversionReportIsNotBlamed: the namespace controller reported the webhook
// failing, and the webhook works again: the same list succeeds now. The condition is
// stale; the controller retries.
func TestAStaleConversionReportIsNotBlamed(t *testing.T) {
	ns := blockedNamespace("team-a", convFailed)
	ns.Namespace.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-3 * time.Minute))
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "db-webhook"}}
	res := withDatabases(result(ns))
	// The webhook works again, so the scan lists the object it could not convert: no
	// finalizer, the controller's next pass deletes it.
	res.Index.Content["team-a"] = &scan.NamespaceContent{Count: 1, Sample: []scan.Seen{{Ref: kube.Ref{Resource: databases, Namespace: "team-a", Name: "orders", UID: "uid-orders"}}}}
	rep := diagnose(t, res, conversionCRDObject("", "v1"), svc)
	wantCause(t, rep, ns, finalizev1alpha1.ReasonProgressing, "the namespace still holds 1 object without finalizers, which that pass deletes",
		"the namespace controller reported 3m ago (condition NamespaceDeletionContentFailure) that the conversion webhook of CRD databases.db.example.com failed, but the same list made now succeeds (kubectl get databases.v2.db.example.com -n team-a --chunk-size=0), so that report is stale",
		"tries a namespace again at most a minute after a failed pass ends")
	for _, r := range rep.Roots {
		if r.Reason == finalizev1alpha1.ReasonConversionWebhookUnavailable {
			t.Errorf("a stale report is a root cause: %+v", r)
		}
	}
	// A stale report beside another failure: the namespace's own cause, the stale
	// report as context.
	mixed := blockedNamespace("team-b", convFailed)
	mixed.Namespace.Status.Conditions[0].Message = "Failed to delete all resource types, 2 remaining: " + convFailed + ", Internal error occurred: etcd is slow"
	rep = diagnose(t, withDatabases(result(mixed)), conversionCRDObject("", "v1"), svc)
	wantCause(t, rep, mixed, finalizev1alpha1.ReasonNamespaceContentRemaining, "etcd is slow", "also: the namespace controller reported", "so that report is stale")

	// The same report while the list still fails: the webhook.
	rep = diagnose(t, withDatabases(result(ns)), conversionCRDObject("", "v1"), svc, convDown())
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable, "the same list made now fails too")
}

func TestAnotherContentFailureKeepsTheNamespacesOwnRoot(t *testing.T) {
	ns := blockedNamespace("team-a", convFailed)
	ns.Namespace.Status.Conditions[0].Message = "Failed to delete all resource types, 2 remaining: " + convFailed + ", Internal error occurred: etcd is slow"
	rep := diagnose(t, withDatabases(result(ns)), []runtime.Object{conversionCRDObject("", "v1"), convDown()}...)
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable, "etcd is slow")
	wantRoot(t, rep, finalizev1alpha1.ReasonConversionWebhookUnavailable, finalizev1alpha1.Subject{Kind: "CustomResourceDefinition", Name: "databases.db.example.com"}, 1)
	wantRoot(t, rep, finalizev1alpha1.ReasonNamespaceContentRemaining, finalizev1alpha1.Subject{Kind: "Namespace", Name: "team-a"}, 1)
}

func TestANamespaceNotReportedOnWhileAConversionWebhookFails(t *testing.T) {
	ts := metav1.NewTime(now.Add(-10 * 60e9))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "quiet", UID: "uid-quiet", DeletionTimestamp: &ts},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}}
	o := kube.NewObject(namespaces, &ns.ObjectMeta, ns)
	owner.NewResolver(owner.Builtin(), nil).Annotate([]*kube.Object{o})
	res := result(o)
	res.Incomplete = []finalizev1alpha1.IncompleteResource{{GroupVersion: "db.example.com/v2", Resource: "databases",
		Reason: finalizev1alpha1.ReasonConversionWebhookUnavailable, Message: "the conversion webhook of CRD databases.db.example.com fails: ...; the API server said: " + convFailed}}
	rep := diagnose(t, res, conversionCRDObject("", "v1"), convDown())
	wantCause(t, rep, o, finalizev1alpha1.ReasonConversionWebhookUnavailable, "the namespace controller has not reported on the namespace 10m after the deletion began, and a list of databases.db.example.com in it made now, as the namespace controller makes it, fails (kubectl get databases.v2.db.example.com -n quiet --chunk-size=0): the conversion webhook of CRD databases.db.example.com (service ops/db-webhook) fails")
	wantRoot(t, rep, finalizev1alpha1.ReasonConversionWebhookUnavailable, finalizev1alpha1.Subject{Kind: "CustomResourceDefinition", Name: "databases.db.example.com"}, 1)
	// The list succeeds in this namespace: nothing ties it to the webhook.
	rep = diagnose(t, res, conversionCRDObject("", "v1"))
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerInactive, "no deletion conditions",
		"also: the conversion webhook of CRD databases.db.example.com fails elsewhere, but a list of it in this namespace made now succeeds (kubectl get databases.v2.db.example.com -n quiet --chunk-size=0), so it does not block this namespace")
	for _, r := range rep.Roots {
		if r.Reason == finalizev1alpha1.ReasonConversionWebhookUnavailable && slices.ContainsFunc(r.Objects, func(ref finalizev1alpha1.ObjectReference) bool { return ref.Name == "quiet" }) {
			t.Errorf("a namespace nothing ties to the webhook is blamed on it: %+v", r)
		}
	}
	// The list fails another way: not known.
	rep = diagnose(t, res, conversionCRDObject("", "v1"), &failList{resource: "databases", err: apierrors.NewForbidden(schema.GroupResource{Group: "db.example.com", Resource: "databases"}, "", errors.New("RBAC"))})
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerInactive, "whether it blocks this namespace could not be checked")
	// Without a failing webhook, it is the controller's absence.
	rep = diagnose(t, result(o))
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerInactive, "no deletion conditions")
}
