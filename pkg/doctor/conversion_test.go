package doctor

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
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
		"spec": map[string]any{"group": "db.example.com",
			"versions":   []any{map[string]any{"name": "v1", "served": true, "storage": true}, map[string]any{"name": "v2", "served": true, "storage": false}},
			"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{"clientConfig": cc}}},
		"status": map[string]any{"storedVersions": storedVersions},
	}}
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
	rep := diagnose(t, res, conversionCRDObject("", "v1"))
	for _, o := range []*kube.Object{a, b} {
		wantCause(t, rep, o, finalizev1alpha1.ReasonConversionWebhookUnavailable,
			"the namespace controller cannot list databases.db.example.com in the namespace: the conversion webhook of CRD databases.db.example.com (service ops/db-webhook) fails: service ops/db-webhook does not exist",
			"restore the conversion webhook of CRD databases.db.example.com: service ops/db-webhook",
			`kubectl patch crd databases.db.example.com --type=json -p '[{"op":"test","path":"/spec/versions/1/name","value":"v2"},{"op":"replace","path":"/spec/versions/1/served","value":false}]'`,
			"kubectl get databases.v1.db.example.com -A")
		c := rep.Cause(o)
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
	rep := diagnose(t, result(ns), conversionCRDObject("", "v1", "v2"))
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable, "Objects may be stored at v1 and v2 (status.storedVersions)", "bring it back")
	if strings.Contains(rep.Cause(ns).NextStep, "kubectl patch") {
		t.Errorf("with objects at two versions, no patch is safe: %s", rep.Cause(ns).NextStep)
	}

	// A service that exists without ready endpoints, looked up now.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "db-webhook"}}
	rep = diagnose(t, result(ns), conversionCRDObject("", "v1"), svc)
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable, "service ops/db-webhook has no ready endpoints")

	// A URL webhook whose TLS fails: as the API server observed it.
	tls := `conversion webhook for db.example.com/v1, Kind=Database failed: Post "https://127.0.0.1:9443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`
	ns = blockedNamespace("team-c", tls)
	rep = diagnose(t, result(ns), conversionCRDObject("https://127.0.0.1:9443/convert", "v1"))
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable,
		"the conversion webhook of CRD databases.db.example.com (https://127.0.0.1:9443/convert) fails: its TLS handshake fails: tls: failed to verify certificate: x509: certificate signed by unknown authority",
		"restore the conversion webhook of CRD databases.db.example.com at https://127.0.0.1:9443/convert")

	// The CRD cannot be read: what the API server said is still enough to name it.
	ns = blockedNamespace("team-d", convFailed)
	rep = diagnose(t, result(ns))
	wantCause(t, rep, ns, finalizev1alpha1.ReasonConversionWebhookUnavailable, "CRD databases.db.example.com", "service ops/db-webhook does not exist")
}

func TestAnotherContentFailureKeepsTheNamespacesOwnRoot(t *testing.T) {
	ns := blockedNamespace("team-a", convFailed)
	ns.Namespace.Status.Conditions[0].Message = "Failed to delete all resource types, 2 remaining: " + convFailed + ", Internal error occurred: etcd is slow"
	rep := diagnose(t, result(ns), []runtime.Object{conversionCRDObject("", "v1")}...)
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
	rep := diagnose(t, res, conversionCRDObject("", "v1"))
	wantCause(t, rep, o, finalizev1alpha1.ReasonConversionWebhookUnavailable, "the namespace controller has not reported on the namespace 10m after the deletion began, while the conversion webhook of CRD databases.db.example.com (service ops/db-webhook) fails")
	wantRoot(t, rep, finalizev1alpha1.ReasonConversionWebhookUnavailable, finalizev1alpha1.Subject{Kind: "CustomResourceDefinition", Name: "databases.db.example.com"}, 1)
	// Without a failing webhook, it is the controller's absence.
	rep = diagnose(t, result(o))
	wantCause(t, rep, o, finalizev1alpha1.ReasonControllerInactive, "no deletion conditions")
}
