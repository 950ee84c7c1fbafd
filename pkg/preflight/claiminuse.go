package preflight

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// claimInUse: claims deleted while pods that stay use them.
type claimInUse struct{}

func (claimInUse) reasons() []Reason {
	return []Reason{{
		Name: finalizev1alpha1.HazardClaimInUse, Rank: 5,
		Help:     "a claim is deleted while pods that stay use it",
		Deleted:  "a PersistentVolumeClaim used by scheduled, unfinished pods that are not deleted with it",
		Stranded: "the claim: `kubernetes.io/pvc-protection` keeps it until those pods are gone",
	}}
}

func (claimInUse) find(r *run) []finalizev1alpha1.Hazard {
	var out []finalizev1alpha1.Hazard
	claims := map[string]map[string]finalizev1alpha1.ObjectReference{}
	for _, c := range r.kept.claims {
		if r.set.has(c) {
			if claims[c.Namespace] == nil {
				claims[c.Namespace] = map[string]finalizev1alpha1.ObjectReference{}
			}
			claims[c.Namespace][c.Name] = c
		}
	}
	namespaces := make([]string, 0, len(claims))
	for ns := range claims {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		users := map[string][]string{}
		r.each(podsResource.GroupVersionResource, func(opts metav1.ListOptions) (runtime.Object, error) {
			return r.p.Clients.Kube.CoreV1().Pods(ns).List(r.ctx, opts)
		}, func(obj runtime.Object) {
			pod := obj.(*corev1.Pod)
			// kube-controller-manager's pvc-protection controller counts only scheduled pods
			// that have not finished: the kubelet refuses to start a pod on a claim being
			// deleted.
			if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || r.set.has(podsResource.Ref(pod.Namespace, pod.Name, pod.UID)) {
				return
			}
			for _, v := range pod.Spec.Volumes {
				var claim string
				switch {
				case v.PersistentVolumeClaim != nil:
					claim = v.PersistentVolumeClaim.ClaimName
				case v.Ephemeral != nil:
					// A generic ephemeral volume's claim is named POD-VOLUME.
					claim = pod.Name + "-" + v.Name
				default:
					continue
				}
				if _, ok := claims[ns][claim]; ok && !slices.Contains(users[claim], pod.Name) {
					users[claim] = append(users[claim], pod.Name)
				}
			}
		})
		names := make([]string, 0, len(users))
		for n := range users {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			pods := users[n]
			sort.Strings(pods)
			claim := claims[ns][n]
			out = append(out, finalizev1alpha1.Hazard{
				Reason: finalizev1alpha1.HazardClaimInUse, Cause: claim, Objects: []finalizev1alpha1.ObjectReference{claim},
				Message: fmt.Sprintf("claim %s/%s is deleted, but %s that the deletion does not remove still %s it (%s): kubernetes.io/pvc-protection keeps it Terminating until they are gone",
					ns, n, words.Count(len(pods), "pod"), map[bool]string{true: "uses", false: "use"}[len(pods) == 1], strings.Join(pods, ", ")),
				SafeOrder: append([]string{fmt.Sprintf("stop the pods that use it first (scale their workload down, or delete them): kubectl delete pods -n %s %s", ns, strings.Join(pods, " "))},
					r.finalSteps()...),
			})
		}
	}
	return out
}
