package doctor

import (
	"time"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
)

// Finalizers whose causes the doctor knows from Kubernetes itself.
const (
	finalizerPVC = "kubernetes.io/pvc-protection"
	finalizerPV  = "kubernetes.io/pv-protection"
	finalizerCRD = "customresourcecleanup.apiextensions.k8s.io"
)

type diagnoser struct {
	f              *facts
	catalog        *owner.Catalog
	namespaceGrace time.Duration
	// progressWindow is how long a controller may go without writing to an object it
	// holds and still be Progressing (controller.go).
	progressWindow time.Duration
}

// diagnose returns every finding for o, at least one: those of the object rules, then
// those of the rule of each metadata finalizer (cause.go). Each rule family lives in its
// own file and registers its causes and rules there: webhook.go, namespace.go (and
// conversion.go: a CRD's failing conversion webhook), gc.go (foregroundDeletion,
// orphan), pod.go (pods that wait for their kubelet), storage.go (claims and volumes),
// csi.go (the CSI sidecars' protections), crd.go, controller.go (every other finalizer).
func (d *diagnoser) diagnose(o *kube.Object) []finding {
	var fs []finding
	for _, explain := range objectRules {
		fs = append(fs, explain(d, o)...)
	}
	for _, fin := range o.Finalizers {
		if fin.Field == finalizev1alpha1.FieldMetadataFinalizers {
			fs = append(fs, d.explain(o, fin)...)
		}
	}
	if len(fs) == 0 {
		fs = append(fs, rooted(finalizev1alpha1.ReasonUnknown, subjectOf(o), "no rule explains it",
			"inspect it: kubectl get "+o.Ref().String()+" -o yaml", "no rule explains it").
			withRootNext("inspect the object"))
	}
	// What controllers that own none of its finalizers report about it is context.
	fs[0].context = append(fs[0].context, d.warningContext(o, fs)...)
	return fs
}
