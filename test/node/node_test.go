// Package node_test runs workloads on the test node: a real kubelet with containerd and
// runc, kube-scheduler and the workload controllers, with pods on the host's network and
// the API server on loopback (controlplane.NetworkOverlay).
package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.WithNodes(1), &cp) }

const probeImage = "kubectl-finalize.test/probe:1"

var (
	probeOnce sync.Once
	probeErr  error
)

// probe loads the image of ./test/node/probe into the node, once per package.
func probe(t *testing.T) string {
	t.Helper()
	probeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		began := time.Now()
		probeErr = cp.Node.GoImage(ctx, probeImage, "./test/node/probe")
		t.Logf("built and loaded %s in %s", probeImage, time.Since(began).Round(time.Millisecond))
	})
	if probeErr != nil {
		t.Fatalf("building the probe image: %v", probeErr)
	}
	return probeImage
}

// probePod is a pod running the probe with args, with the network overlay.
func probePod(t *testing.T, ns, name string, args ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "probe", Image: probe(t), Args: args}},
		},
	}
	cp.NetworkOverlay(&pod.Spec)
	return pod
}

// waitPodDone waits until the pod has Succeeded or Failed and returns it; on a timeout it
// fails with the pod's status and events.
func waitPodDone(t *testing.T, ns, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	c := cp.Kube(t)
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		pod, err = c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil {
		events, _ := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		var lines []string
		for _, e := range events.Items {
			lines = append(lines, fmt.Sprintf("%s %s/%s: %s %s", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message))
		}
		var status any
		if pod != nil {
			status = pod.Status
		}
		t.Fatalf("pod %s/%s not done after %s: %v\nstatus: %+v\nevents:\n%s", ns, name, timeout, err, status, strings.Join(lines, "\n"))
	}
	return pod
}

func podLog(t *testing.T, ns, name string) string {
	t.Helper()
	b, err := cp.Kube(t).CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("reading the log of pod %s/%s through the API server: %v", ns, name, err)
	}
	return string(b)
}

func TestNodeRegistersOnLoopback(t *testing.T) {
	node, err := cp.Kube(t).CoreV1().Nodes().Get(t.Context(), controlplane.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			addrs = append(addrs, a.Address)
		}
	}
	if len(addrs) != 1 || addrs[0] != "127.0.0.1" {
		t.Fatalf("InternalIP addresses %v, want [127.0.0.1]: the API server reaches the kubelet there", addrs)
	}
	if v := node.Status.NodeInfo.KubeletVersion; v != "v1.36.3" {
		t.Errorf("kubelet version %q, want v1.36.3", v)
	}
	if rt := node.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(rt, "containerd://") {
		t.Errorf("container runtime %q, want containerd", rt)
	}
}

func TestPodRunsAndItsLogIsReadThroughTheAPI(t *testing.T) {
	ns := cp.Namespace(t)
	pod := probePod(t, ns, "echo", "echo", "hello", "from", "the", "node")
	pod.Spec.NodeName = controlplane.NodeName
	began := time.Now()
	if _, err := cp.Kube(t).CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPodDone(t, ns, "echo", time.Minute)
	t.Logf("pod ran to %s in %s", got.Status.Phase, time.Since(began).Round(time.Millisecond))
	if got.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s, want Succeeded; log:\n%s", got.Status.Phase, podLog(t, ns, "echo"))
	}
	if log := podLog(t, ns, "echo"); log != "hello from the node\n" {
		t.Fatalf("log through pods/log %q, want %q", log, "hello from the node\n")
	}
	if r := cli.Kubectl(cp, "-n", ns, "logs", "echo").Run(t); r.Code != 0 || r.Stdout+r.Stderr != "hello from the node\n" {
		t.Fatalf("kubectl logs: exit %d, output %q", r.Code, r.Stdout+r.Stderr)
	}
}

func TestJobCompletes(t *testing.T) {
	ns := cp.Namespace(t)
	template := probePod(t, ns, "", "echo", "job done")
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "once"},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template:     corev1.PodTemplateSpec{Spec: template.Spec},
		},
	}
	began := time.Now()
	c := cp.Kube(t)
	if _, err := c.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		j, err := c.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Status == corev1.ConditionTrue && (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) {
				if cond.Type == batchv1.JobFailed {
					return false, fmt.Errorf("job failed: %s", cond.Message)
				}
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		pods, _ := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		t.Fatalf("job not complete: %v; pods: %+v", err, pods.Items)
	}
	t.Logf("job completed in %s", time.Since(began).Round(time.Millisecond))
	pods, err := c.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=once"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of the job: %v, %d", err, len(pods.Items))
	}
	p := pods.Items[0]
	if p.Spec.NodeName != controlplane.NodeName {
		t.Errorf("the scheduler put the job's pod on %q, want %s", p.Spec.NodeName, controlplane.NodeName)
	}
	if log := podLog(t, ns, p.Name); log != "job done\n" {
		t.Errorf("job pod log %q, want %q", log, "job done\n")
	}
}

func TestInClusterClientReachesTheAPIServerOnLoopback(t *testing.T) {
	ns := cp.Namespace(t)
	c := cp.Kube(t)
	ctx := t.Context()
	for _, obj := range []func() error{
		func() error {
			_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "lister"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: "list-configmaps"},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "lister"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "list-configmaps"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "lister"}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "marker"}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := obj(); err != nil {
			t.Fatal(err)
		}
	}

	run := func(name, sa string) (*corev1.Pod, string) {
		pod := probePod(t, ns, name, "list")
		pod.Spec.ServiceAccountName = sa
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitPodDone(t, ns, name, time.Minute)
		return got, podLog(t, ns, name)
	}

	got, log := run("lister", "lister")
	if got.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s, want Succeeded; log:\n%s", got.Status.Phase, log)
	}
	for _, want := range []string{
		"host https://127.0.0.1:" + cp.APIServerPort() + "\n",
		"user system:serviceaccount:" + ns + ":lister\n",
		"configmap marker\n",
		"configmap kube-root-ca.crt\n",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the probe's log lacks %q:\n%s", want, log)
		}
	}

	// The default ServiceAccount has no binding: RBAC refuses it, so the token is the
	// pod's own and not some stronger credential.
	got, log = run("default-sa", "default")
	if got.Status.Phase != corev1.PodFailed || !strings.Contains(log, "forbidden") {
		t.Fatalf("as the default ServiceAccount: phase %s, want Failed with a forbidden list; log:\n%s", got.Status.Phase, log)
	}
}

func TestPodsThatCouldDialAClusterIPAreRefused(t *testing.T) {
	ns := cp.Namespace(t)
	c := cp.Kube(t)
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: controlplane.PauseImage}}},
	}
	noEnv := plain.DeepCopy()
	noEnv.Spec.HostNetwork = true
	noEnv.Spec.EnableServiceLinks = ptr.To(false)
	clusterIP := probePod(t, ns, "cluster-ip", "echo")
	clusterIP.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "10.0.0.1"}, {Name: "KUBERNETES_SERVICE_PORT", Value: "443"}}
	initWithout := probePod(t, ns, "init", "echo")
	initWithout.Spec.InitContainers = []corev1.Container{{Name: "init", Image: probeImage}}
	links := probePod(t, ns, "links", "echo")
	links.Spec.EnableServiceLinks = nil
	for name, pod := range map[string]*corev1.Pod{
		"no host network":            plain,
		"host network without env":   noEnv,
		"the ClusterIP in env":       clusterIP,
		"an init container without":  initWithout,
		"service links on (default)": links,
	} {
		_, err := c.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "network rule") {
			t.Errorf("%s: created with error %v; want a refusal naming the network rule", name, err)
		}
	}
}

// A node component that cannot start fails the start, naming it and its log, and leaves
// nothing running; a cache without the node's binaries fails before anything starts.
func TestAComponentThatCannotStartFailsTheStart(t *testing.T) {
	bins := t.TempDir()
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl"} {
		if err := os.Symlink(filepath.Join(cp.BinDir, b), filepath.Join(bins, b)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := controlplane.Start(t.Context(), controlplane.Options{BinDir: bins, Node: true})
	if err == nil || !strings.Contains(err.Error(), "node binary kubelet missing") {
		t.Fatalf("start without a kubelet: %v; want a refusal naming the kubelet", err)
	}

	if err := os.Symlink(filepath.Join(cp.BinDir, "kube-scheduler"), filepath.Join(bins, "kube-scheduler")); err != nil {
		t.Fatal(err)
	}
	broken := "#!/bin/sh\necho 'kubelet: broken on purpose' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bins, "kubelet"), []byte(broken), 0o755); err != nil { //nolint:gosec // an executable
		t.Fatal(err)
	}
	_, err = controlplane.Start(t.Context(), controlplane.Options{BinDir: bins, Node: true})
	if err == nil || !strings.Contains(err.Error(), "kubelet exited before it was ready; its log is") {
		t.Fatalf("start with a kubelet that exits: %v; want an error naming the kubelet and its log", err)
	}
}

// The deployment and replicaset controllers and the scheduler bring a Deployment's pods up
// on the node (the pause image runs until it is stopped).
func TestDeploymentBecomesAvailable(t *testing.T) {
	ns := cp.Namespace(t)
	c := cp.Kube(t)
	labels := map[string]string{"app": "pause"}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: controlplane.PauseImage}}}
	cp.NetworkOverlay(&spec)
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pause"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	began := time.Now()
	if _, err := c.AppsV1().Deployments(ns).Create(t.Context(), deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *appsv1.Deployment
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = c.AppsV1().Deployments(ns).Get(ctx, "pause", metav1.GetOptions{})
		return err == nil && got.Status.AvailableReplicas == 2, err
	})
	if err != nil {
		t.Fatalf("deployment not available: %v; status %+v", err, got.Status)
	}
	t.Logf("2 replicas available in %s", time.Since(began).Round(time.Millisecond))
}
