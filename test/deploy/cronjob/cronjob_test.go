package cronjob

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/overlay"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// TestTheShippedRBACIsGenerated: docs/deploy/cronjob/rbac.yaml is what `kubectl
// finalize rbac` prints today for docs/deploy/base/policy.yaml (docs/reconcile.md's
// command); otherwise the shipped CronJob runs with a role its policy no longer fits.
func TestTheShippedRBACIsGenerated(t *testing.T) {
	r := cli.Run(t, cp.AdminKubeconfig, "rbac", "--policy", repoPath(t, "docs", "deploy", "base", "policy.yaml"), "--service-account", namespace+"/"+name)
	if r.Code != 0 {
		t.Fatalf("kubectl finalize rbac: exit %d\n%s", r.Code, r.Stderr)
	}
	shipped, err := os.ReadFile(repoPath(t, "docs", "deploy", "cronjob", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != string(shipped) {
		t.Errorf("docs/deploy/cronjob/rbac.yaml is not what kubectl finalize rbac generates; regenerate it:\n"+
			"kubectl finalize rbac --policy docs/deploy/base/policy.yaml --service-account kubectl-finalize/kubectl-finalize > docs/deploy/cronjob/rbac.yaml\ngenerated:\n%s", r.Stdout)
	}
}

// TestTheJobTemplateIsRestricted: the pod template of the shipped CronJob, without the
// network overlay, is admitted by a namespace labelled as the shipped one (enforce
// restricted). The test node's own admission policy refuses every pod without the
// overlay, so the proof is twofold: a Job of the template is created (dry run) with no
// Pod Security warning, and a pod of it is refused by the network rule only, which the
// API server checks after Pod Security; the same pod with the overlay is refused by Pod
// Security, so that check does run first.
func TestTheJobTemplateIsRestricted(t *testing.T) {
	ns, cj := overlay.CronJobOf(t, kustomize(t, repoPath(t, "docs", "deploy", "cronjob")))
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Fatalf("the shipped namespace enforces %q, want restricted", ns.Labels["pod-security.kubernetes.io/enforce"])
	}
	kube := cp.Kube(t)
	proof, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "restricted-", Labels: ns.Labels},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), proof.Name, metav1.DeleteOptions{})
	})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: cj.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName}}
	if _, err := kube.CoreV1().ServiceAccounts(proof.Name).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	warned := &warnings{}
	cfg := rest.CopyConfig(cp.Config)
	cfg.WarningHandler = warned
	warnedKube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pass"}, Spec: cj.Spec.JobTemplate.Spec}
	if _, err := warnedKube.BatchV1().Jobs(proof.Name).Create(t.Context(), job, dryRun); err != nil {
		t.Fatalf("a Job of the shipped template in a restricted namespace: %v", err)
	}
	if w := warned.all(); len(w) > 0 {
		t.Errorf("a Job of the shipped template drew warnings in a restricted namespace: %q", w)
	}

	pod := func(overlay bool) error {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pass"}, Spec: *cj.Spec.JobTemplate.Spec.Template.Spec.DeepCopy()}
		if overlay {
			cp.NetworkOverlay(&p.Spec)
		}
		_, err := kube.CoreV1().Pods(proof.Name).Create(t.Context(), p, dryRun)
		return err
	}
	if err := pod(true); err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted`) || !strings.Contains(err.Error(), "hostNetwork") {
		t.Fatalf("the template with the network overlay: %v; want Pod Security to refuse hostNetwork", err)
	}
	if err := pod(false); err == nil || !strings.Contains(err.Error(), "network rule") || strings.Contains(err.Error(), "PodSecurity") {
		t.Fatalf("the shipped template: %v; want Pod Security to admit it and only the test node's network rule to refuse it", err)
	}
}

// warnings collects the warnings the API server sends.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// world is what a scenario starts from: a namespace and a finalizer of the test's own, a
// cloud on loopback, and a rule asking it about the configmaps with that finalizer, the
// CA file as the pod sees it.
func world(t *testing.T) (ns, fin string, c *fakecloud.Cloud, rule func(resources string) string) {
	t.Helper()
	ns, fin, c = cp.Namespace(t), controlplane.FinalizerOf(t), fakecloud.New(t)
	rule = func(resources string) string {
		r := strings.Replace(c.Rule("dbs", fin, ""), fmt.Sprintf("%q", c.CAFile), fmt.Sprintf("%q", policyDir+"/ca.pem"), 1)
		return strings.Replace(r, "resources: [configmaps]", "resources: ["+resources+"]", 1)
	}
	return ns, fin, c, rule
}

func policyOf(head, rules string) string {
	return "apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nminAge: 0s\n" + head + "rules:\n" + rules
}

func caOf(t *testing.T, c *fakecloud.Cloud) string {
	t.Helper()
	b, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// configMap creates a configmap with finalizer fin and an "instance" annotation, deleted
// (stuck) when stuck is set.
func configMap(t *testing.T, ns, name, fin, instance string, stuck bool) {
	t.Helper()
	fixture.Create(t, cp.Kube(t).CoreV1().ConfigMaps(ns), fixture.ConfigMap(name, map[string]string{"instance": instance}, fin), stuck)
}

// TestAVerifiedRemoval: a Job made from the CronJob runs a real pass in the image, as
// the ServiceAccount with the generated RBAC, non-root with a read-only root filesystem:
// the object whose cloud resource is gone loses its finalizer and is gone, the one whose
// resource exists keeps it; exit 0, the Job Complete, the report in the pod's log.
func TestAVerifiedRemoval(t *testing.T) {
	ns, fin, c, rule := world(t)
	configMap(t, ns, "control", fin, "live", false)
	configMap(t, ns, "gone", fin, "deleted-1", true)
	configMap(t, ns, "kept", fin, "exists-1", true)
	rbac := deploy(t, scenario{policy: policyOf("", rule("configmaps")), ca: caOf(t, c)})
	checkRBAC(t, rbac)

	began := time.Now()
	jobFromCronJob(t, "verified-removal")
	p := finish(t, "verified-removal", 3*time.Minute)
	t.Logf("the Job finished %s in %s; its log:\n%s", p.condition, time.Since(began).Round(time.Millisecond), p.log)
	if p.condition != batchv1.JobComplete || p.code != 0 {
		t.Fatalf("job %s (%s), exit %d, want Complete and 0; log:\n%s", p.condition, p.message, p.code, p.log)
	}
	kube := cp.Kube(t)
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmaps/gone, whose resource the cloud says is gone: %v, want it removed", err)
	}
	kept, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "kept", metav1.GetOptions{})
	if err != nil || len(kept.Finalizers) != 1 || kept.Finalizers[0] != fin {
		t.Errorf("configmaps/kept, whose resource exists: %v, finalizers %v; want it kept with %s", err, kept.Finalizers, fin)
	}
	if c.Hits("deleted-1") == 0 || c.Hits("exists-1") == 0 {
		t.Errorf("the pass did not ask the cloud about both objects: asked %v", c.Asked())
	}
	// The report (the table and its summary on stdout, the audit lines on stderr): the
	// removal was made as the CronJob's ServiceAccount, with the generated RBAC.
	for _, want := range []string{
		ns, "configmaps/gone", "configmaps/kept", fin, "1 Removed, 1 Kept",
		`"user":"system:serviceaccount:` + namespace + ":" + name + `"`, `"result":"Removed"`,
	} {
		if !strings.Contains(p.log, want) {
			t.Errorf("the pod's log does not say %q", want)
		}
	}
	checkPod(t, p.pod)
}

// checkRBAC: the ClusterRole in the cluster is the one generated for the scenario's
// policy, bound to the CronJob's ServiceAccount, and the pod runs as that account.
func checkRBAC(t *testing.T, generated string) {
	t.Helper()
	var want rbacv1.ClusterRole
	role, _, _ := strings.Cut(generated, "\n---\n")
	if err := yaml.Unmarshal([]byte(role), &want); err != nil || want.Kind != "ClusterRole" {
		t.Fatalf("the generated RBAC's first document is not a ClusterRole (%v):\n%s", err, generated)
	}
	got, err := cp.Kube(t).RbacV1().ClusterRoles().Get(t.Context(), want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Rules) != fmt.Sprint(want.Rules) {
		t.Errorf("ClusterRole %s rules %+v, want the generated %+v", want.Name, got.Rules, want.Rules)
	}
	b, err := cp.Kube(t).RbacV1().ClusterRoleBindings().Get(t.Context(), want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Namespace != namespace || b.Subjects[0].Name != name {
		t.Errorf("ClusterRoleBinding %s subjects %+v, want ServiceAccount %s/%s", b.Name, b.Subjects, namespace, name)
	}
}

// checkPod: the pod ran as the shipped template says: the ServiceAccount, non-root as
// 65532, a read-only root filesystem, and the image the node holds.
func checkPod(t *testing.T, pod corev1.Pod) {
	t.Helper()
	sc := pod.Spec.SecurityContext
	if pod.Spec.ServiceAccountName != name {
		t.Errorf("the pod runs as ServiceAccount %q, want %s", pod.Spec.ServiceAccountName, name)
	}
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("pod securityContext %+v, want runAsNonRoot and runAsUser 65532", sc)
	}
	c := pod.Spec.Containers[0]
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("container securityContext %+v, want readOnlyRootFilesystem", c.SecurityContext)
	}
	if !strings.HasPrefix(c.Image, "kubectl-finalize.test/") || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("container image %s (%s), want the node's release image, never pulled", c.Image, c.ImagePullPolicy)
	}
}

// TestAFailedPassFailsTheJob: a pass that ends failed (1), incomplete (3) or tripped
// the breaker (4) exits with that code (pkg/cmd/util's exitCodes of reconcile.OutcomeOf)
// and the Job is Failed at once, not retried (backoffLimit 0, restartPolicy Never), with
// the report in the pod's log.
func TestAFailedPassFailsTheJob(t *testing.T) {
	for _, tt := range []struct {
		name string
		// setup makes the scenario's objects and returns its policy.
		setup func(t *testing.T, ns, fin string, rule func(string) string) string
		code  int32
		// log are what the pod's log must say; kept are the stuck objects that must keep
		// their finalizer: a pass that fails removes nothing it was not sure of.
		log  []string
		kept []string
	}{
		{
			name: "a broken rule exits 1",
			setup: func(t *testing.T, ns, fin string, rule func(string) string) string {
				// The cloud calls a live object's resource gone: the rule is broken.
				configMap(t, ns, "control", fin, "deleted-live", false)
				configMap(t, ns, "target", fin, "deleted-1", true)
				return policyOf("", rule("configmaps"))
			},
			code: 1, log: []string{"rule dbs is broken"}, kept: []string{"target"},
		},
		{
			name: "an unlistable type exits 3",
			setup: func(t *testing.T, ns, fin string, rule func(string) string) string {
				configMap(t, ns, "control", fin, "live", false)
				group := unavailableGroup(t, fin)
				return policyOf("", rule("configmaps, widgets."+group))
			},
			code: 3, log: []string{"the scan is incomplete", "unavailable."},
		},
		{
			name: "the breaker exits 4",
			setup: func(t *testing.T, ns, fin string, rule func(string) string) string {
				configMap(t, ns, "control", fin, "live", false)
				configMap(t, ns, "one", fin, "deleted-1", true)
				configMap(t, ns, "two", fin, "deleted-2", true)
				return policyOf("maxRemovals: 1\n", rule("configmaps"))
			},
			code: 4, log: []string{"the breaker tripped"}, kept: []string{"one", "two"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns, fin, c, rule := world(t)
			policy := tt.setup(t, ns, fin, rule)
			checkRBAC(t, deploy(t, scenario{policy: policy, ca: caOf(t, c)}))
			job := fmt.Sprintf("exit-%d", tt.code)
			jobFromCronJob(t, job)
			p := finish(t, job, 3*time.Minute)
			t.Logf("the Job finished %s (%s); exit %d; its log:\n%s", p.condition, p.message, p.code, p.log)
			if p.condition != batchv1.JobFailed || p.code != tt.code {
				t.Errorf("job %s, exit %d, want Failed and %d", p.condition, p.code, tt.code)
			}
			for _, want := range tt.log {
				if !strings.Contains(p.log, want) {
					t.Errorf("the pod's log does not say %q", want)
				}
			}
			// Failing for the scenario's reason, not for a refusal of the generated RBAC.
			for _, refused := range []string{"forbidden", "Forbidden", "may not"} {
				if strings.Contains(p.log, refused) {
					t.Errorf("the pod's log says %q: the pass was refused, not failed for the scenario's reason", refused)
				}
			}
			for _, obj := range tt.kept {
				got, err := cp.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), obj, metav1.GetOptions{})
				if err != nil || !slices.Contains(got.Finalizers, fin) {
					t.Errorf("configmaps/%s after a failed pass: %v; want it still held by %s", obj, err, fin)
				}
			}
			checkPod(t, p.pod)
		})
	}
}

// unavailableGroup registers an APIService whose Service does not exist, so that its
// group's discovery fails (as an uninstalled metrics adapter leaves it), and returns the
// group. The API server answers 503 for it without dialling anything.
func unavailableGroup(t *testing.T, fin string) string {
	t.Helper()
	group := "unavailable." + strings.TrimSuffix(fin, "/cleanup")
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	apiservices := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1." + group},
		"spec": map[string]any{
			"group": group, "version": "v1", "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"insecureSkipTLSVerify": true,
			"service":               map[string]any{"namespace": "kube-system", "name": "no-such-service"},
		},
	}}
	if _, err := apiservices.Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = apiservices.Delete(context.Background(), "v1."+group, metav1.DeleteOptions{}) })
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Kube(t).Discovery().ServerResourcesForGroupVersion(group + "/v1")
		return err != nil && !apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the group %s does not fail discovery: %v", group, err)
	}
	return group
}

// TestTheCronJobSchedules: the cronjob controller makes a Job of the CronJob on its
// schedule, and that pass completes; a CronJob that silently never runs is what users of
// a scheduled cleanup fear. The overlay sets the schedule to every minute (the shipped
// one is every 15) so that the test can wait for it.
func TestTheCronJobSchedules(t *testing.T) {
	ns, fin, c, rule := world(t)
	configMap(t, ns, "control", fin, "live", false)
	configMap(t, ns, "gone", fin, "deleted-1", true)
	deploy(t, scenario{policy: policyOf("", rule("configmaps")), ca: caOf(t, c), schedule: "* * * * *"})
	kube := cp.Kube(t)
	t.Cleanup(func() {
		// No pass runs after the test: the CronJob is deleted, its Jobs with it.
		_ = kube.BatchV1().CronJobs(namespace).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationBackground)})
	})
	began := time.Now()
	var scheduled string
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 150*time.Second, true, func(ctx context.Context) (bool, error) {
		jobs, err := kube.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, j := range jobs.Items {
			ref := metav1.GetControllerOf(&j)
			if ref != nil && ref.Kind == "CronJob" && ref.Name == name && j.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" && j.CreationTimestamp.After(began.Add(-time.Second)) {
				scheduled = j.Name
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		cj, _ := kube.BatchV1().CronJobs(namespace).Get(context.Background(), name, metav1.GetOptions{})
		t.Fatalf("the cronjob controller made no Job in %s: %v\nCronJob status: %+v\nevents:\n%s", time.Since(began), err, cj.Status, fixture.Events(kube, namespace))
	}
	t.Logf("the cronjob controller made Job %s after %s", scheduled, time.Since(began).Round(time.Second))
	p := finish(t, scheduled, 3*time.Minute)
	if p.condition != batchv1.JobComplete || p.code != 0 {
		t.Fatalf("scheduled job %s, exit %d, want Complete and 0; log:\n%s", p.condition, p.code, p.log)
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the scheduled pass did not remove configmaps/gone: %v", err)
	}
}

func ptrTo[T any](v T) *T { return &v }
