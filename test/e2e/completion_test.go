package e2e

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// completionNamespace holds the objects of the completion tests: two stuck config maps, one
// being deleted without finalizers left to complete, and one alive with a finalizer.
const completionNamespace = "complete"

func seedCompletion(t *testing.T) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	ctx := t.Context()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: completionNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := kube.CoreV1().ConfigMaps(completionNamespace)
	for name, finalizers := range map[string][]string{
		"stuck-db":    {"db.example.com/cleanup", "backup.example.com/protect"},
		"stuck-queue": {"queue.example.com/drain"},
		"alive":       {"alive.example.com/keep"},
	} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if name == "alive" {
			continue
		}
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, name := range []string{"stuck-db", "stuck-queue", "alive"} {
			_, _ = cms.Patch(t.Context(), name, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
		_ = cms.Delete(t.Context(), "alive", metav1.DeleteOptions{})
		_ = kube.CoreV1().Namespaces().Delete(t.Context(), completionNamespace, metav1.DeleteOptions{})
	})
}

// complete runs kubectl's completion of `kubectl finalize ARGS`, through the
// kubectl_complete-finalize shim on PATH, and returns the candidates and the directive.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	r := kubectl(t, append([]string{"__complete", "finalize"}, args...)...)
	if r.Code != 0 {
		t.Fatalf("kubectl __complete finalize %q: code %d, stderr %q", args, r.Code, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	directive := lines[len(lines)-1]
	var candidates []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t") // drop descriptions
		candidates = append(candidates, name)
	}
	return candidates, directive
}

// TestCompletionThroughKubectl completes as a shell does: the word being completed comes
// last, after the flags already typed.
func TestCompletionThroughKubectl(t *testing.T) {
	seedCompletion(t)
	for _, tc := range []struct {
		name          string
		args          []string
		want, exclude []string
		directive     string
	}{{
		name:      "resource types from discovery",
		args:      []string{"remove", "config"},
		want:      []string{"configmaps"},
		directive: ":4", // no file completion
	}, {
		name:      "TYPE/NAME of stuck objects only",
		args:      []string{"-n", completionNamespace, "remove", "configmaps/"},
		want:      []string{"configmaps/stuck-db", "configmaps/stuck-queue"},
		exclude:   []string{"configmaps/alive"},
		directive: ":4",
	}, {
		name:    "names after a TYPE argument, with a prefix",
		args:    []string{"-n", completionNamespace, "doctor", "configmap", "stuck-q"},
		want:    []string{"stuck-queue"},
		exclude: []string{"stuck-db", "alive"},
	}, {
		name:    "finalizers the named object holds",
		args:    []string{"-n", completionNamespace, "remove", "configmaps/stuck-db", "--finalizer", ""},
		want:    []string{"backup.example.com/protect", "db.example.com/cleanup"},
		exclude: []string{"queue.example.com/drain", "alive.example.com/keep"},
	}, {
		name:    "finalizers held in scope by stuck objects",
		args:    []string{"-n", completionNamespace, "scan", "--finalizer", ""},
		want:    []string{"backup.example.com/protect", "db.example.com/cleanup", "queue.example.com/drain"},
		exclude: []string{"alive.example.com/keep"},
	}, {
		name: "namespaces",
		args: []string{"scan", "-n", "comp"},
		want: []string{completionNamespace},
	}, {
		name:    "output formats",
		args:    []string{"remove", "-o", ""},
		want:    []string{"json", "yaml"},
		exclude: []string{"wide"},
	}, {
		name:      "policy files",
		args:      []string{"reconcile", "--policy", ""},
		want:      []string{"yaml", "yml", "json"},
		directive: ":8", // filter files by extension
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, directive := complete(t, tc.args...)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("kubectl __complete finalize %s: %q is not offered (got %q)", strings.Join(tc.args, " "), w, got)
				}
			}
			for _, x := range tc.exclude {
				if slices.Contains(got, x) {
					t.Errorf("kubectl __complete finalize %s: %q is offered (got %q)", strings.Join(tc.args, " "), x, got)
				}
			}
			if tc.directive != "" && directive != tc.directive {
				t.Errorf("kubectl __complete finalize %s: directive %s, want %s", strings.Join(tc.args, " "), directive, tc.directive)
			}
		})
	}
}
