// Package cronjob runs docs/deploy/cronjob as shipped on the test node: the manifests
// `kubectl kustomize` renders, through an overlay the test writes that only fits them to
// the node (the network overlay, the locally loaded image, a scenario's policy and the
// RBAC `kubectl finalize rbac` generates for it, the namespace's Pod Security relabelled
// because restricted forbids hostNetwork). shipped_test.go keeps the shipped policy and
// rbac.yaml as they are, and serves the database API the shipped policy asks on
// loopback (dbapi_test.go). Each pass is a Job made from the CronJob, as
// `kubectl create job --from=cronjob/...` makes it, or one the cronjob controller makes.
package cronjob

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/image"
	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/overlay"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

var cp *controlplane.ControlPlane

// The CronJob needs cronjob-controller and job-controller, its pod the ServiceAccount
// controllers: all are NodeControllers, which Options.Node starts.
func TestMain(m *testing.M) { controlplane.Main(m, controlplane.WithNodes(1), &cp) }

const (
	namespace    = overlay.Namespace
	name         = overlay.Name
	shippedImage = overlay.ShippedImage
	policyDir    = overlay.PolicyDir
)

// repoPath is the path of a file of the repository.
func repoPath(_ testing.TB, elems ...string) string { return overlay.RepoPath(elems...) }

// kubectl runs the kubectl the control plane was built with, as the admin.
func kubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, _ := overlay.Kubectl(t, cp, stdin, args...)
	return out
}

// kustomize renders the kustomization in dir with the control plane's kubectl.
func kustomize(t testing.TB, dir string) string {
	t.Helper()
	return overlay.Kustomize(t, cp, dir)
}

// scenario is what one overlay sets: the policy, what the CronJob's schedule is.
type scenario struct {
	// policy is the policy file's text; ca the PEM of the provider's CA, mounted beside
	// it as ca.pem. An empty policy keeps the shipped policy and the shipped rbac.yaml.
	policy, ca string
	// schedule, if set, replaces the CronJob's; the CronJob is suspended otherwise, so
	// that no scheduled pass runs beside the Job a test makes.
	schedule string
	// pod, if set, adds to the overlay's patch of the pod template (after the network
	// overlay): what the shipped policy's provider needs of the node (shipped_test.go).
	pod func(spec *corev1.PodSpec)
	// files and generators are more of the overlay: a generator's inputs by name, and
	// kustomization text (a configMapGenerator).
	files      map[string]string
	generators string
}

// deploy renders docs/deploy/cronjob through an overlay for s and applies it. The
// overlay changes only what the node and the scenario need; the rest is as shipped.
// A scenario's own policy is not the shipped example (it names configmaps and a
// loopback cloud), so the shipped rbac.yaml does not fit it: the overlay replaces its
// ClusterRole and ClusterRoleBinding with what `kubectl finalize rbac` generates for
// this policy, the way docs/reconcile.md says to. deploy returns that RBAC, or "" when
// the scenario keeps the shipped policy and roles.
func deploy(t *testing.T, s scenario) (rbac string) {
	t.Helper()
	img, err := image.Release(t.Context(), cp)
	if err != nil {
		t.Fatalf("the release image: %v", err)
	}
	rendered, rbac := overlay.Overlay{
		Shipped:    "cronjob",
		Policy:     s.policy,
		CA:         s.ca,
		Image:      img,
		Files:      s.files,
		Generators: s.generators,
		Patches: map[string]string{
			"cronjob-patch.json": cronJobPatch(t, s),
			"namespace-patch.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: kubectl-finalize
  labels:
    # Restricted forbids hostNetwork, which every pod on the test node needs
    # (controlplane.NetworkOverlay); TestTheJobTemplateIsRestricted proves the shipped
    # template fits restricted without it. Restricted still warns: deploy checks that
    # hostNetwork is the overlay's only violation.
    pod-security.kubernetes.io/enforce: privileged
    pod-security.kubernetes.io/warn: restricted
`,
		},
	}.Render(t, cp)
	applied, warnings := overlay.Kubectl(t, cp, rendered, "apply", "-f", "-")
	// Pod Security warns when the CronJob is created: restricted would refuse its pods
	// for hostNetwork, and for nothing else.
	const onlyHostNetwork = `would violate PodSecurity "restricted:latest": host namespaces (hostNetwork=true)`
	for _, line := range strings.Split(warnings, "\n") {
		if strings.Contains(line, "PodSecurity") && !strings.HasSuffix(strings.TrimSpace(line), onlyHostNetwork) {
			t.Errorf("the overlay's pods violate restricted beyond hostNetwork: %s", line)
		}
	}
	if strings.Contains(applied, "cronjob.batch/"+name+" created") && !strings.Contains(warnings, onlyHostNetwork) {
		t.Errorf("creating the CronJob under warn: restricted gave no hostNetwork warning; stderr:\n%s", warnings)
	}
	return rbac
}

// cronJobPatch is the overlay's patch of the CronJob: the network overlay of the test
// node (cp.NetworkOverlay, applied to the shipped container by name), the image never
// pulled (it is loaded on the node), the scenario's additions, and the schedule.
func cronJobPatch(t *testing.T, s scenario) string {
	t.Helper()
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "reconcile", ImagePullPolicy: corev1.PullNever}}}
	cp.NetworkOverlay(&spec)
	if s.pod != nil {
		s.pod(&spec)
	}
	cronSpec := map[string]any{
		"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": spec}}},
		"suspend":     s.schedule == "",
	}
	if s.schedule != "" {
		cronSpec["schedule"] = s.schedule
	}
	b, err := json.Marshal(map[string]any{
		"apiVersion": "batch/v1", "kind": "CronJob",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     cronSpec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jobFromCronJob makes a Job from the CronJob the way a user runs one by hand:
// `kubectl create job NAME --from=cronjob/kubectl-finalize`, with the control plane's
// kubectl.
func jobFromCronJob(t *testing.T, jobName string) {
	t.Helper()
	kubectl(t, "", "create", "job", jobName, "--from=cronjob/"+name, "-n", namespace)
}

// pass is what a finished Job left: its condition, its only pod, that pod's container's
// exit code and log.
type pass struct {
	condition batchv1.JobConditionType
	message   string
	pod       corev1.Pod
	code      int32
	log       string
}

// finish waits until the Job is Complete or Failed and returns its pass.
func finish(t *testing.T, jobName string, timeout time.Duration) pass {
	t.Helper()
	c := cp.Kube(t)
	var p pass
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		j, err := c.BatchV1().Jobs(namespace).Get(ctx, jobName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Status == corev1.ConditionTrue && (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) {
				p.condition, p.message = cond.Type, cond.Message
				return true, nil
			}
		}
		return false, nil
	})
	pods, lerr := c.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + jobName})
	if err != nil {
		t.Fatalf("job %s not finished after %s: %v\npods: %+v\nevents:\n%s", jobName, timeout, err, pods, fixture.Events(c, namespace))
	}
	if lerr != nil {
		t.Fatal(lerr)
	}
	// backoffLimit 0 and restartPolicy Never: one pod, never restarted, whose exit code
	// is the pass's.
	if len(pods.Items) != 1 {
		t.Fatalf("job %s ran %d pods, want 1 (backoffLimit 0)", jobName, len(pods.Items))
	}
	p.pod = pods.Items[0]
	for _, st := range p.pod.Status.ContainerStatuses {
		if st.Name == "reconcile" && st.State.Terminated != nil {
			p.code = st.State.Terminated.ExitCode
			if st.RestartCount != 0 {
				t.Errorf("the container restarted %d times", st.RestartCount)
			}
		}
	}
	b, err := c.CoreV1().Pods(namespace).GetLogs(p.pod.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("the log of %s: %v", p.pod.Name, err)
	}
	p.log = string(b)
	return p
}
