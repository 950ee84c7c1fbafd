// Package doctor tests `kubectl finalize doctor` and pkg/doctor against a real control
// plane, with and without kube-controller-manager.
package doctor

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/doctor"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/pipeline"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.APIServer(), &cp) }

// diagnose scans the cluster of plane and diagnoses it, through the pipeline every
// command uses.
func diagnose(t *testing.T, plane *controlplane.ControlPlane, namespaceGrace time.Duration) *doctor.Report {
	t.Helper()
	clients := &client.Clients{
		Discovery: discovery.NewDiscoveryClientForConfigOrDie(plane.Config),
		Metadata:  metadata.NewForConfigOrDie(plane.Config),
		Kube:      kubernetes.NewForConfigOrDie(plane.Config),
		Dynamic:   dynamic.NewForConfigOrDie(plane.Config),
	}
	rep, err := pipeline.Diagnose(t.Context(), clients, scan.Options{ChunkSize: scan.DefaultChunkSize}, doctor.Options{NamespaceGrace: namespaceGrace})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range rep.Warnings {
		t.Logf("doctor warning: %s", w)
	}
	return rep
}

// find returns the stuck object o of a scenario.
func find(t *testing.T, rep *doctor.Report, o seed.Object) *kube.Object {
	t.Helper()
	for _, s := range rep.Result.Objects {
		if s.Resource.GroupResource() == o.Resource.GroupResource() && s.Meta.Namespace == o.Namespace && s.Meta.Name == o.Name {
			return s
		}
	}
	t.Fatalf("%s is not among the stuck objects", o)
	return nil
}

// wantCause checks the reason of o and that its message says each of says.
func wantCause(t *testing.T, rep *doctor.Report, o seed.Object, reason string, says ...string) *finalizev1alpha1.Cause {
	t.Helper()
	c := rep.Cause(find(t, rep, o))
	if c == nil {
		t.Fatalf("%s has no cause", o)
	}
	if c.Reason != reason {
		t.Errorf("%s: reason %s (%s), want %s", o, c.Reason, c.Message, reason)
	}
	for _, s := range says {
		if !strings.Contains(c.Message, s) && !strings.Contains(c.NextStep, s) {
			t.Errorf("%s: cause %q / next %q does not say %q", o, c.Message, c.NextStep, s)
		}
	}
	if c.NextStep == "" {
		t.Errorf("%s: no next step", o)
	}
	agree(t, o)
	return c
}

// wantRoot checks that a root cause with reason and subject explains each of objs.
func wantRoot(t *testing.T, rep *doctor.Report, reason string, subject finalizev1alpha1.Subject, objs ...seed.Object) {
	t.Helper()
	for _, r := range rep.Roots {
		if r.Reason != reason || r.Subject != subject {
			continue
		}
		for _, o := range objs {
			found := false
			for _, ref := range r.Objects {
				if ref.Name == o.Name && ref.Namespace == o.Namespace && ref.Resource == o.Resource.Resource {
					found = true
				}
			}
			if !found {
				t.Errorf("root cause %s %+v does not explain %s; it explains %+v", reason, subject, o, r.Objects)
			}
		}
		return
	}
	var have []string
	for _, r := range rep.Roots {
		have = append(have, r.Reason+" "+r.Subject.Kind+"/"+r.Subject.Name)
	}
	t.Errorf("no root cause %s %+v among %q", reason, subject, have)
}

// oneGi is the size of every claim and volume of these tests.
func oneGi() *resource.Quantity {
	q := resource.MustParse("1Gi")
	return &q
}
