package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-finalize/kubectl-finalize/test/apiproxy"
)

// TestEveryCommandListsInPages runs every command that lists through a proxy that sees
// each request, and checks that no collection is read in one unpaged request: the API
// server would build the whole list in memory, and so would the client. --chunk-size sets
// the page of every list, the doctor's own reads included.
func TestEveryCommandListsInPages(t *testing.T) {
	seedStuck(t)
	p, kubeconfig := proxied(t)
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(`apiVersion: kubectl-finalize.github.io/v1alpha1
kind: Policy
rules:
- name: everything
  finalizers: ["*"]
  verify:
    exec:
      command: ["false"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"KUBECONFIG=" + kubeconfig}
	for _, chunk := range []string{"", "7"} {
		for _, args := range [][]string{
			{"scan"},
			{"scan", "-o", "json"},
			{"doctor"},
			{"doctor", "ns/e2e-orphaned-operator"},
			{"doctor", "pvc/data", "-n", "e2e-storage"},
			{"remove", "pvc/data", "-n", "e2e-storage", "--finalizer", "kubernetes.io/pvc-protection", "--dry-run=client", "--allow-system", "--force-unverified", "--reason", "test", "--yes"},
			{"reconcile", "--once", "--dry-run", "--policy", policy},
		} {
			if chunk != "" {
				args = append(args, "--chunk-size", chunk)
			}
			before := p.Counts()
			pathsBefore := p.UnpagedPaths()
			r := runCmd(t, filepath.Join(binDir, "kubectl-finalize"), env, args...)
			c := p.Counts().Sub(before)
			if r.Code != 0 && r.Code != 3 {
				t.Fatalf("%v: exit %d\n%s", args, r.Code, r.Stderr)
			}
			if c.Lists == 0 {
				t.Fatalf("%v: the proxy saw no list: is it in the path?", args)
			}
			if c.Unpaged > 0 {
				var unpaged []string
				for path, n := range p.UnpagedPaths() {
					if n > pathsBefore[path] {
						unpaged = append(unpaged, fmt.Sprintf("%s (%d)", path, n-pathsBefore[path]))
					}
				}
				t.Errorf("%v: %d of %d lists without a limit: %v", args, c.Unpaged, c.Lists, unpaged)
			}
			if chunk != "" {
				if limits := p.LimitsSince(before); len(limits) != 1 || limits[0] != 7 {
					t.Errorf("%v: list limits %v, want only 7", args, limits)
				}
			}
		}
	}
}

// proxied starts a counting proxy in front of the control plane for t, and returns it
// with a kubeconfig that reaches the cluster through it.
func proxied(t *testing.T) (*apiproxy.Proxy, string) { return apiproxy.ForTest(t, cp.Config) }
