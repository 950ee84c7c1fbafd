package doctor

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/pki"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// conversionCRD installs plural.group, stored at v1 and served at v1 and v2, whose
// conversion webhook is clientConfig, and waits until v2 is discovered.
func conversionCRD(t *testing.T, plane *controlplane.ControlPlane, group, kind, plural string, clientConfig map[string]any) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(plane.Config)
	version := func(name string, storage bool) map[string]any {
		return map[string]any{"name": name, "served": true, "storage": storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names":    map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)},
			"versions": []any{version("v1", true), version("v2", false)},
			"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{
				"conversionReviewVersions": []any{"v1"}, "clientConfig": clientConfig}},
		}}}
	if _, err := dyn.Resource(crdsGVR).Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		rl, err := plane.Kube(t).Discovery().ServerResourcesForGroupVersion(group + "/v2")
		return err == nil && len(rl.APIResources) > 0, nil
	})
	if err != nil {
		t.Fatalf("CRD %s.%s is never served at v2: %v", plural, group, err)
	}
}

// holding creates namespace ns with one object of the type, written at v1 (its storage
// version: no conversion), and deletes the namespace.
func holding(t *testing.T, plane *controlplane.ControlPlane, ns, group, kind, plural string) {
	t.Helper()
	c := plane.Kube(t)
	if _, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if group != "" {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": kind, "metadata": map[string]any{"name": "one", "namespace": ns}}}
		gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
		if _, err := dynamic.NewForConfigOrDie(plane.Config).Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestAConversionWebhookThatIsDown runs on a control plane of its own, whose API server
// resolves a webhook's service to its endpoints (as --enable-aggregator-routing does):
// a service without endpoints then fails without any traffic, and nothing is sent
// outside loopback. Three CRDs, stored at v1 and listed at v2, each with a conversion
// webhook down in its own way: its service missing, its service without endpoints, and
// a URL on loopback whose TLS certificate the API server does not trust.
func TestAConversionWebhookThatIsDown(t *testing.T) {
	ctx := t.Context()
	plane, err := controlplane.Start(ctx, controlplane.Options{Controllers: controlplane.DefaultControllers,
		APIServerFlags: map[string]string{"enable-aggregator-routing": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	defer plane.Stop()
	c := plane.Kube(t)

	// A TLS server on loopback whose certificate no caBundle vouches for.
	untrusted := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "never reached", http.StatusTeapot) }))
	defer untrusted.Close()
	if !strings.HasPrefix(untrusted.URL, "https://127.0.0.1:") {
		t.Fatalf("the TLS server must listen on loopback: %s", untrusted.URL)
	}
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "conv-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "conv-system", Name: "gadget-webhook"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}, Selector: map[string]string{"app": "gadget-webhook"}}}
	if _, err := c.CoreV1().Services("conv-system").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	conversionCRD(t, plane, "missing.conv.example.com", "Widget", "widgets",
		map[string]any{"service": map[string]any{"namespace": "conv-system", "name": "widget-webhook", "path": "/convert"}})
	conversionCRD(t, plane, "noendpoints.conv.example.com", "Gadget", "gadgets",
		map[string]any{"service": map[string]any{"namespace": "conv-system", "name": "gadget-webhook", "path": "/convert"}})
	conversionCRD(t, plane, "tls.conv.example.com", "Gizmo", "gizmos", map[string]any{"url": untrusted.URL + "/convert"})

	holding(t, plane, "holds-widgets-a", "missing.conv.example.com", "Widget", "widgets")
	holding(t, plane, "holds-widgets-b", "missing.conv.example.com", "Widget", "widgets")
	holding(t, plane, "holds-gadgets", "noendpoints.conv.example.com", "Gadget", "gadgets")
	holding(t, plane, "holds-gizmos", "tls.conv.example.com", "Gizmo", "gizmos")
	// The namespace controller's passes fail and retry, sharing one client's rate
	// limit, and the API server holds each list of a type whose watch cache cannot
	// initialize for many seconds (16 s measured) before it answers: a pass over a
	// namespace takes a minute or more, and on a busy machine (three test packages at a
	// time on two cores) several. One deadline for every report awaited: 8 minutes.
	deadline := time.Now().Add(8 * time.Minute)
	for _, ns := range []string{"holds-widgets-a", "holds-widgets-b", "holds-gadgets", "holds-gizmos"} {
		waitContentFailure(t, c, ns, "conversion webhook for ", time.Until(deadline))
	}
	// Then the API server's watch caches of the types fail to initialize, and lists of
	// them fail in every namespace: a namespace that never held any of their objects
	// cannot finish deleting either. The controller may not even report on it (its
	// passes over the blocked namespaces retry ahead of it): past the grace, the doctor
	// names the webhooks either way.
	waitContentFailure(t, c, "holds-widgets-a", "storage is (re)initializing", time.Until(deadline))
	holding(t, plane, "holds-nothing", "", "", "")
	const grace = 20 * time.Second
	time.Sleep(grace)
	if _, err := c.CoreV1().Namespaces().Get(ctx, "holds-nothing", metav1.GetOptions{}); err != nil {
		t.Fatalf("a namespace that holds none of their objects: %v", err)
	}

	rep := diagnose(t, plane, grace)
	nsObj := func(name string) seed.Object { return seed.Object{Resource: gvr("namespaces"), Name: name} }
	widgets := finalizev1alpha1.Subject{Kind: "CustomResourceDefinition", Name: "widgets.missing.conv.example.com"}
	for _, ns := range []string{"holds-widgets-a", "holds-widgets-b"} {
		cause := wantCause(t, rep, nsObj(ns), finalizev1alpha1.ReasonConversionWebhookUnavailable,
			"the namespace controller cannot list widgets.missing.conv.example.com in the namespace",
			"the conversion webhook of CRD widgets.missing.conv.example.com (service conv-system/widget-webhook) fails: service conv-system/widget-webhook does not exist",
			"restore the conversion webhook of CRD widgets.missing.conv.example.com: service conv-system/widget-webhook",
			"kubectl get widgets.v1.missing.conv.example.com -A",
			"lists of widgets at v2 fail", "no namespace being deleted can finish while that list fails there")
		if strings.Contains(cause.Message, "no namespace can finish deleting") {
			t.Errorf("%s: says every namespace is blocked, not those whose list fails: %s", ns, cause.Message)
		}
		if strings.Contains(cause.NextStep, "xargs") {
			t.Errorf("%s: a next step that lists every type fails on this one: %s", ns, cause.NextStep)
		}
		named := false
		for _, b := range cause.Blockers {
			named = named || (b.Target.Kind == "CustomResourceDefinition" && b.Target.Name == widgets.Name)
		}
		if !named {
			t.Errorf("%s: blockers %+v, want the CRD", ns, cause.Blockers)
		}
	}
	wantRoot(t, rep, finalizev1alpha1.ReasonConversionWebhookUnavailable, widgets, nsObj("holds-widgets-a"), nsObj("holds-widgets-b"), nsObj("holds-nothing"))
	wantCause(t, rep, nsObj("holds-gadgets"), finalizev1alpha1.ReasonConversionWebhookUnavailable,
		"CRD gadgets.noendpoints.conv.example.com (service conv-system/gadget-webhook) fails: service conv-system/gadget-webhook has no ready endpoints")
	wantRoot(t, rep, finalizev1alpha1.ReasonConversionWebhookUnavailable, finalizev1alpha1.Subject{Kind: "CustomResourceDefinition", Name: "gadgets.noendpoints.conv.example.com"}, nsObj("holds-gadgets"), nsObj("holds-nothing"))
	wantCause(t, rep, nsObj("holds-gizmos"), finalizev1alpha1.ReasonConversionWebhookUnavailable,
		"CRD gizmos.tls.conv.example.com ("+untrusted.URL+"/convert) fails: its TLS handshake fails: ", "x509: certificate signed by unknown authority",
		"restore the conversion webhook of CRD gizmos.tls.conv.example.com at "+untrusted.URL+"/convert")
	wantRoot(t, rep, finalizev1alpha1.ReasonConversionWebhookUnavailable, finalizev1alpha1.Subject{Kind: "CustomResourceDefinition", Name: "gizmos.tls.conv.example.com"}, nsObj("holds-gizmos"), nsObj("holds-nothing"))
	// Tied to the webhooks by a list made now in that namespace, as the namespace
	// controller makes it (whether or not the controller has reported on it yet).
	wantCause(t, rep, nsObj("holds-nothing"), finalizev1alpha1.ReasonConversionWebhookUnavailable, "in every namespace",
		"made now", "fails", " -n holds-nothing --chunk-size=0)")
	for _, r := range rep.Roots {
		if r.Reason == finalizev1alpha1.ReasonNamespaceContentRemaining {
			t.Errorf("a namespace is its own root cause beside the webhook: %+v", r)
		}
	}

	// The scan's incomplete entries say the same of each type.
	d := rep.Diagnosis(nil)
	incomplete := map[string]finalizev1alpha1.IncompleteResource{}
	for _, in := range d.Incomplete {
		incomplete[in.Resource+"."+strings.Split(in.GroupVersion, "/")[0]] = in
	}
	for crd, says := range map[string]string{
		"widgets.missing.conv.example.com":     "service conv-system/widget-webhook does not exist",
		"gadgets.noendpoints.conv.example.com": "service conv-system/gadget-webhook has no ready endpoints",
		"gizmos.tls.conv.example.com":          "x509: certificate signed by unknown authority",
	} {
		in, ok := incomplete[crd]
		if !ok || in.Reason != finalizev1alpha1.ReasonConversionWebhookUnavailable || in.GroupVersion != strings.SplitN(crd, ".", 2)[1]+"/v2" ||
			!strings.Contains(in.Message, "the conversion webhook of CRD "+crd) || !strings.Contains(in.Message, says) {
			t.Errorf("incomplete entry of %s: %+v", crd, in)
		}
	}

	// Through the command: grouped, exit 3 because three types could not be listed.
	r := cli.Run(t, plane.AdminKubeconfig, "doctor")
	if r.Code != 3 || !strings.Contains(r.Stdout, "ConversionWebhookUnavailable: CustomResourceDefinition widgets.missing.conv.example.com") || !strings.Contains(r.Stdout, "holds-widgets-a") {
		t.Errorf("doctor: code %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}

	// The next steps work: with every object stored at v1, serving only v1 needs no
	// conversion, and every namespace goes; nothing stored changes.
	all := []string{"holds-widgets-a", "holds-widgets-b", "holds-gadgets", "holds-gizmos", "holds-nothing"}
	patchRE := regexp.MustCompile(`kubectl patch crd (\S+) --type=json -p '(\[[^']*\])'`)
	patched := 0
	for _, r := range rep.Roots {
		if r.Reason != finalizev1alpha1.ReasonConversionWebhookUnavailable {
			continue
		}
		m := patchRE.FindStringSubmatch(r.NextStep)
		if m == nil {
			t.Fatalf("no patch in the next step of %s: %s", r.Subject.Name, r.NextStep)
		}
		if r := cli.Kubectl(plane, "patch", "crd", m[1], "--type=json", "-p", m[2]).Run(t); r.Code != 0 {
			t.Fatalf("the next step's patch of %s: exit %d\n%s%s", m[1], r.Code, r.Stdout, r.Stderr)
		}
		patched++
	}
	if patched != 3 {
		t.Fatalf("%d next steps patched a CRD, want 3", patched)
	}
	// The namespace controller backs off between failed passes; an update of the
	// namespace brings it back at once.
	for _, ns := range all {
		patch := []byte(`{"metadata":{"labels":{"kubectl-finalize.test/poke":"1"}}}`)
		if _, err := c.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gone := time.Now().Add(6 * time.Minute)
	for _, ns := range all {
		if err := waitNamespaceGone(ctx, plane, ns, time.Until(gone)); err != nil {
			t.Errorf("after the next steps: %v", err)
		}
	}
}

// waitContentFailure waits until the namespace controller reports that it failed to
// delete the content of ns, with a message that says says.
func waitContentFailure(t *testing.T, c kubernetes.Interface, ns, says string, timeout time.Duration) {
	t.Helper()
	var last []corev1.NamespaceCondition
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = n.Status.Conditions
		for _, cd := range last {
			if cd.Type == corev1.NamespaceDeletionContentFailure && cd.Status == corev1.ConditionTrue && strings.Contains(cd.Message, says) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("namespace %s: no content failure saying %q after %s: %v; conditions %+v", ns, says, timeout, err, last)
	}
}

func waitNamespaceGone(ctx context.Context, plane *controlplane.ControlPlane, ns string, timeout time.Duration) error {
	c := kubernetes.NewForConfigOrDie(plane.Config)
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s is still there after %s: %w", ns, timeout, err)
	}
	return nil
}

// TestAStaleConversionReportIsProgressing: the namespace controller reported a conversion
// webhook failing; then the webhook works again, before the controller's next pass
// (kube-controller-manager is stopped here to hold that moment). The conditions still
// name the failure, but the same list succeeds now: the doctor says the report is stale
// and that the controller retries, not ConversionWebhookUnavailable; started again, the
// controller finishes the namespace. The webhook is a URL on loopback whose CA is the
// CRD's caBundle.
func TestAStaleConversionReportIsProgressing(t *testing.T) {
	ctx := t.Context()
	plane, err := controlplane.Start(ctx, controlplane.Options{Controllers: controlplane.DefaultControllers})
	if err != nil {
		t.Fatal(err)
	}
	defer plane.Stop()
	c := plane.Kube(t)

	ca := pki.NewCA("conversion-webhook")
	var healthy atomic.Bool
	webhook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !healthy.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		var review map[string]any
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, _ := review["request"].(map[string]any)
		desired, _ := req["desiredAPIVersion"].(string)
		objects, _ := req["objects"].([]any)
		for _, o := range objects {
			if m, ok := o.(map[string]any); ok {
				m["apiVersion"] = desired // the versions' schemas are the same
			}
		}
		resp := map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
			"response": map[string]any{"uid": req["uid"], "convertedObjects": objects, "result": map[string]any{"status": "Success"}}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}))
	webhook.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Serving("127.0.0.1", "127.0.0.1").TLS()}, MinVersion: tls.VersionTLS12}
	webhook.StartTLS()
	defer webhook.Close()
	if !strings.HasPrefix(webhook.URL, "https://127.0.0.1:") {
		t.Fatalf("the webhook must listen on loopback: %s", webhook.URL)
	}
	group := "stale.conv.example.com"
	conversionCRD(t, plane, group, "Doohickey", "doohickeys",
		map[string]any{"url": webhook.URL + "/convert", "caBundle": base64.StdEncoding.EncodeToString(ca.PEM)})
	holding(t, plane, "holds-doohickeys", group, "Doohickey", "doohickeys")
	waitContentFailure(t, c, "holds-doohickeys", "conversion webhook for ", 6*time.Minute)

	// The controller's next pass is held off; the webhook works again, and the list the
	// controller makes succeeds once the API server's watch cache has initialized.
	plane.StopControllerManager()
	healthy.Store(true)
	v2 := schema.GroupVersionResource{Group: group, Version: "v2", Resource: "doohickeys"}
	dyn := dynamic.NewForConfigOrDie(plane.Config)
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		// One try at a time: client-go would wait out the API server's Retry-After.
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, lastErr = dyn.Resource(v2).Namespace("holds-doohickeys").List(attempt, metav1.ListOptions{})
		return lastErr == nil, nil
	}); err != nil {
		t.Fatalf("the list of doohickeys at v2 never succeeds with the webhook healthy: %v (%v)", err, lastErr)
	}
	n, err := c.CoreV1().Namespaces().Get(ctx, "holds-doohickeys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := false
	for _, cd := range n.Status.Conditions {
		stale = stale || (cd.Type == corev1.NamespaceDeletionContentFailure && cd.Status == corev1.ConditionTrue && strings.Contains(cd.Message, "conversion webhook for "))
	}
	if !stale {
		t.Fatalf("the namespace's conditions no longer name the webhook: %+v", n.Status.Conditions)
	}

	rep := diagnose(t, plane, time.Minute)
	o := seed.Object{Resource: gvr("namespaces"), Name: "holds-doohickeys"}
	cause := wantCause(t, rep, o, finalizev1alpha1.ReasonProgressing,
		"that the conversion webhook of CRD doohickeys.stale.conv.example.com failed, but the same list made now succeeds (kubectl get doohickeys.v2.stale.conv.example.com -n holds-doohickeys --chunk-size=0), so that report is stale",
		"the namespace controller tries a namespace again at most a minute after a failed pass ends",
		"the namespace still holds 1 object without finalizers, which that pass deletes")
	t.Logf("a stale report, as the doctor says it:\n%s\nNext: %s", cause.Message, cause.NextStep)
	for _, r := range rep.Roots {
		if r.Reason == finalizev1alpha1.ReasonConversionWebhookUnavailable {
			t.Errorf("a webhook that works is a root cause: %+v", r)
		}
	}

	// As said: the controller retries, and the namespace goes.
	if err := plane.StartControllerManager(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitNamespaceGone(ctx, plane, "holds-doohickeys", 6*time.Minute); err != nil {
		t.Error(err)
	}
}
