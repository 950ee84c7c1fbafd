package restricted

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/image"
	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/overlay"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/pki"
)

const (
	namespace = overlay.Namespace
	name      = overlay.Name
	enforce   = "pod-security.kubernetes.io/enforce"
)

// provider serves handler over HTTPS inside the pod network, on the node's gateway,
// where the node's pods reach it and nothing in the machine's own namespace can. It
// returns its URL and the PEM of the CA its certificate (naming the gateway) is from.
func provider(t *testing.T, handler http.Handler) (url, caPEM string) {
	t.Helper()
	gw := cp.Node.Gateway()
	ca := pki.NewCA("restricted-test-provider-ca")
	l, err := cp.Node.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{ca.Serving(gw, gw).TLS()}, MinVersion: tls.VersionTLS12},
	}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return "https://" + l.Addr().String(), string(ca.PEM)
}

// deploy renders docs/deploy/cronjob through an overlay that changes the image (the
// release image loaded on the node), the policy ConfigMap and the RBAC `kubectl finalize
// rbac` generates for the policy (none of either when policy is empty), applies it, and
// returns the rendering. No Pod Security label, network setting or pull policy is
// touched: the rendering must still carry the shipped enforce restricted, and its Job
// template no host network and no network environment.
func deploy(t *testing.T, policy, ca string) string {
	t.Helper()
	img, err := image.Release(t.Context(), cp)
	if err != nil {
		t.Fatalf("the release image: %v", err)
	}
	rendered, _ := overlay.Overlay{Shipped: "cronjob", Policy: policy, CA: ca, Image: img}.Render(t, cp)
	ns, cj := overlay.CronJobOf(t, rendered)
	if ns.Labels[enforce] != "restricted" {
		t.Fatalf("the rendered namespace enforces %q, want the shipped restricted", ns.Labels[enforce])
	}
	spec := cj.Spec.JobTemplate.Spec.Template.Spec
	if spec.HostNetwork || len(spec.Containers) != 1 || spec.Containers[0].Image != img {
		t.Fatalf("the rendered Job template: hostNetwork %v, containers %+v; want no host network and the one container on %s", spec.HostNetwork, spec.Containers, img)
	}
	for _, e := range spec.Containers[0].Env {
		if strings.HasPrefix(e.Name, "KUBERNETES_") {
			t.Fatalf("the rendered Job template sets %s: the shipped one sets no network environment", e.Name)
		}
	}
	_, warnings := overlay.Kubectl(t, cp, rendered, "apply", "-f", "-")
	if strings.Contains(warnings, "PodSecurity") {
		t.Errorf("applying the shipped manifests drew Pod Security warnings:\n%s", warnings)
	}
	live, err := cp.Kube(t).CoreV1().Namespaces().Get(t.Context(), namespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if live.Labels[enforce] != "restricted" {
		t.Fatalf("namespace %s enforces %q, want restricted", namespace, live.Labels[enforce])
	}
	return rendered
}

// TestTheShippedCronJobRunsUnderRestricted: a Job made from the shipped CronJob, in its
// namespace that enforces restricted, runs a real pass in the release image on the pod
// network: admitted with no host network, non-root as 65532 with a read-only root
// filesystem, it reaches the API server at the kubernetes Service's ClusterIP and the
// test's provider at the node's gateway, removes the finalizer of the object whose
// resource the provider says is gone, keeps the other's, and the Job is Complete with
// the report in the pod's log.
func TestTheShippedCronJobRunsUnderRestricted(t *testing.T) {
	ns, fin := cp.Namespace(t), controlplane.FinalizerOf(t)
	cloud := fakecloud.New(t) // its answers; served in the pod network below
	url, ca := provider(t, cloud.Config.Handler)
	kube := cp.Kube(t)
	for _, o := range []struct {
		name, instance string
		stuck          bool
	}{{"control", "live", false}, {"gone", "deleted-1", true}, {"kept", "exists-1", true}} {
		fixture.Create(t, kube.CoreV1().ConfigMaps(ns), fixture.ConfigMap(o.name, map[string]string{"instance": o.instance}, fin), o.stuck)
	}
	policy := fmt.Sprintf(`apiVersion: kubectl-finalize.github.io/v1alpha1
kind: Policy
minAge: 0s
rules:
- name: dbs
  finalizers: [%s]
  resources: [configmaps]
  verify:
    http:
      url: "%s/instances/{.metadata.annotations.instance}"
      tls: {caFile: %q}
      timeout: 3s
      response: {jsonPath: "{.state}", gone: [deleted]}
`, fin, url, overlay.PolicyDir+"/ca.pem")
	deploy(t, policy, ca)

	const job = "restricted-pass"
	began, viaClusterIP := time.Now(), cp.ClusterIPConnections()
	overlay.Kubectl(t, cp, "", "create", "job", job, "--from=cronjob/"+name, "-n", namespace)
	t.Cleanup(func() { deleteJob(job) })
	condition, message := finish(t, job, 3*time.Minute)
	pods, err := kube.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the Job's pods: %v, %d of them, want 1", err, len(pods.Items))
	}
	pod := pods.Items[0]
	log := fixture.PodLog(t, kube, namespace, pod.Name)
	t.Logf("the Job finished %s in %s on the pod network (pod %s at %s); its log:\n%s", condition, time.Since(began).Round(time.Millisecond), pod.Name, pod.Status.PodIP, log)
	if condition != batchv1.JobComplete {
		t.Fatalf("job %s is %s (%s), want Complete", job, condition, message)
	}

	// Admitted under enforce restricted, as the shipped template says.
	spec := pod.Spec
	if spec.HostNetwork {
		t.Error("the pod has the host's network")
	}
	if _, subnet, _ := net.ParseCIDR(cp.Node.PodSubnet()); subnet == nil || !subnet.Contains(net.ParseIP(pod.Status.PodIP)) {
		t.Errorf("the pod's address %q is not in the pod network's %s", pod.Status.PodIP, cp.Node.PodSubnet())
	}
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("pod securityContext %+v, want runAsNonRoot and runAsUser 65532", sc)
	}
	c := spec.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container securityContext %+v, want readOnlyRootFilesystem", c.SecurityContext)
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "KUBERNETES_") {
			t.Errorf("the container sets %s=%s: the pass must find the API server as any pod does", e.Name, e.Value)
		}
	}
	// Its in-cluster client found the API server at the kubernetes Service's ClusterIP,
	// through the KUBERNETES_SERVICE_HOST the kubelet gives every pod.
	if n := cp.ClusterIPConnections() - viaClusterIP; n == 0 {
		t.Error("the pass made no connection to the API server at the kubernetes Service's ClusterIP")
	} else {
		t.Logf("the pass connected %d time(s) to the API server at the ClusterIP", n)
	}
	if st := pod.Status.ContainerStatuses; len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 0 || st[0].RestartCount != 0 {
		t.Errorf("container status %+v, want exit 0 without a restart", st)
	}

	// The verified removal.
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmaps/gone, whose resource the provider says is gone: %v, want it removed", err)
	}
	kept, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "kept", metav1.GetOptions{})
	if err != nil || len(kept.Finalizers) != 1 || kept.Finalizers[0] != fin {
		t.Errorf("configmaps/kept, whose resource exists: %v, want it kept with %s", err, fin)
	}
	if cloud.Hits("deleted-1") == 0 || cloud.Hits("exists-1") == 0 || cloud.Hits("live") == 0 {
		t.Errorf("the pass did not ask the provider about every object: asked %v", cloud.Asked())
	}
	for _, want := range []string{
		ns, "configmaps/gone", "configmaps/kept", fin, "1 Removed, 1 Kept",
		`"user":"system:serviceaccount:` + namespace + ":" + name + `"`, `"result":"Removed"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the pod's log does not say %q", want)
		}
	}
}

// TestHostNetworkIsRefusedByRestricted: the namespace's enforce restricted is in force.
// The shipped Job template with hostNetwork added is refused: a pod of it is refused by
// Pod Security (and by nothing else: the same pod without it is admitted), and a Job of
// it never gets a pod, the Job controller's creations refused for hostNetwork.
func TestHostNetworkIsRefusedByRestricted(t *testing.T) {
	rendered := deploy(t, "", "")
	_, cj := overlay.CronJobOf(t, rendered)
	kube := cp.Kube(t)
	template := cj.Spec.JobTemplate.Spec.Template

	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	pod := func(hostNetwork bool) error {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pass"}, Spec: *template.Spec.DeepCopy()}
		p.Spec.HostNetwork = hostNetwork
		_, err := kube.CoreV1().Pods(namespace).Create(t.Context(), p, dryRun)
		return err
	}
	if err := pod(false); err != nil {
		t.Fatalf("a pod of the shipped template: %v, want it admitted", err)
	}
	err := pod(true)
	if err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted`) || !strings.Contains(err.Error(), "hostNetwork=true") || strings.Contains(err.Error(), "network rule") {
		t.Fatalf("a pod of the shipped template with hostNetwork: %v; want Pod Security's restricted to refuse it for hostNetwork alone", err)
	}
	t.Logf("refused: %v", err)

	const job = "host-network"
	spec := *cj.Spec.JobTemplate.Spec.DeepCopy()
	spec.Template.Spec.HostNetwork = true
	if _, err := kube.BatchV1().Jobs(namespace).Create(t.Context(), &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: job}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a Job of the template with hostNetwork: %v (Pod Security only warns about a Job)", err)
	}
	t.Cleanup(func() { deleteJob(job) })
	var refusal string
	err = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Job,involvedObject.name=" + job})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "FailedCreate" && strings.Contains(e.Message, `violates PodSecurity "restricted`) && strings.Contains(e.Message, "hostNetwork=true") {
				refusal = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no FailedCreate event for Pod Security on job %s: %v\nevents:\n%s", job, err, fixture.Events(kube, namespace))
	}
	pods, err := kube.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("job %s has pods (%v): %d, want none", job, err, len(pods.Items))
	}
	t.Logf("the Job controller was refused: %s", refusal)
}

// finish waits until the Job is Complete or Failed.
func finish(t *testing.T, job string, timeout time.Duration) (batchv1.JobConditionType, string) {
	t.Helper()
	kube := cp.Kube(t)
	var condition batchv1.JobConditionType
	var message string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		j, err := kube.BatchV1().Jobs(namespace).Get(ctx, job, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range j.Status.Conditions {
			if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
				condition, message = c.Type, c.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("job %s not finished after %s: %v\nevents:\n%s", job, timeout, err, fixture.Events(kube, namespace))
	}
	return condition, message
}

// deleteJob deletes a Job and its pods.
func deleteJob(job string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	background := metav1.DeletePropagationBackground
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return
	}
	_ = kube.BatchV1().Jobs(namespace).Delete(ctx, job, metav1.DeleteOptions{PropagationPolicy: &background})
}
