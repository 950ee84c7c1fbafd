package reconcile

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// TestAPassAsksToForceDeleteOnlyOverduePods: a pod a waitsForNode rule matches is asked
// for only when, by its scanned metadata, its grace period and the margin are over; one
// held only by its finalizers (grace 0, as after a force deletion) or still in its grace
// period is not asked for, and so not kept every pass.
func TestAPassAsksToForceDeleteOnlyOverduePods(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	podsType := kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}
	pod := func(name string, deletedAgo time.Duration, grace int64, finalizers ...string) *kube.Object {
		ts := metav1.NewTime(now.Add(-deletedAgo))
		o := &kube.Object{Resource: podsType, Meta: metav1.ObjectMeta{Namespace: "prod", Name: name, UID: "uid-" + "name", DeletionTimestamp: &ts, DeletionGracePeriodSeconds: ptr.To(grace)}}
		for _, f := range finalizers {
			o.Finalizers = append(o.Finalizers, finalizev1alpha1.Finalizer{Name: f, Field: finalizev1alpha1.FieldMetadataFinalizers})
		}
		return o
	}
	r := &Reconciler{Options: Options{Policy: compile(t, "- {name: gone-nodes, waitsForNode: true, namespaces: [prod]}\n"), Clock: testingclock.NewFakePassiveClock(now), PodGraceMargin: time.Minute}}
	res := &scan.Result{Objects: []*kube.Object{
		pod("overdue", 10*time.Minute, 30),
		pod("held-by-finalizers", time.Hour, 0, "example.com/x"),
		pod("in-its-margin", 30*time.Second, 30),
	}}
	var asked []string
	for _, req := range r.requests(r.Policy, res, r.Clock.Now()) {
		if req.ForceDelete {
			asked = append(asked, req.Object.Meta.Name)
		}
	}
	if strings.Join(asked, ",") != "overdue" {
		t.Errorf("force deletions asked for %v, want [overdue]", asked)
	}
}

// TestAForceDeletionThatCouldNotBeDecidedFails: a refusal whose reads failed is Failed,
// a pod gone since the scan is ObjectGone, and only timing and evidence are Kept.
func TestAForceDeletionThatCouldNotBeDecidedFails(t *testing.T) {
	ref := finalizev1alpha1.ObjectReference{Resource: "pods", Namespace: "prod", Name: "web-0"}
	p := &plan.Plan{Refusals: []plan.Refusal{
		{Removal: finalizev1alpha1.Removal{Target: ref, Action: finalizev1alpha1.ActionForceDelete, Kind: finalizev1alpha1.RefusalUnverified, Message: "reading node worker-3: Forbidden"},
			Verification: plan.Verification{Status: plan.Unread, Detail: "reading node worker-3: Forbidden"}},
		{Removal: finalizev1alpha1.Removal{Target: ref, Action: finalizev1alpha1.ActionForceDelete, Kind: finalizev1alpha1.RefusalNotOverdue, Message: "the pod is gone"}, ObjectGone: true},
		{Removal: finalizev1alpha1.Removal{Target: ref, Action: finalizev1alpha1.ActionForceDelete, Kind: finalizev1alpha1.RefusalKubeletAlive, Message: "the kubelet of node worker-3 renewed its Lease"}},
	}}
	got := refusals(p)
	want := []finalizev1alpha1.RemovalResult{finalizev1alpha1.ResultFailed, finalizev1alpha1.ResultObjectGone, finalizev1alpha1.ResultKept}
	for i := range want {
		if got[i].Result != want[i] || got[i].Action != finalizev1alpha1.ActionForceDelete {
			t.Errorf("refusal %d: %s, want %s", i, got[i].Result, want[i])
		}
	}
	if !strings.Contains(got[0].Error, "reading node worker-3: Forbidden") {
		t.Errorf("the failure says nothing of the read: %+v", got[0])
	}
}

// TestRBACOfForceDeletionsIsNarrow: every waitsForNode rule naming its namespaces
// literally gets a Role per namespace to delete pods, none cluster-wide; a glob keeps it
// cluster-wide with a warning; either way a Role in kube-node-lease reads, lists and
// watches the Leases.
func TestRBACOfForceDeletionsIsNarrow(t *testing.T) {
	role, warnings, err := roleOf(t, "- {name: gone-nodes, waitsForNode: true, namespaces: [prod, team-a]}\n", RBACOptions{ServiceAccountNamespace: "kf", ServiceAccountName: "kf"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  labels:\n    app.kubernetes.io/name: kubectl-finalize\n  name: kf-node-leases\n  namespace: kube-node-lease\nrules:\n- apiGroups:\n  - coordination.k8s.io\n  resources:\n  - leases\n  verbs:\n  - get\n  - list\n  - watch\n",
		"kind: RoleBinding", "name: kf-force-delete-pods\n  namespace: prod\n", "name: kf-force-delete-pods\n  namespace: team-a\n",
		// The pods are listed, too, only in the rule's namespaces.
		"name: kf\n  namespace: prod\nrules:\n- apiGroups:\n  - \"\"\n  resources:\n  - pods\n  verbs:\n  - get\n  - list\n",
		"name: kf\n  namespace: team-a\nrules:\n- apiGroups:\n  - \"\"\n  resources:\n  - pods\n  verbs:\n  - get\n  - list\n",
	} {
		if !strings.Contains(role, want) {
			t.Errorf("lacks %q:\n%s", want, role)
		}
	}
	if strings.Contains(role, "- delete") && strings.Count(role, "- delete") != 2 || len(warnings) != 0 {
		t.Errorf("delete on pods granted beyond the two namespaces, or warned %v:\n%s", warnings, role)
	}
	cluster := strings.Split(role, "---\n")[0]
	if strings.Contains(cluster, "delete") || strings.Contains(cluster, "pods") {
		t.Errorf("the ClusterRole reads or deletes pods:\n%s", cluster)
	}
	role, warnings, err = roleOf(t, "- {name: gone-nodes, waitsForNode: true, namespaces: [\"prod-*\"]}\n", RBACOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cluster := strings.Split(role, "---\n")[0]; !strings.Contains(cluster, "  - pods\n  verbs:\n  - get\n  - list\n  - delete\n") || strings.Contains(role, "force-delete-pods") ||
		len(warnings) != 1 || !strings.Contains(warnings[0], "rule gone-nodes force-deletes pods in namespaces it does not name literally") {
		t.Errorf("a glob: warnings %v\n%s", warnings, role)
	}
}
