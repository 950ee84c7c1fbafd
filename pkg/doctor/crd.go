package doctor

import (
	"fmt"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

func init() {
	register(family{
		causes: []Cause{
			{Reason: finalizev1alpha1.ReasonInstancesRemaining, Priority: 2,
				Help: "a CRD's instances remain",
				Doc:  "a CRD with `customresourcecleanup`: how many instances remain, which are stuck, and the CRD's `Terminating` condition"},
		},
		finalizers: []rule{{
			applies: func(o *kube.Object, fin finalizev1alpha1.Finalizer) bool {
				return fin.Name == finalizerCRD && o.Resource.GroupResource() == crdsResource.GroupResource()
			},
			explain: func(d *diagnoser, o *kube.Object, _ finalizev1alpha1.Finalizer) []finding { return []finding{d.crd(o)} },
		}},
	})
}

const crdFinalizerBy = "CRD finalizer controller (kube-apiserver)"

// crd: the CRD finalizer deletes every instance, then removes itself.
func (d *diagnoser) crd(o *kube.Object) finding {
	resource, group, _ := strings.Cut(o.Meta.Name, ".")
	gr := schema.GroupResource{Group: group, Resource: resource}
	var stuck []*kube.Object
	for _, s := range d.f.res.Objects {
		if s.Resource.GroupResource() == gr {
			stuck = append(stuck, s)
		}
	}
	count, counted := d.f.res.Index.Counts[gr]
	fd := finding{reason: finalizev1alpha1.ReasonInstancesRemaining, waitsOn: stuck}
	for _, s := range stuck {
		fd.blockers = append(fd.blockers, stuckBlocker(s, "instance"))
	}
	switch {
	case len(stuck) > 0:
		fd.message = fmt.Sprintf("%s of the CRD stuck", words.Count(len(stuck), "instance"))
		if counted && count > int64(len(stuck)) {
			fd.message = fmt.Sprintf("%s of the CRD remain, %d of them stuck", words.Count(int(count), "instance"), len(stuck))
		}
		fd.next = "the CRD goes once its instances are gone: see their causes"
	case counted && count > 0:
		fd.reason = finalizev1alpha1.ReasonProgressing
		fd.message = fmt.Sprintf("%s of the CRD remain and are being deleted", words.Count(int(count), "instance"))
		fd.next = "wait: the CRD finalizer in kube-apiserver deletes the instances"
		fd.root = &rootSpec{reason: finalizev1alpha1.ReasonProgressing, subject: controllerSubject(crdFinalizerBy), message: "the CRD finalizer is deleting instances", next: "wait"}
	default:
		fd.reason = finalizev1alpha1.ReasonProgressing
		fd.message = "no instance remains; the CRD finalizer in kube-apiserver removes its finalizer next"
		fd.next = "wait"
		fd.root = &rootSpec{reason: finalizev1alpha1.ReasonProgressing, subject: controllerSubject(crdFinalizerBy), message: "the CRD finalizer is finishing", next: "wait"}
	}
	if condition := d.crdTerminating(o.Meta.Name); condition != "" {
		fd.message += " (" + condition + ")"
	}
	return fd
}

// crdTerminating is the CRD's Terminating condition, "reason: message", or "".
func (d *diagnoser) crdTerminating(name string) string {
	u, err := d.f.dyn.Resource(crdsResource.GroupVersionResource).Get(d.f.ctx, name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			d.f.warnf("could not read customresourcedefinition %s: %v", name, err)
		}
		return ""
	}
	condition := ""
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Terminating" {
			condition = fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
	}
	return condition
}
