package doctor

import (
	"encoding/json"
	"testing"

	"k8s.io/client-go/dynamic"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// TestAMisspelledFinalizerIsNobodys: a finalizer one letter from Argo CD's
// resources-finalizer.argocd.argoproj.io, written by the ApplicationSet controller as
// its template said. No controller removes it, whoever wrote it: the cluster doctor,
// the single-object doctor and the scan say it resembles the catalogued one and has no
// owner, and the doctor names the controller that removes the right name, not the
// writer, with a next step that corrects the name first.
func TestAMisspelledFinalizerIsNobodys(t *testing.T) {
	const fin, known = "resource-finalizer.argocd.argoproj.io", "resources-finalizer.argocd.argoproj.io"
	// The API server takes a finalizer name without a '/' on a custom resource only
	// (with a warning), as Argo CD's own.
	apps := fixture.CRD(t, cp.Config, seed.CRD{Group: "argoproj.io", Kind: "Application", Plural: "applications", Singular: "application", Versions: []string{"v1alpha1"}})
	ns := cp.Namespace(t)
	c := fixture.Dynamic{ResourceInterface: dynamic.NewForConfigOrDie(cp.Config).Resource(apps).Namespace(ns), Manager: "argocd-applicationset-controller"}
	fixture.Stuck(t, c, fixture.Custom(apps, "Application", ns, "web", fin))

	rep := diagnose(t, cp, 0)
	obj := seed.Object{Resource: apps, Namespace: ns, Name: "web"}
	cause := wantCause(t, rep, obj, finalizev1alpha1.ReasonFinalizerMisspelled,
		"no controller is known to remove "+fin+" (written by argocd-applicationset-controller): it is likely a misspelling of "+known+", which argocd-application-controller removes",
		"correct the name where it is written", "--force-unverified")
	wantRoot(t, rep, finalizev1alpha1.ReasonFinalizerMisspelled, finalizev1alpha1.Subject{Kind: "Finalizer", Name: fin}, obj)

	if single := causeOf(t, "web", "applications.argoproj.io/web", "-n", ns); single.Reason != cause.Reason || single.Message != cause.Message {
		t.Errorf("the single-object doctor says %s (%s), the cluster doctor %s (%s)", single.Reason, single.Message, cause.Reason, cause.Message)
	}

	r := cli.Run(t, cp.AdminKubeconfig, "scan", "-n", ns, "-o", "json")
	var list finalizev1alpha1.StuckObjectList
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("scan -o json: %v (code %d)\n%s", err, r.Code, r.Stderr)
	}
	if len(list.Items) != 1 || len(list.Items[0].Finalizers) != 1 {
		t.Fatalf("scan: %s", r.Stdout)
	}
	if f := list.Items[0].Finalizers[0]; f.Resembles != known || f.Owner != "" || f.AddedBy != "argocd-applicationset-controller" {
		t.Errorf("scan: finalizer %+v, want resembles %s, no owner, added by the ApplicationSet controller", f, known)
	}
}
