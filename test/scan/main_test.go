// Package scan tests `kubectl finalize scan` against a real control plane.
package scan

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.APIServer(), &cp) }

// key identifies an object across the oracle and the scan.
type key struct {
	gr        string
	namespace string
	name      string
}

func (k key) String() string { return k.gr + " " + k.namespace + "/" + k.name }

// oracle lists every object of every preferred resource type in full, with the dynamic
// client and no paging, and returns those that are being deleted and have finalizers,
// with their finalizers. It shares no code with the scanner.
func oracle(t *testing.T, cfg *rest.Config) map[key][]string {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	lists, err := discovery.ServerPreferredResources(dc)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	stuck := map[key][]string{}
	for _, l := range lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for i := range l.APIResources {
			r := &l.APIResources[i]
			if strings.Contains(r.Name, "/") || !contains(r.Verbs, "list") || gv.Group == "events.k8s.io" {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("oracle: listing %s: %v", r.Name, err)
			}
			for _, u := range items.Items {
				fins := u.GetFinalizers()
				spec, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "finalizers")
				if gv.Group == "" && r.Name == "namespaces" {
					fins = append(fins, spec...)
				}
				if u.GetDeletionTimestamp() != nil && len(fins) > 0 {
					stuck[key{gv.WithResource(r.Name).GroupResource().String(), u.GetNamespace(), u.GetName()}] = fins
				}
			}
		}
	}
	return stuck
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// scanJSON runs `scan -o json` with args and decodes the list.
func scanJSON(t *testing.T, kubeconfig string, wantCode int, args ...string) (*finalizev1alpha1.StuckObjectList, cli.Result) {
	t.Helper()
	r := cli.Run(t, kubeconfig, append([]string{"scan", "-o", "json"}, args...)...)
	if r.Code != wantCode {
		t.Fatalf("scan %v: exit code %d, want %d\nstderr: %s", args, r.Code, wantCode, r.Stderr)
	}
	var list finalizev1alpha1.StuckObjectList
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("scan %v: stdout is not a StuckObjectList: %v\n%s", args, err, r.Stdout)
	}
	if list.APIVersion != "kubectl-finalize.github.io/v1alpha1" || list.Kind != "StuckObjectList" {
		t.Fatalf("apiVersion %q kind %q", list.APIVersion, list.Kind)
	}
	return &list, r
}

func keyOf(o *finalizev1alpha1.StuckObject) key {
	gv, _ := schema.ParseGroupVersion(o.Target.APIVersion)
	return key{gv.WithResource(o.Target.Resource).GroupResource().String(), o.Target.Namespace, o.Target.Name}
}

// userKubeconfig writes a kubeconfig for a user authenticated by a client certificate.
func userKubeconfig(t *testing.T, user string, groups ...string) string {
	t.Helper()
	cfg, err := cp.UserConfig(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := controlplane.WriteKubeconfig(cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
