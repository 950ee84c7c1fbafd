// Package overlay renders a shipped docs/deploy kustomization through an overlay a deploy
// test writes at run time, the way a user layers their own changes on the shipped files:
// the rest of the manifests stay as shipped. The overlay replaces the policy ConfigMap
// with a scenario's policy (and its provider's CA as ca.pem), replaces the roles with
// what `kubectl finalize rbac` generates for that policy (as docs/reconcile.md says to),
// or keeps the shipped policy and roles as they are; it points the image at the release
// image loaded on the node, and adds the test's patches (the network overlay, the Pod
// Security relabel) and generators.
package overlay

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

const (
	// Namespace is the namespace docs/deploy creates.
	Namespace = "kubectl-finalize"
	// Name is the name of what docs/deploy creates in it: the ServiceAccount, the
	// workload and its roles.
	Name = "kubectl-finalize"
	// ShippedImage is the image the shipped workloads name; an overlay replaces it.
	ShippedImage = "ghcr.io/kubectl-finalize/kubectl-finalize"
	// PolicyDir is where the shipped workloads mount their policy ConfigMap.
	PolicyDir = "/etc/kubectl-finalize"
)

// RepoPath is the path of a file of the repository, whichever package's test asks: go
// test runs a package's tests in its folder, and the repository's root is the nearest
// folder above it that holds the module's go.mod. (Not runtime.Caller: under -trimpath,
// as make builds, it names a module path, not a file.)
func RepoPath(elems ...string) string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/kubectl-finalize/kubectl-finalize\n") {
			return filepath.Join(append([]string{dir}, elems...)...)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("overlay: no folder above the test's holds the repository's go.mod")
		}
		dir = parent
	}
}

// Kubectl runs the kubectl the control plane was built with, as the admin, and returns
// its stdout and its stderr (warnings); a failure fails the test.
func Kubectl(t testing.TB, cp *controlplane.ControlPlane, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	kubectl := cli.Kubectl(cp, args...)
	kubectl.Stdin = stdin
	r := kubectl.Succeed(t)
	return r.Stdout, r.Stderr
}

// Kustomize renders the kustomization in dir with the control plane's kubectl.
func Kustomize(t testing.TB, cp *controlplane.ControlPlane, dir string) string {
	t.Helper()
	out, _ := Kubectl(t, cp, "", "kustomize", "--load-restrictor", "LoadRestrictionsNone", dir)
	return out
}

// Overlay is one overlay of a shipped kustomization.
type Overlay struct {
	// Shipped is the folder of docs/deploy the overlay builds on: "cronjob", "deployment".
	Shipped string
	// Policy is the policy file's text; CA the PEM of its provider's CA, mounted beside it
	// as ca.pem. An empty Policy keeps the shipped policy ConfigMap and roles.
	Policy, CA string
	// RBACArgs are the flags `kubectl finalize rbac` is given beside --policy and
	// --service-account (--leader-elect-namespace for the Deployment).
	RBACArgs []string
	// Image is the reference of the release image the workload runs instead of the
	// shipped one.
	Image string
	// Patches are the overlay's other patches, by file name: strategic merges or JSON
	// documents naming their target.
	Patches map[string]string
	// Files are more files the overlay folder holds (a generator's inputs), by name.
	Files map[string]string
	// Generators is kustomization text appended as is (a secretGenerator, say).
	Generators string
}

// Render writes the overlay into a temporary folder and renders it. It returns the
// manifests and the RBAC `kubectl finalize rbac` generated for the policy (empty when
// the shipped policy and roles are kept).
func (o Overlay) Render(t testing.TB, cp *controlplane.ControlPlane) (rendered, rbac string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var patches []string
	for _, name := range slices.Sorted(maps.Keys(o.Patches)) {
		write(name, o.Patches[name])
		patches = append(patches, "- path: "+name)
	}
	for name, text := range o.Files {
		write(name, text)
	}
	var policy string
	if o.Policy != "" {
		write("policy.yaml", o.Policy)
		write("ca.pem", o.CA)
		r := cli.Run(t, cp.AdminKubeconfig, append([]string{"rbac", "--policy", filepath.Join(dir, "policy.yaml"),
			"--service-account", Namespace + "/" + Name}, o.RBACArgs...)...)
		if r.Code != 0 {
			t.Fatalf("kubectl finalize rbac: exit %d\n%s", r.Code, r.Stderr)
		}
		rbac = r.Stdout
		for i, doc := range strings.Split(rbac, "\n---\n") {
			file := fmt.Sprintf("rbac-%d.yaml", i)
			write(file, doc)
			patches = append(patches, "- path: "+file)
		}
		policy = `configMapGenerator:
- name: kubectl-finalize-policy
  namespace: kubectl-finalize
  behavior: replace
  files:
  - policy.yaml
  - ca.pem
`
	}
	shipped, err := filepath.Rel(dir, RepoPath("docs", "deploy", o.Shipped))
	if err != nil {
		t.Fatal(err)
	}
	// The reference ends in its tag: what follows the last colon.
	i := strings.LastIndex(o.Image, ":")
	if i < 0 {
		t.Fatalf("image %q has no tag", o.Image)
	}
	write("kustomization.yaml", fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: %s
  newName: %s
  newTag: %s
%s%s
patches:
%s
`, shipped, ShippedImage, o.Image[:i], o.Image[i+1:], policy, o.Generators, strings.Join(patches, "\n")))
	return Kustomize(t, cp, dir), rbac
}

// CronJobOf finds the Namespace and the CronJob of a rendering of docs/deploy/cronjob,
// each decoded strictly.
func CronJobOf(t testing.TB, rendered string) (*corev1.Namespace, *batchv1.CronJob) {
	t.Helper()
	var ns *corev1.Namespace
	var cj *batchv1.CronJob
	for _, doc := range strings.Split(rendered, "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Namespace":
			ns = &corev1.Namespace{}
			if err := yaml.UnmarshalStrict([]byte(doc), ns); err != nil {
				t.Fatal(err)
			}
		case "CronJob":
			cj = &batchv1.CronJob{}
			if err := yaml.UnmarshalStrict([]byte(doc), cj); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ns == nil || cj == nil {
		t.Fatalf("the rendering has no Namespace or no CronJob:\n%s", rendered)
	}
	return ns, cj
}
