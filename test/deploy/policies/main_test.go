// Package policies runs every policy shape the docs show, and each preset, the way a
// cluster runs it: `reconcile --once` in a pod on the test node, as a ServiceAccount that
// holds exactly what `kubectl finalize rbac` generated for that policy, in the release
// image, with the shipped manifests' restricted securityContext. The API server's audit
// log shows no request of that ServiceAccount was refused.
package policies

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/image"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/helm"
)

var (
	cp *controlplane.ControlPlane
	// auditLog is the API server's audit log of ServiceAccounts' requests: it shows
	// whether any was refused.
	auditLog controlplane.AuditLog
)

// The namespace controller is left out: it would finish deleting the namespace whose
// own finalizer a shape removes before the pass could. The others are what the shapes'
// objects meet in a cluster (the node adds its own: the ServiceAccount token and root CA
// publishers, the scheduler's).
func TestMain(m *testing.M) {
	opts := controlplane.WithNodes(1)
	opts.Controllers = []string{"garbage-collector-controller", "persistentvolume-protection-controller", "persistentvolumeclaim-protection-controller"}
	controlplane.Main(m, opts, &cp, controlplane.AuditServiceAccounts(&auditLog))
}

// audited counts the requests of user in the audit log after offset, and lists those the
// API server answered 401 or 403. A count of zero means the log does not know the user:
// no refusal would show either.
func audited(t *testing.T, offset int64, user string) (requests int, refused []string) {
	t.Helper()
	events := auditLog.Events(t, offset, user)
	for _, e := range events {
		if e.Refused() {
			refused = append(refused, e.Verb+" "+e.RequestURI)
		}
	}
	return len(events), refused
}

// releaseImage is image.Release, failing t when it cannot be built.
func releaseImage(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	ref, err := image.Release(ctx, cp)
	if err != nil {
		t.Fatalf("the release image: %v", err)
	}
	return ref
}

// providersImage holds the exec providers the pods run: docs/examples/exec-provider,
// ./cloudcli (the docs' check-* programs) and ./install. The release image is distroless:
// a provider binary cannot be added to it without building another image, which is not
// what users run. What they do instead, and what the pod does here, is ship the
// provider in an image of its own and copy it, in an init container, into an emptyDir
// the reconcile container mounts: the release image stays as released, and the provider
// is versioned apart from it. install does the copy, since the images have no shell.
const providersImage = "kubectl-finalize.test/providers:1"

var (
	providersOnce sync.Once
	providersErr  error
)

func providers(t *testing.T) string {
	t.Helper()
	providersOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		dir := filepath.Join(cp.Node.Dir, "images", "providers")
		for _, b := range []struct{ out, pkg string }{
			{"exec-provider", "./docs/examples/exec-provider"}, {"cloudcli", "./test/deploy/policies/cloudcli"}, {"install", "./test/deploy/policies/install"},
		} {
			cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, b.out), b.pkg)
			cmd.Dir = "../../.."
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				providersErr = fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
				return
			}
		}
		providersErr = cp.Node.PackImage(ctx, filepath.Join(dir, "image.tar"), "-tag", providersImage,
			"-add", filepath.Join(dir, "exec-provider")+":/exec-provider", "-add", filepath.Join(dir, "cloudcli")+":/cloudcli",
			"-add", filepath.Join(dir, "install")+":/install", "-entrypoint", "/install", "-user", "65532:65532")
	})
	if providersErr != nil {
		t.Fatalf("the providers' image: %v", providersErr)
	}
	return providersImage
}

// account is a ServiceAccount bound to exactly what `kubectl finalize rbac` generates for
// a policy, applied as printed (edit, when set, is only for the test that shows a role
// short of a verb is caught).
type account struct {
	namespace, name, manifests string
}

func (a account) user() string { return "system:serviceaccount:" + a.namespace + ":" + a.name }

func generatedRBAC(t *testing.T, policy string, edit func(string) string) account {
	t.Helper()
	a := account{namespace: cp.Namespace(t), name: "kubectl-finalize"}
	kube := cp.Kube(t)
	if _, err := kube.CoreV1().ServiceAccounts(a.namespace).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: a.name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := cli.Run(t, cp.AdminKubeconfig, "rbac", "--policy", policy, "--service-account", a.namespace+"/"+a.name, "--name", a.namespace)
	if r.Code != 0 {
		t.Fatalf("rbac: exit %d: %s", r.Code, r.Stderr)
	}
	a.manifests = r.Stdout
	// The chart, given the values `rbac -o helm-values` prints for this policy, grants
	// the same (#37).
	helm.SameGrants(t, cp.AdminKubeconfig, policy, a.namespace, a.namespace, a.name)
	if edit != nil {
		a.manifests = edit(a.manifests)
	}
	apply := cli.Kubectl(cp, "apply", "-f", "-")
	apply.Stdin = a.manifests
	if r := apply.Run(t); r.Code != 0 {
		t.Fatalf("applying the generated RBAC: exit %d\n%s%s\n%s", r.Code, r.Stdout, r.Stderr, a.manifests)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoles().Delete(context.Background(), a.namespace, metav1.DeleteOptions{})
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), a.namespace, metav1.DeleteOptions{})
	})
	waitGranted(t, a)
	return a
}

// waitGranted waits until the authorizer allows the account the first verb of each rule
// of each role generated: RBAC takes a moment to see new bindings, and a refusal in that
// moment would be the test's, not the policy's.
func waitGranted(t *testing.T, a account) {
	t.Helper()
	var reviews []authorizationv1.ResourceAttributes
	for doc := range strings.SplitSeq(a.manifests, "\n---\n") {
		var role struct {
			Kind     string              `json:"kind"`
			Metadata metav1.ObjectMeta   `json:"metadata"`
			Rules    []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind != "ClusterRole" && role.Kind != "Role" {
			continue
		}
		for _, r := range role.Rules {
			if len(r.Verbs) == 0 || len(r.APIGroups) == 0 || len(r.Resources) == 0 {
				continue
			}
			resource, sub, _ := strings.Cut(r.Resources[0], "/")
			reviews = append(reviews, authorizationv1.ResourceAttributes{Namespace: role.Metadata.Namespace, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: resource, Subresource: sub})
		}
	}
	kube := cp.Kube(t)
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, ra := range reviews {
			sar, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				ResourceAttributes: &ra,
				User:               a.user(),
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + a.namespace, "system:authenticated"},
			}}, metav1.CreateOptions{})
			if err != nil || !sar.Status.Allowed {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the generated RBAC never took effect: %v\n%s", err, a.manifests)
	}
}

// policyPath is where the pod reads the policy, as the shipped CronJob mounts it.
const policyPath = "/etc/kubectl-finalize/policy.yaml"

// reconcilePod is the shipped CronJob's pod (docs/deploy/cronjob/cronjob.yaml) for the
// account: the release image, non-root 65532, RuntimeDefault seccomp, no privilege
// escalation, every capability dropped, a read-only root filesystem, and the policy
// from the ConfigMap policy; args are the pass's, -o json added so the report is read.
func reconcilePod(t *testing.T, a account) *corev1.Pod {
	t.Helper()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: "reconcile"},
		Spec: corev1.PodSpec{
			ServiceAccountName: a.name,
			RestartPolicy:      corev1.RestartPolicyNever,
			NodeName:           controlplane.NodeName,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65532),
				RunAsGroup:     ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "reconcile",
				Image:           releaseImage(t),
				ImagePullPolicy: corev1.PullNever,
				Args:            []string{"reconcile", "--once", "--policy=" + policyPath, "-o", "json"},
				SecurityContext: restricted(),
				VolumeMounts:    []corev1.VolumeMount{{Name: "policy", MountPath: filepath.Dir(policyPath), ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{configMapVolume("policy", "kubectl-finalize-policy")},
		},
	}
}

func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func configMapVolume(name, configMap string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
	}}}
}

// mount adds a volume to the pod and mounts it read-only in the reconcile container.
func mount(pod *corev1.Pod, v corev1.Volume, path string) {
	pod.Spec.Volumes = append(pod.Spec.Volumes, v)
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: path, ReadOnly: true})
}

// configMap creates a ConfigMap of data in ns.
func configMap(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	if _, err := cp.Kube(t).CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// secret creates a Secret of data in ns.
func secret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	if _, err := cp.Kube(t).CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// run creates the pod and waits for it to end; it returns the reconcile container's
// exit code and the pod's log.
func run(t *testing.T, pod *corev1.Pod) (code int32, log string) {
	t.Helper()
	cp.NetworkOverlay(&pod.Spec)
	kube := cp.Kube(t)
	if _, err := kube.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := fixture.WaitPodDone(t, kube, pod.Namespace, pod.Name, 2*time.Minute)
	log = fixture.PodLog(t, kube, pod.Namespace, pod.Name)
	for _, s := range done.Status.ContainerStatuses {
		if s.Name == "reconcile" && s.State.Terminated != nil {
			return s.State.Terminated.ExitCode, log
		}
	}
	t.Fatalf("pod %s/%s ended %s without the reconcile container's exit code: %+v\n%s", pod.Namespace, pod.Name, done.Status.Phase, done.Status, log)
	return -1, log
}

// report finds the pass's JSON report in the pod's log. The log is stdout and stderr as
// one (the API serves no stream alone: PodLogsQuerySplitStreams is alpha, off), and the
// runtime reads the two pipes apart, so a line of stderr (an audit line, a warning) may
// land between two lines of the report. The report is indented JSON, alone on stdout:
// every line of it but its braces starts with a space, and every line of stderr starts
// at the margin. Those are left out before decoding; a stderr line that does not start at
// the margin would leave the JSON broken, and no report found.
func report(t *testing.T, log string) *finalizev1alpha1.ReconcileReport {
	t.Helper()
	var stdout []string
	for line := range strings.SplitSeq(log, "\n") {
		if line == "{" || line == "}" || strings.HasPrefix(line, " ") {
			stdout = append(stdout, line)
		}
	}
	rep := &finalizev1alpha1.ReconcileReport{}
	if err := json.Unmarshal([]byte(strings.Join(stdout, "\n")), rep); err != nil || rep.Kind != "ReconcileReport" {
		t.Fatalf("no ReconcileReport in the pod's log (%v):\n%s", err, log)
	}
	return rep
}
