package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// TestWhatWaitsBehindThePods: ordered namespace deletion (GA in Kubernetes 1.34). The
// namespace controller deletes a namespace's pods first and nothing else until they are
// gone: a pod held by a finalizer holds the namespace, and the rest has no
// deletionTimestamp. The doctor says how much is not deleted yet and which objects will
// stick next (a finalizer whose remover's only workload has no ready replica), or may (no
// workload of the remover in the cluster); once the pod goes, the one predicted sticks.
// On main before #34 it named none of them.
func TestWhatWaitsBehindThePods(t *testing.T) {
	cp.RequireControllerManager(t)
	ctx, kube := t.Context(), cp.Kube(t)
	widgetsGVR := widgets(t, "ordered.example.com")
	ns, ops := cp.Namespace(t), cp.Namespace(t)
	operator(t, ops, "ordered-operator", 1, 0, "", nil, nil)
	dyn := fixture.Dynamic{ResourceInterface: dynamic.NewForConfigOrDie(cp.Config).Resource(widgetsGVR).Namespace(ns), Manager: "ordered-operator"}
	fixture.Held(t, dyn, fixture.Custom(widgetsGVR, "Widget", ns, "orders", "ordered.example.com/cleanup"))
	outside := fixture.Dynamic{ResourceInterface: dyn.ResourceInterface, Manager: "remote-operator"}
	fixture.Held(t, outside, fixture.Custom(widgetsGVR, "Widget", ns, "payments", "ordered.example.com/remote"))
	// A pod no node will run, held by a finalizer: deleting it waits for nothing else.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Finalizers: []string{"ordered.example.com/pod-guard"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.com/web:v1"}}}}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{FieldManager: "pod-guard"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = kube.CoreV1().Pods(ns).Patch(context.Background(), "web", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller has deleted the pod, and reports on the namespace.
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil {
			return false, err
		}
		n, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err == nil && len(n.Status.Conditions) > 0, err
	})
	if err != nil {
		t.Fatalf("the namespace controller never deleted the pod and reported: %v", err)
	}
	orders, err := dyn.Get(ctx, "orders", metav1.GetOptions{})
	if err != nil || orders.GetDeletionTimestamp() != nil {
		t.Fatalf("while the pod stays, widgets/orders is deleted already (%v): ordered namespace deletion is not in force", err)
	}

	rep := diagnose(t, cp, 0)
	nsObj := seed.Object{Resource: gvr("namespaces"), Name: ns}
	cause := wantCause(t, rep, nsObj, finalizev1alpha1.ReasonNamespaceFinalizersRemaining,
		"the namespace controller deletes the namespace's pods first and nothing else until they are gone (ordered namespace deletion", "1 stuck object remains in the namespace",
		"once they are deleted, these will stick next, their removers not running for them: widgets.ordered.example.com/orders -n "+ns+
			" (ordered.example.com/cleanup: ordered-operator removes it, and Deployment "+ops+"/ordered-operator has 0/1 ready replicas)",
		"these may: widgets.ordered.example.com/payments -n "+ns+" (ordered.example.com/remote: no workload of remote-operator, which removes it, was found in the cluster; it may run outside)",
		"before the pods go, bring back the removers named above (or let them watch this namespace")
	t.Logf("the namespace, as the doctor says it:\n%s\nNext: %s", cause.Message, cause.NextStep)

	// Predicted, then seen: once the pod goes, the namespace controller deletes the
	// rest, and widgets/orders sticks on the finalizer of its absent remover.
	if _, err := kube.CoreV1().Pods(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		o, err := dyn.Get(ctx, "orders", metav1.GetOptions{})
		return err == nil && o.GetDeletionTimestamp() != nil, err
	})
	if err != nil {
		t.Fatalf("widgets/orders is never deleted once the pod is gone: %v", err)
	}
	rep = diagnose(t, cp, 0)
	c := wantCause(t, rep, seed.Object{Resource: widgetsGVR, Namespace: ns, Name: "orders"}, finalizev1alpha1.ReasonControllerInactive, "ordered-operator")
	if strings.Contains(c.Message, "will stick next") {
		t.Errorf("a stuck object is still predicted: %s", c.Message)
	}
}
