package preflight

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// alreadyFailing: what already blocks the namespace controller before anything is
// deleted. An APIService the aggregator finds unavailable, whose group version this run
// could not discover either: the namespace controller's discovery fails the same way,
// and it never finalizes a namespace after a discovery error. A CRD whose conversion
// webhook fails, when a list of the type in a namespace of the deletion, made now as
// the namespace controller makes it, fails with the conversion error. Each is a fact
// read now from the party that owns it (the aggregator's condition and the API server's
// own discovery; the API server's answer to the controller's list), so the hazard is
// certain, not a guess from what could not be read; anything short of both is left an
// incomplete type, as before.
type alreadyFailing struct{}

func (alreadyFailing) reasons() []Reason {
	return []Reason{{
		Name: finalizev1alpha1.HazardAPIServiceUnavailable, Rank: 0,
		Help:     "an APIService is already unavailable: no namespace in the cluster can finish deleting until it is back or deleted",
		Deleted:  "any namespace, while an APIService the deletion keeps is already unavailable (its `Available` condition False, and its group version not discovered now)",
		Stranded: "every namespace of the deletion: the namespace controller cannot discover every type, and it does not finish a namespace after a discovery error",
	}, {
		Name: finalizev1alpha1.HazardConversionWebhookUnavailable, Rank: 0,
		Help:     "a CRD's conversion webhook already fails, and a list of the type in a namespace of the deletion, made now as the namespace controller makes it, fails",
		Deleted:  "a namespace where a list of a CRD's type, made now as the namespace controller makes it (its preferred version, unpaginated), fails with the error of the CRD's conversion webhook",
		Stranded: "that namespace: the namespace controller cannot list the type in it, so it cannot finish; once the API server's watch cache of the type gives up, every namespace",
	}}
}

func (alreadyFailing) find(r *run) []finalizev1alpha1.Hazard {
	if len(r.set.namespaces) == 0 {
		return nil
	}
	namespaces := make([]string, 0, len(r.set.namespaces))
	for n := range r.set.namespaces {
		namespaces = append(namespaces, n)
	}
	sort.Strings(namespaces)
	return append(r.unavailableAPIServices(namespaces), r.failingConversions(namespaces)...)
}

// settled is how long an APIService must have been unavailable to be taken as broken,
// not in a rollout of its server: a minute, several of the aggregator's availability
// checks.
const settled = time.Minute

// unavailableAPIServices: each APIService the deletion keeps that the aggregator finds
// unavailable and whose group version this run could not discover.
func (r *run) unavailableAPIServices(namespaces []string) []finalizev1alpha1.Hazard {
	var undiscovered []string
	for _, in := range r.res.Incomplete {
		if in.Reason == finalizev1alpha1.ReasonDiscoveryFailed {
			undiscovered = append(undiscovered, in.GroupVersion)
		}
	}
	if len(undiscovered) == 0 {
		return nil
	}
	var out []finalizev1alpha1.Hazard
	r.eachAPIService(func(u *unstructured.Unstructured) {
		a := kube.ParseAPIService(u)
		ref := apiServicesResource.Ref("", u.GetName(), u.GetUID())
		switch {
		case !slices.Contains(undiscovered, a.GroupVersion()):
			return
		case !a.Reported:
			r.warnf("%s could not be discovered, and APIService %s has no Available condition yet: whether it blocks the deletion is not known", a.GroupVersion(), a.Name)
			return
		case a.Available:
			r.warnf("%s could not be discovered, but APIService %s's Available condition says %s: whether it blocks the deletion is not known", a.GroupVersion(), a.Name, a.Status)
			return
		case a.Since.IsZero() || r.res.Now.Sub(a.Since) < settled:
			// A rollout of its server makes it unavailable for seconds.
			r.warnf("APIService %s became unavailable %s ago (%s): it may be a rollout of its server, so whether it blocks the deletion is not known yet; run preflight again in a minute",
				a.Name, r.res.Now.Sub(a.Since).Round(time.Second), a.State())
			return
		case r.set.has(ref):
			// Deleted with the rest: discovery recovers once it is gone, and the
			// namespace controller retries.
			return
		}
		hz := finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardAPIServiceUnavailable, Cause: ref, Objects: []finalizev1alpha1.ObjectReference{}}
		for _, n := range namespaces {
			hz.Objects = append(hz.Objects, r.namespaceRef(n))
		}
		sortRefs(hz.Objects)
		behind := ""
		if a.Service != nil {
			behind = fmt.Sprintf(" (service %s)", a.Service)
		}
		hz.Message = fmt.Sprintf("APIService %s%s %s now, and %s cannot be discovered now: the namespace controller discovers every type before it deletes a namespace's content, and it does not finish a namespace after a discovery error, so no namespace in the cluster can finish deleting while it stays so",
			a.Name, behind, a.State(), a.GroupVersion())
		hz.SafeOrder = append([]string{fmt.Sprintf("first make APIService %s available again (kubectl get %s must say Available True), or delete it if its API is no longer installed: kubectl delete %s",
			a.Name, ref.ResourceName(), ref.ResourceName())}, r.finalSteps()...)
		out = append(out, hz)
	})
	return out
}

// failingConversions: each type whose list failed in its CRD's conversion webhook, with
// the namespaces of the deletion where the same list, made now in the namespace, fails.
// The lists are made --concurrency at a time: while the type's watch cache cannot
// initialize, the API server holds each one for many seconds before it answers (16 s
// measured, kube v1.36).
func (r *run) failingConversions(namespaces []string) []finalizev1alpha1.Hazard {
	type failing struct {
		in   finalizev1alpha1.IncompleteResource
		fail scan.ConversionFailure
		gvr  schema.GroupVersionResource
		live []scan.LiveList // by namespace
	}
	var types []*failing
	for _, in := range r.res.Incomplete {
		if in.Reason != finalizev1alpha1.ReasonConversionWebhookUnavailable {
			continue
		}
		fails := scan.ConversionFailures(in.Message)
		gv, err := schema.ParseGroupVersion(in.GroupVersion)
		if len(fails) == 0 || err != nil || in.Resource == "" || !r.namespaced(gv.WithResource(in.Resource)) {
			continue
		}
		types = append(types, &failing{in: in, fail: fails[0], gvr: gv.WithResource(in.Resource), live: make([]scan.LiveList, len(namespaces))})
	}
	var g errgroup.Group
	g.SetLimit(max(r.opts.Scan.Concurrency, 1))
	for _, f := range types {
		for i, n := range namespaces {
			g.Go(func() error {
				f.live[i] = scan.ListNow(r.ctx, r.p.Clients.Discovery, r.p.Clients.Dynamic, f.gvr, n)
				return nil
			})
		}
	}
	_ = g.Wait()

	var out []finalizev1alpha1.Hazard
	for _, f := range types {
		gvr := f.gvr
		crd := r.crdRef(gvr.Resource + "." + gvr.Group)
		hz := finalizev1alpha1.Hazard{Reason: finalizev1alpha1.HazardConversionWebhookUnavailable, Cause: crd, Objects: []finalizev1alpha1.ObjectReference{}}
		var stuck []string
		converting := false
		for i, n := range namespaces {
			switch live := f.live[i]; {
			case live.Failing || live.CacheDown:
				// Refused because the type's watch cache cannot start while the webhook
				// fails: the namespace controller's list is refused the same way now.
				hz.Objects = append(hz.Objects, r.namespaceRef(n))
				stuck = append(stuck, n)
				converting = converting || live.Failing
			case live.OK:
				r.warnf("the conversion webhook of CRD %s fails, but a list of %s in namespace %s made now succeeds (%s): it does not block that namespace now; it will once the API server's watch cache of the type gives up",
					crd.Name, gvr.Resource, n, scan.ListNowCommand(gvr, n))
			default:
				r.warnf("the conversion webhook of CRD %s fails; whether it blocks namespace %s could not be checked: %v", crd.Name, n, live.Err)
			}
		}
		if len(stuck) == 0 {
			continue
		}
		via := ""
		switch {
		case f.fail.Service != "":
			via = " (service " + f.fail.Service + ")"
		case f.fail.URL != "":
			via = " (" + f.fail.URL + ")"
		}
		how := "fails with it"
		if !converting {
			how = fmt.Sprintf("fails: the API server refuses it (429 %q), as its watch cache of the type cannot start while the webhook fails", "storage is (re)initializing")
		}
		hz.Message = fmt.Sprintf("the conversion webhook of CRD %s%s already fails: %s; a list of %s at %s in %s, made now as the namespace controller makes it (%s), %s, so the namespace controller cannot delete that content and the namespace stays Terminating until the webhook answers",
			crd.Name, via, f.fail.Problem(), gvr.Resource, gvr.GroupVersion(), namespaceWords(stuck), scan.ListNowCommand(gvr, stuck[0]), how)
		hz.SafeOrder = append([]string{fmt.Sprintf("first make the conversion webhook of CRD %s answer (%s): the list above succeeds once it does",
			crd.Name, f.fail.Problem())}, r.finalSteps()...)
		out = append(out, hz)
	}
	return out
}

// namespaceWords is "namespace a" or "namespaces a, b".
func namespaceWords(names []string) string {
	if len(names) == 1 {
		return "namespace " + names[0]
	}
	s := "namespaces "
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// namespaced says whether the scan listed gvr as a namespaced type: the namespace
// controller lists only those.
func (r *run) namespaced(gvr schema.GroupVersionResource) bool {
	for _, res := range r.res.Resources {
		if res.GroupVersionResource == gvr {
			return res.Namespaced
		}
	}
	return false
}
