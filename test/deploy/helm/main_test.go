// Package helm installs the chart (docs/deploy/helm/kubectl-finalize) with the real helm
// (hack/helm) on the test node, both shapes: install, a pass that removes a verified
// finalizer and keeps an unverified one, upgrade, and uninstall, after which nothing of
// the release is left, nor stuck. The only changes to what the chart renders are the
// test node's: a helm post-renderer (a postrenderer/v1 plugin whose command is this
// test binary) puts the network overlay on the pod templates
// (controlplane.NetworkOverlay), which restricted Pod Security refuses, so the
// release's namespace is privileged, warning on restricted.
package helm

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/image"
	"github.com/kubectl-finalize/kubectl-finalize/test/helm"
)

var cp *controlplane.ControlPlane

// postRenderEnv makes this test binary the post-renderer: helm runs it with the
// manifests on stdin, and the API server's port in postRenderPort.
const (
	postRenderEnv  = "KUBECTL_FINALIZE_TEST_POST_RENDER"
	postRenderPort = "KUBECTL_FINALIZE_TEST_APISERVER_PORT"
	plugin         = "kubectl-finalize-test-node"
)

func TestMain(m *testing.M) {
	if os.Getenv(postRenderEnv) != "" {
		if err := postRender(os.Stdin, os.Stdout, os.Getenv(postRenderPort)); err != nil {
			fmt.Fprintln(os.Stderr, "post-render:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	controlplane.Main(m, controlplane.WithNodes(1), &cp)
}

// postRender puts the network overlay on the pod template of each CronJob and
// Deployment of the manifests (and makes a Deployment's rollout Recreate), and passes
// the rest as rendered.
func postRender(in io.Reader, out io.Writer, port string) error {
	b, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	var docs []string
	for _, doc := range strings.Split("\n"+string(b), "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var head metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return err
		}
		var obj any
		switch head.Kind {
		case "CronJob":
			cj := &batchv1.CronJob{}
			if err := yaml.UnmarshalStrict([]byte(doc), cj); err != nil {
				return err
			}
			controlplane.NetworkOverlay(port, &cj.Spec.JobTemplate.Spec.Template.Spec)
			obj = cj
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := yaml.UnmarshalStrict([]byte(doc), d); err != nil {
				return err
			}
			controlplane.NetworkOverlay(port, &d.Spec.Template.Spec)
			// On the host's network, a replica binds the metrics port on the node: a
			// rolling update's new replica would wait for the old one's port forever.
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			obj = d
		default:
			docs = append(docs, strings.TrimPrefix(doc, "\n"))
			continue
		}
		o, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		docs = append(docs, string(o))
	}
	_, err = io.WriteString(out, "---\n"+strings.Join(docs, "\n---\n"))
	return err
}

// release is one helm release of the chart on the test node.
type release struct {
	name, namespace string
	env             []string
}

// newRelease makes the release's namespace (privileged: the overlay's hostNetwork;
// warning on restricted, which is what the chart's pods meet otherwise) and a helm
// home holding the post-renderer plugin.
func newRelease(t *testing.T, name string) *release {
	t.Helper()
	ns := cp.Namespace(t)
	kube := cp.Kube(t)
	n, err := kube.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
	n.Labels["pod-security.kubernetes.io/warn"] = "restricted"
	if _, err := kube.CoreV1().Namespaces().Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	r := &release{name: name, namespace: ns, env: []string{
		"KUBECONFIG=" + cp.AdminKubeconfig,
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"), "HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
		postRenderEnv + "=1", postRenderPort + "=" + cp.APIServerPort(),
	}}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// helm installs a plugin from a folder of the plugin's name.
	src := filepath.Join(home, "plugin-src", plugin)
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf("apiVersion: v1\ntype: postrenderer/v1\nname: %s\nversion: 0.1.0\nruntime: subprocess\nruntimeConfig:\n  platformCommand:\n  - command: %s\n", plugin, self)
	if err := os.WriteFile(filepath.Join(src, "plugin.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := r.helm(t, "plugin", "install", src); res.Err != nil {
		t.Fatalf("helm plugin install: %v\n%s%s", res.Err, res.Stdout, res.Stderr)
	}
	return r
}

// helm runs helm against the control plane, in the release's helm home.
func (r *release) helm(t *testing.T, args ...string) helm.Result {
	t.Helper()
	return helm.Run(t, r.env, args...)
}

// imageValues are the values that run the release image loaded on the node, never
// pulled.
func imageValues(t *testing.T) []string {
	t.Helper()
	img, err := image.Release(t.Context(), cp)
	if err != nil {
		t.Fatalf("the release image: %v", err)
	}
	at := strings.LastIndex(img, ":")
	return []string{"--set", "image.repository=" + img[:at], "--set", "image.tag=" + img[at+1:], "--set", "image.pullPolicy=Never"}
}

// install runs helm install (or upgrade, when verb says so) of the chart with the
// post-renderer and args, and fails the test if helm fails.
func (r *release) install(t *testing.T, verb string, args ...string) {
	t.Helper()
	all := append([]string{verb, r.name, helm.Chart(), "--namespace", r.namespace, "--post-renderer", plugin, "--wait", "--timeout", "3m"}, imageValues(t)...)
	res := r.helm(t, append(all, args...)...)
	if res.Err != nil {
		t.Fatalf("helm %s: %v\n%s%s", verb, res.Err, res.Stdout, res.Stderr)
	}
	for _, line := range strings.Split(res.Stderr, "\n") {
		if strings.Contains(line, "PodSecurity") && !strings.Contains(line, "host namespaces (hostNetwork=true)") {
			t.Errorf("helm %s: the chart's pods violate restricted beyond the overlay's hostNetwork: %s", verb, line)
		}
	}
}

// fullname is the release's objects' name.
func (r *release) fullname() string { return r.name + "-kubectl-finalize" }

// caSecret makes a Secret in the release's namespace holding the provider's CA, the
// credentials.files the chart mounts.
func (r *release) caSecret(t *testing.T, pem string) string {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fakecloud-ca"}, StringData: map[string]string{"ca.pem": pem}}
	if _, err := cp.Kube(t).CoreV1().Secrets(r.namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return s.Name
}
