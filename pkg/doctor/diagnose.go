package doctor

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
	// conversions are the failing conversion webhooks, by CRD name (conversion.go).
	conversions map[string]*conversion
	// crds are every CRD, listed once to name the CRD of a failing conversion that
	// nothing else names (crdsRead: listed; crdsErr: the list failed).
	crds     []*unstructured.Unstructured
	crdsRead bool
	crdsErr  error
	// csiFacts caches the VolumeSnapshots and VolumeAttachments read (csi.go).
	csiFacts *csiFacts
	// progressWindow is how long a controller may go without writing to an object it
	// holds and still be Progressing (controller.go).
	progressWindow time.Duration
	// podFacts caches the nodes of pods that wait for their kubelet (pod.go).
	podFacts *podFacts
}

// diagnose returns every finding for o, at least one. Each rule family lives in its own
// file: webhook.go, namespace.go (and conversion.go: a CRD's failing conversion webhook),
// gc.go (foregroundDeletion, orphan), pod.go (pods that wait for their kubelet),
// storage.go (claims and volumes), csi.go (the CSI
// sidecars' protections), crd.go, controller.go (every other finalizer).
func (d *diagnoser) diagnose(o *kube.Object) []finding {
	var fs []finding
	if len(o.Meta.Finalizers) > 0 {
		if bw := d.f.blockingWebhooks(o, ""); len(bw) > 0 {
			fs = append(fs, webhookFinding(bw))
		}
	}
	if o.Resource.IsNamespaces() && o.Namespace != nil && len(o.Namespace.Spec.Finalizers) > 0 {
		if bw := d.f.blockingWebhooks(o, "finalize"); len(bw) > 0 {
			fs = append(fs, webhookFinding(bw))
		}
		fs = append(fs, d.namespace(o)...)
	}
	if o.WaitsFor != nil {
		fs = append(fs, d.podWaitsForKubelet(o))
	}
	for _, fin := range o.Finalizers {
		if fin.Field != finalizev1alpha1.FieldMetadataFinalizers {
			continue
		}
		switch {
		case fin.Name == metav1.FinalizerDeleteDependents:
			fs = append(fs, d.foreground(o)...)
		case fin.Name == metav1.FinalizerOrphanDependents:
			fs = append(fs, d.orphan(o)...)
		case fin.Name == finalizerPVC && o.Resource.GroupResource() == claimsResource.GroupResource():
			fs = append(fs, d.pvc(o))
		case fin.Name == finalizerPV && o.Resource.Group == "" && o.Resource.Resource == "persistentvolumes":
			fs = append(fs, d.pv(o))
		case fin.Name == finalizerSnapshotSource && o.Resource.GroupResource() == claimsResource.GroupResource():
			fs = append(fs, d.snapshotSource(o, fin))
		case strings.HasPrefix(fin.Name, finalizerAttacherPrefix) && o.Resource.Group == "" && o.Resource.Resource == "persistentvolumes":
			fs = append(fs, d.attached(o, fin))
		case fin.Name == finalizerCRD && o.Resource.GroupResource() == crdsResource.GroupResource():
			fs = append(fs, d.crd(o))
		default:
			fs = append(fs, d.custom(o, fin))
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
