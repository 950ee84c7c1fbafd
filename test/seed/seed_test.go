package seed_test

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	controlplane.Main(m, controlplane.WithControllers(), &cp)
}

// TestAllScenarios seeds what `make demo` seeds and checks, through the API and through
// kubectl, that every stuck object is Terminating with its finalizers and that no healthy
// object is.
func TestAllScenarios(t *testing.T) {
	ctx := t.Context()
	s, err := seed.New(cp.Config, "")
	if err != nil {
		t.Fatal(err)
	}
	scenarios, err := s.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) != 13 {
		t.Fatalf("got %d scenarios, want 13", len(scenarios))
	}
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	get := func(o seed.Object) (*metav1.Time, []string) {
		t.Helper()
		var r dynamic.ResourceInterface = dyn.Resource(o.Resource)
		if o.Namespace != "" {
			r = dyn.Resource(o.Resource).Namespace(o.Namespace)
		}
		u, err := r.Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		fins := u.GetFinalizers()
		if o.Resource.Resource == "namespaces" {
			spec, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "finalizers")
			fins = append(fins, spec...)
		}
		return u.GetDeletionTimestamp(), fins
	}
	for _, sc := range scenarios {
		for _, o := range sc.Stuck {
			ts, fins := get(o)
			if ts == nil {
				t.Errorf("%s: %s has no deletionTimestamp", sc.Name, o)
			}
			for _, f := range o.Finalizers {
				if !slices.Contains(fins, f) {
					t.Errorf("%s: %s has finalizers %v, want %s among them", sc.Name, o, fins, f)
				}
			}
			// What a user sees: kubectl reports the deletion timestamp.
			args := []string{"get", o.Resource.GroupResource().String(), o.Name, "-o", "jsonpath={.metadata.deletionTimestamp}"}
			if o.Namespace != "" {
				args = append(args, "-n", o.Namespace)
			}
			if r := cli.Kubectl(cp, args...).Run(t); r.Code != 0 || strings.TrimSpace(r.Stdout+r.Stderr) == "" {
				t.Errorf("%s: kubectl get %s: exit %d, %q", sc.Name, o, r.Code, r.Stdout+r.Stderr)
			}
		}
		for _, o := range sc.Healthy {
			ts, fins := get(o)
			if ts != nil {
				t.Errorf("%s: healthy %s is being deleted", sc.Name, o)
			}
			for _, f := range o.Finalizers {
				if !slices.Contains(fins, f) {
					t.Errorf("%s: healthy %s has finalizers %v, want %s", sc.Name, o, fins, f)
				}
			}
		}
	}
}
