package helm

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/helm"
)

// world is what a pass is about: in a namespace of its own, a live control and two
// stuck ConfigMaps with the test's finalizer, one whose instance the cloud says is
// deleted (gone), one whose instance exists (kept); the policy that verifies them
// through the cloud, its CA read from where the chart mounts the Secret; and the
// chart's values of its RBAC, as `kubectl finalize rbac -o helm-values` prints them.
type world struct {
	ns, fin, policy, rbacValues string
	cloud                       *fakecloud.Cloud
}

const caDir = "/etc/fakecloud"

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{ns: cp.Namespace(t), fin: controlplane.FinalizerOf(t), cloud: fakecloud.New(t)}
	rule := strings.Replace(w.cloud.Rule("dbs", w.fin, ""), fmt.Sprintf("%q", w.cloud.CAFile), fmt.Sprintf("%q", caDir+"/ca.pem"), 1)
	w.policy = helm.File(t, "policy.yaml", "apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nminAge: 0s\nrules:\n"+rule)
	for _, cm := range []struct {
		name, instance string
		stuck          bool
	}{{"control", "live", false}, {"gone", "deleted-1", true}, {"kept", "exists-1", true}} {
		fixture.Create(t, cp.Kube(t).CoreV1().ConfigMaps(w.ns), fixture.ConfigMap(cm.name, map[string]string{"instance": cm.instance}, w.fin), cm.stuck)
	}
	r := cli.Run(t, cp.AdminKubeconfig, "rbac", "--policy", w.policy, "-o", "helm-values")
	if r.Code != 0 {
		t.Fatalf("rbac -o helm-values: exit %d: %s", r.Code, r.Stderr)
	}
	w.rbacValues = helm.File(t, "rbac-values.yaml", r.Stdout)
	return w
}

// values are the install's values of the world: its policy, its RBAC, the CA's Secret.
func (w *world) values(t *testing.T, r *release) []string {
	t.Helper()
	pem, err := os.ReadFile(w.cloud.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	secret := r.caSecret(t, string(pem))
	return []string{"-f", helm.PolicyValues(t, w.policy), "-f", w.rbacValues,
		"--set", "credentials.files[0].secretName=" + secret, "--set", "credentials.files[0].mountPath=" + caDir}
}

// checkRemoved: gone lost its finalizer and is gone; kept keeps it.
func (w *world) checkRemoved(t *testing.T) {
	t.Helper()
	kube := cp.Kube(t)
	if _, err := kube.CoreV1().ConfigMaps(w.ns).Get(t.Context(), "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmaps/gone, whose instance the cloud says is deleted: %v, want it removed", err)
	}
	kept, err := kube.CoreV1().ConfigMaps(w.ns).Get(t.Context(), "kept", metav1.GetOptions{})
	if err != nil || !slices.Equal(kept.Finalizers, []string{w.fin}) {
		t.Errorf("configmaps/kept, whose instance exists: %v, finalizers %v; want it kept with %s", err, kept.Finalizers, w.fin)
	}
}

// TestTheCronJobShape: the chart installs the CronJob; a Job made from it runs a pass
// in the release image, as the chart's ServiceAccount bound to the generated grants,
// that removes the verified finalizer and keeps the other; an upgrade changes the
// schedule and the arguments; uninstall leaves nothing of the release, and nothing stuck.
func TestTheCronJobShape(t *testing.T) {
	w := newWorld(t)
	r := newRelease(t, "cron")
	r.install(t, "install", append(w.values(t, r), "--set", "cronjob.suspend=true")...)
	kube := cp.Kube(t)
	cj, err := kube.BatchV1().CronJobs(r.namespace).Get(t.Context(), r.fullname(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pass-now", Namespace: r.namespace, Labels: cj.Spec.JobTemplate.Labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}},
		Spec: cj.Spec.JobTemplate.Spec}
	// What `kubectl create job --from=cronjob/...` makes.
	if _, err := kube.BatchV1().Jobs(r.namespace).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, log := finish(t, r.namespace, job.Name)
	if code != 0 {
		t.Fatalf("the pass exited %d; log:\n%s", code, log)
	}
	w.checkRemoved(t)
	for _, want := range []string{"configmaps/gone", "1 Removed, 1 Kept", `"user":"system:serviceaccount:` + r.namespace + ":" + r.fullname() + `"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the pass's log does not say %q:\n%s", want, log)
		}
	}

	r.install(t, "upgrade", append(w.values(t, r), "--set", "cronjob.suspend=true",
		"--set", "cronjob.schedule=*/5 * * * *", "--set", "extraArgs={--max-removals=5}")...)
	cj, err = kube.BatchV1().CronJobs(r.namespace).Get(t.Context(), r.fullname(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if args := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args; cj.Spec.Schedule != "*/5 * * * *" || !slices.Contains(args, "--max-removals=5") {
		t.Errorf("after the upgrade: schedule %q, args %v", cj.Spec.Schedule, args)
	}
	r.uninstall(t)
}

// TestTheDeploymentShape: the chart installs the Deployment; its replica holds the
// release's Lease, and a pass removes the verified finalizer and keeps the other; an
// upgrade rolls it out with another interval; uninstall leaves nothing of the release (the Lease
// included), and nothing stuck.
func TestTheDeploymentShape(t *testing.T) {
	w := newWorld(t)
	r := newRelease(t, "continuous")
	// One replica: on the host's network, one node holds one metrics port.
	r.install(t, "install", append(w.values(t, r), "--set", "mode=deployment", "--set", "deployment.interval=2s", "--set", "deployment.replicas=1")...)
	kube := cp.Kube(t)
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().ConfigMaps(w.ns).Get(ctx, "gone", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("no pass removed the verified finalizer in 2 minutes; the replicas' logs:\n%s", logs(t, r))
	}
	w.checkRemoved(t)
	lease, err := kube.CoordinationV1().Leases(r.namespace).Get(t.Context(), r.fullname(), metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("the release's Lease %s: %v, %+v; want it held by a replica", r.fullname(), err, lease)
	}
	if _, err := kube.CoreV1().Services(r.namespace).Get(t.Context(), r.fullname()+"-metrics", metav1.GetOptions{}); err != nil {
		t.Errorf("the metrics Service: %v", err)
	}

	r.install(t, "upgrade", append(w.values(t, r), "--set", "mode=deployment", "--set", "deployment.interval=3s", "--set", "deployment.replicas=1")...)
	d, err := kube.AppsV1().Deployments(r.namespace).Get(t.Context(), r.fullname(), metav1.GetOptions{})
	if err != nil || !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--interval=3s") || d.Status.ReadyReplicas != 1 || d.Status.UpdatedReplicas != 1 {
		t.Errorf("after the upgrade to --interval=3s: %v, %+v", err, d.Status)
	}
	r.uninstall(t)
}

// finish waits for the Job to end, and returns its pod's exit code and log.
func finish(t *testing.T, ns, job string) (int32, string) {
	t.Helper()
	kube := cp.Kube(t)
	var pod corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		pod = pods.Items[0]
		return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil {
		t.Fatalf("job %s did not finish in 3 minutes: %v; events:\n%s", job, err, fixture.Events(kube, ns))
	}
	code := int32(-1)
	for _, st := range pod.Status.ContainerStatuses {
		if st.State.Terminated != nil {
			code = st.State.Terminated.ExitCode
		}
	}
	b, err := kube.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(b)
}

// logs are the logs of the release's pods.
func logs(t *testing.T, r *release) string {
	t.Helper()
	kube := cp.Kube(t)
	pods, err := kube.CoreV1().Pods(r.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + r.name})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		out, err := kube.CoreV1().Pods(r.namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
		fmt.Fprintf(&b, "--- %s (%s): %v\n%s\n", p.Name, p.Status.Phase, err, out)
	}
	return b.String()
}

// uninstall runs helm uninstall, the deletion cascading in the foreground, and checks
// that nothing of the release is left: no object of its in its namespace or
// cluster-wide, and nothing terminating there (kubectl finalize scan finds nothing
// stuck). helm's own --wait is not used: helm v4 once reported the Deployment "still
// exists, Terminating" 10 s into its foreground deletion, while its pod stopped; the
// poll below waits for the deletion itself.
func (r *release) uninstall(t *testing.T) {
	t.Helper()
	if res := r.helm(t, "uninstall", r.name, "--namespace", r.namespace, "--cascade", "foreground"); res.Err != nil {
		t.Fatalf("helm uninstall: %v\n%s%s", res.Err, res.Stdout, res.Stderr)
	}
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	selector := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + r.name}
	var left []string
	err = wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		left = nil
		for _, gvr := range []schema.GroupVersionResource{
			{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "serviceaccounts"}, {Version: "v1", Resource: "services"},
			{Version: "v1", Resource: "pods"}, {Group: "batch", Version: "v1", Resource: "cronjobs"}, {Group: "batch", Version: "v1", Resource: "jobs"},
			{Group: "apps", Version: "v1", Resource: "deployments"}, {Group: "apps", Version: "v1", Resource: "replicasets"},
			{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
			{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
		} {
			l, err := dyn.Resource(gvr).Namespace(r.namespace).List(ctx, selector)
			if err != nil {
				return false, err
			}
			for _, o := range l.Items {
				left = append(left, gvr.Resource+"/"+o.GetName())
			}
		}
		// By name too: what the release's pods made (the leader election's Lease) carries
		// none of its labels.
		for _, gvr := range []schema.GroupVersionResource{{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
			{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, {Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}} {
			ri := dynamic.ResourceInterface(dyn.Resource(gvr))
			if gvr.Resource == "leases" {
				ri = dyn.Resource(gvr).Namespace(r.namespace)
			}
			if _, err := ri.Get(ctx, r.fullname(), metav1.GetOptions{}); err == nil {
				left = append(left, gvr.Resource+"/"+r.fullname())
			} else if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("after helm uninstall, the release left %v (%v)", left, err)
	}
	res := cli.Run(t, cp.AdminKubeconfig, "scan", "-n", r.namespace, "-o", "name")
	if res.Code != 0 || strings.TrimSpace(res.Stdout) != "" {
		t.Errorf("after helm uninstall, kubectl finalize scan -n %s: exit %d, found:\n%s%s", r.namespace, res.Code, res.Stdout, res.Stderr)
	}
}
