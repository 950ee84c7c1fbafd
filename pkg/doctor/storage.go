package doctor

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

func init() {
	register(family{
		causes: []Cause{
			{Reason: finalizev1alpha1.ReasonPodsUsingClaim, Priority: 2,
				Help: "scheduled pods still use the claim",
				Doc:  "like the pvc-protection controller of v1.36: every *scheduled* pod that references the claim, running or finished (a Succeeded pod holds the claim until it is deleted); a pod already being deleted and stuck itself is a stuck blocker, and the claim's root cause is the pod's, never \"delete the pod\""},
			{Reason: finalizev1alpha1.ReasonClaimStillBound, Priority: 2,
				Help: "the volume is still bound to its claim",
				Doc:  "the PV's phase is `Bound`; the claim is named (and diagnosed, if stuck)"},
		},
		finalizers: []rule{
			{applies: func(o *kube.Object, fin finalizev1alpha1.Finalizer) bool {
				return fin.Name == finalizerPVC && o.Resource.GroupResource() == claimsResource.GroupResource()
			},
				explain: func(d *diagnoser, o *kube.Object, _ finalizev1alpha1.Finalizer) []finding { return []finding{d.pvc(o)} }},
			{applies: func(o *kube.Object, fin finalizev1alpha1.Finalizer) bool {
				return fin.Name == finalizerPV && isVolume(o)
			},
				explain: func(d *diagnoser, o *kube.Object, _ finalizev1alpha1.Finalizer) []finding { return []finding{d.pv(o)} }},
		},
	})
}

// isVolume: o is a PersistentVolume.
func isVolume(o *kube.Object) bool {
	return o.Resource.Group == "" && o.Resource.Resource == "persistentvolumes"
}

const (
	pvcOwner = "pvc-protection controller (kube-controller-manager)"
	pvOwner  = "pv-protection controller (kube-controller-manager)"
)

// podsKey keys the pods of a namespace that mount a claim.
type podsKey string

// podsIn returns the pods of a namespace that mount a claim: listed in pages, only
// those kept. A list that failed is made again for the next claim.
func (f *facts) podsIn(ns string) ([]corev1.Pod, bool) {
	if pods, ok := f.read[podsKey(ns)]; ok {
		return pods.([]corev1.Pod), true
	}
	var pods []corev1.Pod
	err := f.each(func(opts metav1.ListOptions) (runtime.Object, error) {
		return f.kube.CoreV1().Pods(ns).List(f.ctx, opts)
	},
		metav1.ListOptions{}, func(obj runtime.Object) error {
			p := obj.(*corev1.Pod)
			var claims []corev1.Volume
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
					claims = append(claims, v)
				}
			}
			if len(claims) > 0 {
				pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, DeletionTimestamp: p.DeletionTimestamp},
					Spec: corev1.PodSpec{NodeName: p.Spec.NodeName, Volumes: claims}, Status: corev1.PodStatus{Phase: p.Status.Phase}})
			}
			return nil
		})
	if err != nil {
		f.warnf("could not list pods in namespace %s, so the pods that hold its claims are not named: %v", ns, err)
		return nil, false
	}
	f.read[podsKey(ns)] = pods
	return pods, true
}

// pvc: the claim goes once no scheduled pod references it. Like the pvc-protection
// controller, a completed pod still counts until it is deleted.
func (d *diagnoser) pvc(o *kube.Object) finding {
	pods, ok := d.f.podsIn(o.Meta.Namespace)
	if !ok {
		return rooted(finalizev1alpha1.ReasonUnknown, subjectOf(o), "the pods of the namespace could not be read",
			"run the doctor with permission to list pods", "the pods that may use the claim could not be read")
	}
	fd := finding{reason: finalizev1alpha1.ReasonPodsUsingClaim}
	var names []string
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || !usesClaim(p, o.Meta.Name) {
			continue
		}
		state := strings.TrimSpace(fmt.Sprintf("%s on node %s", p.Status.Phase, p.Spec.NodeName))
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			state += "; a finished pod holds the claim until it is deleted"
		}
		// A pod already being deleted is not deleted again: what holds it holds the claim.
		if stuck, ok := d.f.byUID[p.UID]; ok {
			state += "; already being deleted, and stuck itself"
			fd.blockers = append(fd.blockers, stuckBlocker(stuck, state))
			fd.waitsOn = append(fd.waitsOn, stuck)
			names = append(names, fmt.Sprintf("%s (%s)", p.Name, state))
			if fd.next == "" {
				fd.next = fmt.Sprintf("pod %s -n %s is already being deleted: see its cause (what holds it, and who removes that); the claim is released once the pod is gone", p.Name, p.Namespace)
			}
			continue
		}
		if p.DeletionTimestamp != nil {
			// A pod's deletionTimestamp is when its grace period ends, not when its
			// deletion began.
			state += "; being deleted"
		}
		fd.blockers = append(fd.blockers, finalizev1alpha1.Blocker{Target: podsResource.Ref(p.Namespace, p.Name, p.UID), Message: state})
		names = append(names, fmt.Sprintf("%s (%s)", p.Name, state))
		if fd.root == nil {
			fd.next = fmt.Sprintf("delete pod %s -n %s, or scale down what runs it; the claim is released once no scheduled pod references it", p.Name, p.Namespace)
			if p.DeletionTimestamp != nil {
				fd.next = fmt.Sprintf("pod %s -n %s is already being deleted: wait for it to go, or run kubectl finalize doctor pod/%s -n %s if it stays; the claim is released once it is gone", p.Name, p.Namespace, p.Name, p.Namespace)
			}
			fd.root = &rootSpec{reason: finalizev1alpha1.ReasonPodsUsingClaim, subject: finalizev1alpha1.Subject{Kind: "Pod", Namespace: p.Namespace, Name: p.Name},
				message: fmt.Sprintf("pod %s/%s still mounts claims that are being deleted", p.Namespace, p.Name), next: fd.next}
		}
	}
	switch len(names) {
	case 0:
		return rooted(finalizev1alpha1.ReasonControllerInactive, controllerSubject(pvcOwner),
			"no scheduled pod references the claim, yet kubernetes.io/pvc-protection stays: the pvc-protection controller of kube-controller-manager is not acting",
			"check that kube-controller-manager runs with the persistentvolumeclaim-protection controller",
			"the pvc-protection controller is not releasing unused claims")
	case 1:
		fd.message = "a scheduled pod still uses the claim: " + names[0]
	default:
		fd.message = fmt.Sprintf("%d scheduled pods still use the claim: %s", len(names), strings.Join(names, ", "))
	}
	return fd
}

func usesClaim(p *corev1.Pod, claim string) bool {
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
		if v.Ephemeral != nil && p.Name+"-"+v.Name == claim {
			return true
		}
	}
	return false
}

// pv: the volume goes once it is no longer bound.
func (d *diagnoser) pv(o *kube.Object) finding {
	pv, err := d.f.kube.CoreV1().PersistentVolumes().Get(d.f.ctx, o.Meta.Name, metav1.GetOptions{})
	if err != nil {
		d.f.warnf("could not read persistentvolume %s: %v", o.Meta.Name, err)
		return rooted(finalizev1alpha1.ReasonUnknown, subjectOf(o), "the volume could not be read: "+err.Error(),
			"run the doctor with permission to get persistentvolumes", "the volume could not be read")
	}
	if pv.Status.Phase != corev1.VolumeBound {
		return rooted(finalizev1alpha1.ReasonControllerInactive, controllerSubject(pvOwner),
			fmt.Sprintf("the volume is %s, not bound, yet kubernetes.io/pv-protection stays: the pv-protection controller of kube-controller-manager is not acting", pv.Status.Phase),
			"check that kube-controller-manager runs with the persistentvolume-protection controller",
			"the pv-protection controller is not releasing unbound volumes")
	}
	cr := pv.Spec.ClaimRef
	if cr == nil {
		msg := "the volume is Bound but names no claim"
		return rooted(finalizev1alpha1.ReasonClaimStillBound, subjectOf(o), msg, "inspect the volume: kubectl get pv "+pv.Name+" -o yaml", msg)
	}
	if s, ok := d.f.byUID[cr.UID]; ok {
		return finding{reason: finalizev1alpha1.ReasonClaimStillBound,
			message:  fmt.Sprintf("bound to claim %s/%s, which is stuck itself", cr.Namespace, cr.Name),
			waitsOn:  []*kube.Object{s},
			blockers: []finalizev1alpha1.Blocker{stuckBlocker(s, "bound claim")},
			next:     "the volume is released once its claim is gone: see the claim's cause"}
	}
	fd := rooted(finalizev1alpha1.ReasonClaimStillBound, finalizev1alpha1.Subject{Kind: "PersistentVolumeClaim", Namespace: cr.Namespace, Name: cr.Name},
		fmt.Sprintf("still bound to claim %s/%s", cr.Namespace, cr.Name),
		fmt.Sprintf("delete claim %s -n %s first (after its data is safe); the volume is released once the claim is gone", cr.Name, cr.Namespace),
		fmt.Sprintf("claim %s/%s still binds volumes that are being deleted", cr.Namespace, cr.Name))
	fd.blockers = []finalizev1alpha1.Blocker{{Target: claimsResource.Ref(cr.Namespace, cr.Name, cr.UID), Message: "bound"}}
	return fd
}
