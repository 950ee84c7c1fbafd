package controlplane_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.APIServer(), &cp) }

func TestConfigMapWithFinalizerStaysTerminating(t *testing.T) {
	ctx := t.Context()
	ns := cp.Namespace(t)
	c := cp.Kube(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Finalizers: []string{"example.com/cleanup"}}}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().ConfigMaps(ns).Delete(ctx, "cfg", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a configmap with a finalizer must survive its deletion: %v", err)
	}
	if got.DeletionTimestamp == nil || !slices.Equal(got.Finalizers, []string{"example.com/cleanup"}) {
		t.Fatalf("deletionTimestamp %v, finalizers %v; want a timestamp and [example.com/cleanup]", got.DeletionTimestamp, got.Finalizers)
	}
}

func TestNamespaceWithoutControllerManagerStaysTerminating(t *testing.T) {
	cp.RequireNoControllerManager(t)
	ctx := t.Context()
	c := cp.Kube(t)
	ns := cp.Namespace(t)
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "left-behind"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	got, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.NamespaceTerminating || !slices.Equal(got.Spec.Finalizers, []corev1.FinalizerName{corev1.FinalizerKubernetes}) {
		t.Fatalf("phase %q, spec.finalizers %v; want Terminating and [kubernetes]", got.Status.Phase, got.Spec.Finalizers)
	}
	if len(got.Status.Conditions) != 0 {
		t.Fatalf("without the namespace controller nobody writes conditions, got %v", got.Status.Conditions)
	}

	// Clearing spec.finalizers through /finalize removes the namespace but strands its
	// content in etcd: the reason kubectl finalize refuses to do it while content remains.
	got.Spec.Finalizers = nil
	if _, err := c.CoreV1().Namespaces().Finalize(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := fixture.WaitGone(ctx, 100*time.Millisecond, 10*time.Second, func(ctx context.Context) error {
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err
	}); err != nil {
		t.Fatalf("namespace %s still exists after /finalize: %v", ns, err)
	}
	if _, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "left-behind", metav1.GetOptions{}); err != nil {
		t.Fatalf("expected the configmap to be stranded in etcd after /finalize, got %v", err)
	}
	_ = c.CoreV1().ConfigMaps(ns).Delete(ctx, "left-behind", metav1.DeleteOptions{})
}

func TestNamespaceControllerSetsDeletionConditions(t *testing.T) {
	cp.RequireControllerManager(t)
	ctx := t.Context()
	c := cp.Kube(t)
	ns := cp.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []corev1.NamespaceConditionType{corev1.NamespaceContentRemaining, corev1.NamespaceFinalizersRemaining}
	var got *corev1.Namespace
	// The namespace controller waits 5 s before it acts on a namespace.
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if got, err = c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, typ := range want {
			if !conditionTrue(got, typ) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("namespace conditions %+v: want %v True: %v", got.Status.Conditions, want, err)
	}
	// Let the namespace go: the controller finishes once the finalizer is gone.
	cmNow, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmNow.Finalizers = nil
	if _, err := c.CoreV1().ConfigMaps(ns).Update(ctx, cmNow, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := fixture.WaitGone(ctx, 250*time.Millisecond, 45*time.Second, func(ctx context.Context) error {
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err
	}); err != nil {
		t.Fatalf("namespace %s was not removed by the namespace controller: %v", ns, err)
	}
}

func conditionTrue(ns *corev1.Namespace, typ corev1.NamespaceConditionType) bool {
	for _, c := range ns.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func TestPVCUsedByPodKeepsProtection(t *testing.T) {
	cp.RequireControllerManager(t)
	ctx := t.Context()
	s, err := seed.New(cp.Config, "pvc")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := s.PVCInUse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claim := sc.Stuck[0]
	c := cp.Kube(t)
	// Give the protection controller time to act; it must keep the finalizer.
	time.Sleep(3 * time.Second)
	got, err := c.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, "kubernetes.io/pvc-protection") {
		t.Fatalf("claim: deletionTimestamp %v, finalizers %v; want it terminating with kubernetes.io/pvc-protection", got.DeletionTimestamp, got.Finalizers)
	}
	// Once the pod is gone, the real controller releases the claim.
	if err := c.CoreV1().Pods(claim.Namespace).Delete(ctx, "db-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := fixture.WaitGone(ctx, 250*time.Millisecond, 30*time.Second, func(ctx context.Context) error {
		_, err := c.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		return err
	}); err != nil {
		t.Fatalf("claim was not released after its pod was deleted: %v", err)
	}
}

func TestRBACForUsersAndServiceAccounts(t *testing.T) {
	ctx := t.Context()
	ns := cp.Namespace(t)
	admin := cp.Kube(t)

	aliceCfg, err := cp.UserConfig("alice", "developers")
	if err != nil {
		t.Fatal(err)
	}
	alice := kubernetes.NewForConfigOrDie(aliceCfg)
	if _, err := alice.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("alice has no binding: want Forbidden, got %v", err)
	}

	saCfg, err := cp.ServiceAccountConfig(ctx, ns, "finalizer-bot")
	if err != nil {
		t.Fatal(err)
	}
	bot := kubernetes.NewForConfigOrDie(saCfg)
	if _, err := bot.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the ServiceAccount has no binding yet: want Forbidden, got %v", err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "configmap-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}},
	}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "configmap-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "configmap-reader"},
		Subjects: []rbacv1.Subject{
			{Kind: "ServiceAccount", Namespace: ns, Name: "finalizer-bot"},
			{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "developers"},
		},
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]kubernetes.Interface{"alice (via group developers)": alice, "ServiceAccount finalizer-bot": bot} {
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err == nil, nil
		}); err != nil {
			t.Fatalf("%s: list configmaps still denied after the binding: %v", name, err)
		}
		if _, err := c.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("%s: secrets are not granted: want Forbidden, got %v", name, err)
		}
	}
}

// TestKubectl drives the kubectl built with the control plane, as the end-to-end tests do.
func TestKubectl(t *testing.T) {
	kubectl := filepath.Join(cp.BinDir, "kubectl")
	out, err := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", cp.AdminKubeconfig, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("kubectl version: %v", err)
	}
	var v struct {
		Client struct{ GitVersion string } `json:"clientVersion"`
		Server struct{ GitVersion string } `json:"serverVersion"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	if v.Client.GitVersion != "v1.36.3" || v.Server.GitVersion != "v1.36.3" {
		t.Fatalf("kubectl %q against kube-apiserver %q; want v1.36.3 for both", v.Client.GitVersion, v.Server.GitVersion)
	}
	out, err = exec.CommandContext(t.Context(), kubectl, "--kubeconfig", cp.AdminKubeconfig, "get", "namespace", "default", "-o", "name").CombinedOutput()
	if err != nil || string(out) != "namespace/default\n" {
		t.Fatalf("kubectl get namespace default: %q, %v", out, err)
	}
}
