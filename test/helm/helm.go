// Package helm runs the real helm (hack/helm: helm v4, pinned, built from the Go module
// proxy) on the chart (docs/deploy/helm/kubectl-finalize), and compares what the chart
// grants with what `kubectl finalize rbac` grants for the same policy.
package helm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/overlay"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// Binary is the path of helm, built by hack/helm/build.sh at its first use (a cache
// outside the repository makes every later use instant).
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		cmd := exec.Command(overlay.RepoPath("hack", "helm", "build.sh"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			buildErr = fmt.Errorf("hack/helm/build.sh: %w\n%s", err, stderr.String())
			return
		}
		binDir = strings.TrimSpace(string(out))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "helm")
}

// Chart is the chart's folder.
func Chart() string { return overlay.RepoPath("docs", "deploy", "helm", "kubectl-finalize") }

// Result is what one helm command did.
type Result struct {
	Stdout, Stderr string
	Err            error
}

// Run runs helm with args, its state (plugins, cache, repositories) in a folder of the
// test's, and env added to the environment.
func Run(t testing.TB, env []string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// Grants are the roles and bindings of a set of manifests, each reduced to what grants:
// name, namespace, rules, the grants annotation, the role a binding binds and to whom.
// Labels, and anything else, are left out: the chart's are Helm's.
type Grants map[string]any

// GrantsOf reads the RBAC objects of manifests (YAML documents separated by ---).
func GrantsOf(t testing.TB, manifests string) Grants {
	t.Helper()
	g := Grants{}
	for _, doc := range splitDocs(manifests) {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name, Namespace string
				Annotations     map[string]string
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("%v:\n%s", err, doc)
		}
		key := head.Kind + " " + head.Metadata.Namespace + "/" + head.Metadata.Name
		grants := head.Metadata.Annotations["kubectl-finalize.github.io/grants"]
		switch head.Kind {
		case "ClusterRole", "Role":
			var r rbacv1.ClusterRole
			if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
				t.Fatal(err)
			}
			g[key] = struct {
				Rules  []rbacv1.PolicyRule
				Grants string
			}{r.Rules, grants}
		case "ClusterRoleBinding", "RoleBinding":
			var b rbacv1.ClusterRoleBinding
			if err := yaml.Unmarshal([]byte(doc), &b); err != nil {
				t.Fatal(err)
			}
			g[key] = struct {
				RoleRef  rbacv1.RoleRef
				Subjects []rbacv1.Subject
			}{b.RoleRef, b.Subjects}
		}
	}
	return g
}

// Diff says how got differs from want, or "" when they grant the same.
func (want Grants) Diff(got Grants) string {
	var out []string
	for k, w := range want {
		if v, ok := got[k]; !ok {
			out = append(out, "missing "+k)
		} else if !equality.Semantic.DeepEqual(v, w) {
			out = append(out, fmt.Sprintf("%s: %+v, want %+v", k, v, w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, "more: "+k)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

func splitDocs(manifests string) []string {
	var docs []string
	for _, doc := range strings.Split("\n"+manifests, "\n---") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "\n")) != "" {
			docs = append(docs, doc)
		}
	}
	return docs
}
