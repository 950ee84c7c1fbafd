package unreadable

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// TestANamespaceThatHoldsAnUnreadableObject: a namespace whose only content is a
// ConfigMap the API server cannot read cannot finish deleting: the namespace controller's
// list of ConfigMaps there fails. The doctor says so, names the object as the namespace's
// root cause, and once the object is restored (its good bytes put back, the first step
// the doctor gives) the namespace goes.
func TestANamespaceThatHoldsAnUnreadableObject(t *testing.T) {
	cp.RequireControllerManager(t)
	ctx, kube := t.Context(), cp.Kube(t)
	ns := cp.Namespace(t)
	fixture.Held(t, kube.CoreV1().ConfigMaps(ns), fixture.ConfigMap("fine", nil))
	fixture.Held(t, kube.CoreV1().ConfigMaps(ns), fixture.ConfigMap("bad", nil))
	bad := corrupt(t, "configmaps", ns, "bad")
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace controller tries, and fails on the list.
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionContentFailure && c.Status == corev1.ConditionTrue {
				t.Logf("%s: %s", c.Type, c.Message)
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the namespace controller reported no failure: %v", err)
	}

	r := cli.Run(t, cp.AdminKubeconfig, "doctor", "ns/"+ns, "-o", "json")
	var d finalizev1alpha1.Diagnosis
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
		t.Fatalf("doctor ns/%s: %v (exit %d)\n%s", ns, err, r.Code, r.Stderr)
	}
	var nsCause *finalizev1alpha1.Cause
	row := false
	for _, it := range d.Items {
		switch {
		case it.Target.Resource == "namespaces" && it.Target.Name == ns:
			nsCause = it.Cause
		case it.Unreadable != nil && it.Target.Name == "bad" && it.Target.Namespace == ns:
			row = true
		}
	}
	if nsCause == nil || nsCause.Reason != finalizev1alpha1.ReasonUnreadable ||
		!strings.Contains(nsCause.Message, "cannot finish deleting while it holds ConfigMap bad, which the API server cannot read") ||
		len(nsCause.Blockers) == 0 || nsCause.Blockers[0].Target.Name != "bad" {
		t.Errorf("the namespace's cause: %+v", nsCause)
	}
	if !row {
		t.Errorf("the unreadable object is not among the items of the namespace's diagnosis:\n%s", r.Stdout)
	}
	if len(d.RootCauses) != 1 || d.RootCauses[0].Reason != finalizev1alpha1.ReasonUnreadable || d.RootCauses[0].Subject.Name != "bad" {
		t.Errorf("root causes %+v", d.RootCauses)
	}
	tree := cli.Run(t, cp.AdminKubeconfig, "doctor", "ns/"+ns)
	if !strings.Contains(tree.Stdout, "Unreadable: the namespace cannot finish deleting while it holds ConfigMap bad") {
		t.Errorf("doctor ns/%s:\n%s", ns, tree.Stdout)
	}

	// Restored, the object is read again and the namespace goes.
	if err := bad.restore(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Errorf("the namespace did not go once the object was restored: %v", err)
	}
}
