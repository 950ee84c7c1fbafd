package cronjob

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// The shipped policy's world: a database API holding the three live controls'
// instances and billing's, not orders'.
const (
	dbToken = "dbapi-token-of-the-shipped-policy"
	// shippedPass is the name of a Job made from the shipped CronJob.
	shippedPass = "shipped-policy"
	noTokenPass = "shipped-policy-no-secret"
)

// shippedWorld makes what the shipped policy's rule is about, in a namespace of the
// test's: three live Databases (the controls of `controls: {count: 3}`, which the
// database API must answer Present for), and the stuck Databases named in stuck
// (name: instance ID), each deleted 20 minutes ago. The API holds the controls'
// instances and those of exists.
func shippedWorld(t *testing.T, stuck map[string]string, exists ...string) (ns string, api *dbAPI) {
	t.Helper()
	databases(t)
	ns = cp.Namespace(t)
	instances := append([]string{"db-live-1", "db-live-2", "db-live-3"}, exists...)
	api = startDBAPI(t, dbToken, instances...)
	for _, id := range instances[:3] {
		database(t, ns, strings.TrimPrefix(id, "db-"), id, false)
	}
	for name, id := range stuck {
		database(t, ns, name, id, true)
	}
	return ns, api
}

// checkShipped: what runs is the shipped policy and the shipped roles, unmodified: the
// ConfigMap the CronJob mounts holds docs/deploy/base/policy.yaml byte for byte, the
// ClusterRole is docs/deploy/cronjob/rbac.yaml's, and the pod mounts the shipped Secret
// volume.
func checkShipped(t *testing.T) {
	t.Helper()
	kube := cp.Kube(t)
	cj, err := kube.BatchV1().CronJobs(namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var policyMap string
	for _, v := range cj.Spec.JobTemplate.Spec.Template.Spec.Volumes {
		if v.Name == "policy" && v.ConfigMap != nil {
			policyMap = v.ConfigMap.Name
		}
	}
	cm, err := kube.CoreV1().ConfigMaps(namespace).Get(t.Context(), policyMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the policy ConfigMap %q the CronJob mounts: %v", policyMap, err)
	}
	shipped, err := os.ReadFile(repoPath(t, "docs", "deploy", "base", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["policy.yaml"] != string(shipped) {
		t.Errorf("ConfigMap %s holds a policy other than docs/deploy/base/policy.yaml:\n%s", cm.Name, cm.Data["policy.yaml"])
	}
	rbac, err := os.ReadFile(repoPath(t, "docs", "deploy", "cronjob", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checkRBAC(t, string(rbac))
}

// checkTokenVolume: the pod mounts the shipped Secret volume, optional, read-only at
// /var/run/secrets/dbapi, where the shipped policy reads its token.
func checkTokenVolume(t *testing.T, pod corev1.Pod) {
	t.Helper()
	i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "dbapi-token" })
	if i < 0 || pod.Spec.Volumes[i].Secret == nil || pod.Spec.Volumes[i].Secret.SecretName != "dbapi-token" ||
		pod.Spec.Volumes[i].Secret.Optional == nil || !*pod.Spec.Volumes[i].Secret.Optional {
		t.Errorf("the pod's volumes %+v: want dbapi-token, of the optional Secret dbapi-token", pod.Spec.Volumes)
	}
	mounts := pod.Spec.Containers[0].VolumeMounts
	j := slices.IndexFunc(mounts, func(m corev1.VolumeMount) bool { return m.Name == "dbapi-token" })
	if j < 0 || mounts[j].MountPath != "/var/run/secrets/dbapi" || !mounts[j].ReadOnly {
		t.Errorf("the container's mounts %+v: want dbapi-token read-only at /var/run/secrets/dbapi", mounts)
	}
}

// TestTheShippedPolicyRunsOnTheShippedRBAC: docs/deploy/cronjob with the shipped
// policy.yaml and the shipped rbac.yaml as they are. The overlay adds only the network
// overlay, the image on the node, and what reaches the test's database API in place of
// https://dbapi.internal.example.com (dbAPIOverlay); the test creates the Secret
// dbapi-token with docs/reconcile.md's command. A Job made from the CronJob verifies
// through the API, with the token from the Secret, that orders' instance is gone and
// billing's exists, after its three live controls answered Present: orders loses its
// finalizer (and is deleted), billing keeps it; exit 0, the Job Complete, the report
// and the audit line in the pod's log. The Databases were deleted 20 minutes ago (age):
// the shipped minAge is 15m.
func TestTheShippedPolicyRunsOnTheShippedRBAC(t *testing.T) {
	ns, api := shippedWorld(t, map[string]string{"orders": "db-orders", "billing": "db-billing"}, "db-billing")
	if rbac := deploy(t, dbAPIOverlay(api)); rbac != "" {
		t.Fatal("the overlay replaced the shipped roles")
	}
	checkShipped(t)
	tokenSecret(t, dbToken)

	began := time.Now()
	jobFromCronJob(t, shippedPass)
	p := finish(t, shippedPass, 3*time.Minute)
	t.Logf("the Job finished %s in %s; its log:\n%s", p.condition, time.Since(began).Round(time.Millisecond), p.log)
	asked, refused, wrong := api.record()
	t.Logf("the database API was asked about %q; refused %q", asked, refused)
	if p.condition != batchv1.JobComplete || p.code != 0 {
		t.Errorf("job %s (%s), exit %d, want Complete and 0", p.condition, p.message, p.code)
	}
	// Every request carried the token from the Secret the workload mounts: one without
	// it is answered 401, and that fails the test even if the pass got by.
	if len(refused) > 0 {
		t.Errorf("the database API answered 401 to %q: the pass did not send the token from the Secret", refused)
	}
	if len(wrong) > 0 {
		t.Errorf("requests that did not name %s: %q", dbAPIHost, wrong)
	}
	for _, id := range []string{"db-live-1", "db-live-2", "db-live-3", "db-orders", "db-billing"} {
		if !slices.Contains(asked, id) {
			t.Errorf("the pass did not ask the database API about %s", id)
		}
	}

	c := dynamic.NewForConfigOrDie(cp.Config).Resource(databaseCRD.GVR()).Namespace(ns)
	if _, err := c.Get(t.Context(), "orders", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("databases/orders, whose instance is gone: %v, want it removed", err)
	}
	billing, err := c.Get(t.Context(), "billing", metav1.GetOptions{})
	if err != nil || !slices.Equal(billing.GetFinalizers(), []string{databaseFinalizer}) {
		t.Errorf("databases/billing, whose instance exists: %v; want it kept with %s", err, databaseFinalizer)
	}

	// The report (stdout) and the audit line (stderr), both in the pod's log: the
	// removal of orders' finalizer, verified by the shipped rule, made as the CronJob's
	// ServiceAccount.
	for _, want := range []string{
		"databases.db.example.com/orders", "databases.db.example.com/billing", ns, "1 Removed, 1 Kept",
		`"action":"FinalizerRemoved"`, `"finalizer":"db.example.com/finalizer"`, `"rule":"managed-databases"`,
		`"name":"orders"`, `"verdict":"Gone"`, `"result":"Removed"`,
		`"user":"system:serviceaccount:` + namespace + ":" + name + `"`,
		"https://" + dbAPIHost + "/v1/instances/db-orders",
	} {
		if !strings.Contains(p.log, want) {
			t.Errorf("the pod's log does not say %q", want)
		}
	}
	for _, never := range []string{dbToken, "forbidden", "Forbidden"} {
		if strings.Contains(p.log, never) {
			t.Errorf("the pod's log says %q", never)
		}
	}
	if hosts, want := hostsFile(t, p.pod), dbAPIAddr+"\t"+dbAPIHost; !strings.Contains(hosts, want) {
		t.Errorf("the pod's /etc/hosts has no %q:\n%s", want, hosts)
	}
	checkTokenVolume(t, p.pod)
	checkPod(t, p.pod)
}

// TestTheShippedPolicyWithoutItsSecretFailsThePass: the shipped manifests applied, the
// Secret dbapi-token not created. The volume is optional (docs/reconcile.md,
// "Deploying"), so the pod starts, with no FailedMount; the token file is missing, so
// the rule's provider cannot run: the pass sends no request (the database API sees
// none, not even one without a token), keeps every finalizer and exits 1, naming the
// file in its log. The Job is Failed at once, not at its 10-minute deadline.
func TestTheShippedPolicyWithoutItsSecretFailsThePass(t *testing.T) {
	ns, api := shippedWorld(t, map[string]string{"orders": "db-orders"})
	deploy(t, dbAPIOverlay(api))
	checkShipped(t)
	noTokenSecret(t)

	began := time.Now()
	jobFromCronJob(t, noTokenPass)
	// At once: well within the Job's 10-minute deadline, which a pod held in
	// ContainerCreating would reach.
	p := finish(t, noTokenPass, 2*time.Minute)
	took := time.Since(began)
	t.Logf("the Job finished %s (%s) in %s; exit %d; its log:\n%s", p.condition, p.message, took.Round(time.Millisecond), p.code, p.log)
	if p.condition != batchv1.JobFailed || p.code != 1 {
		t.Errorf("job %s, exit %d, want Failed and 1", p.condition, p.code)
	}
	if strings.Contains(p.message, "DeadlineExceeded") || strings.Contains(p.message, "deadline") {
		t.Errorf("the Job failed by its deadline (%s), not by the pass", p.message)
	}
	// The line docs/reconcile.md quotes ("Deploying"), naming the file.
	if want := documentedFailure(t); !strings.Contains(p.log, want) || !strings.Contains(want, "/var/run/secrets/dbapi/token") {
		t.Errorf("the pod's log does not say what docs/reconcile.md quotes: %q", want)
	}
	if asked, refused, wrong := api.record(); len(asked)+len(refused)+len(wrong) > 0 {
		t.Errorf("the pass sent requests without its credential: asked %q, refused %q, other %q", asked, refused, wrong)
	}
	got, err := dynamic.NewForConfigOrDie(cp.Config).Resource(databaseCRD.GVR()).Namespace(ns).Get(t.Context(), "orders", metav1.GetOptions{})
	if err != nil || !slices.Equal(got.GetFinalizers(), []string{databaseFinalizer}) {
		t.Errorf("databases/orders after a pass that could verify nothing: %v; want it kept with %s", err, databaseFinalizer)
	}
	events, err := cp.Kube(t).CoreV1().Events(namespace).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.pod.Name})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "FailedMount" {
			t.Errorf("the pod has a FailedMount event: %s", e.Message)
		}
	}
	checkTokenVolume(t, p.pod)
	checkPod(t, p.pod)
}

// documentedFailure is the log line docs/reconcile.md quotes for a pass without the
// Secret: `error: rule managed-databases cannot verify: ...`.
func documentedFailure(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(repoPath(t, "docs", "reconcile.md"))
	if err != nil {
		t.Fatal(err)
	}
	const start = "`error: rule managed-databases cannot verify: "
	_, rest, ok := strings.Cut(string(doc), start)
	quoted, _, closed := strings.Cut(rest, "`")
	if !ok || !closed {
		t.Fatalf("docs/reconcile.md quotes no %s...`", start)
	}
	return start[1:] + quoted
}
