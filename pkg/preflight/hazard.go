package preflight

import (
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/pager"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// A hazard finds one family of ways a deletion would leave objects stuck, each in a file
// of its own: unavailable.go (what already blocks the namespace controller),
// controllerdeleted.go (ControllerDeleted, OperatorDeletedFirst), crdinstances.go,
// webhookservice.go (admission webhooks), conversionwebhook.go, apiserviceservice.go,
// claiminuse.go. What they share: controller.go (who removes a finalizer, and whether
// the deletion takes it away), service.go (whether it takes a service away), and the
// safe orders below.
type hazard interface {
	// reasons are the reasons it gives that no other family registers.
	reasons() []Reason
	// find returns the hazards of its family: what the deletion would leave stuck,
	// why, and a safe order. A read that fails makes the prediction incomplete.
	find(r *run) []finalizev1alpha1.Hazard
}

// hazards are every family, in the order they are looked for.
var hazards = []hazard{alreadyFailing{}, controllerDeleted{}, crdInstances{}, webhookService{}, conversionWebhook{}, apiServiceService{}, claimInUse{}}

// A Reason is a hazard's reason as scripts, `preflight --help` and docs/preflight.md know
// it. Each family declares the reasons it gives in its own file.
type Reason struct {
	// Name is Hazard.Reason: part of the contract.
	Name string
	// Rank orders a report's hazards: those that block everyone first (0).
	Rank int
	// Help says when it is given, in a few words, in preflight's --help.
	Help string
	// Deleted and Stranded are the columns of docs/preflight.md's table (Markdown): what
	// is deleted, and what is left stuck.
	Deleted, Stranded string
}

// reasons are every family's reasons by name, and rank their ranks.
var reasons, rank = func() (map[string]Reason, map[string]int) {
	byName, ranks := map[string]Reason{}, map[string]int{}
	for _, h := range hazards {
		for _, r := range h.reasons() {
			if _, dup := byName[r.Name]; dup {
				panic(fmt.Sprintf("preflight: reason %s declared twice", r.Name))
			}
			byName[r.Name], ranks[r.Name] = r, r.Rank
		}
	}
	return byName, ranks
}()

// Reasons are every reason a hazard is given for, in a report's order.
func Reasons() []Reason {
	out := make([]Reason, 0, len(reasons))
	for _, r := range reasons {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Rank != out[j].Rank {
			return out[i].Rank < out[j].Rank
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// The types the hazards name.
var (
	namespacesResource  = kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace"}
	podsResource        = kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}
	crdsResource        = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Kind: "CustomResourceDefinition"}
	apiServicesResource = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}, Kind: "APIService"}
	validatingResource  = kube.Resource{GroupVersionResource: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"), Kind: "ValidatingWebhookConfiguration"}
	mutatingResource    = kube.Resource{GroupVersionResource: admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"), Kind: "MutatingWebhookConfiguration"}
)

// grouped gathers the hazards of one family by a key of its own, in the order they were
// first found, each object once.
type grouped[K comparable] struct {
	byKey map[K]*finalizev1alpha1.Hazard
	seen  map[K]map[types.UID]bool
	keys  []K
}

func (g *grouped[K]) add(key K, newHazard func() finalizev1alpha1.Hazard, objs ...finalizev1alpha1.ObjectReference) *finalizev1alpha1.Hazard {
	if g.byKey == nil {
		g.byKey, g.seen = map[K]*finalizev1alpha1.Hazard{}, map[K]map[types.UID]bool{}
	}
	hz, ok := g.byKey[key]
	if !ok {
		made := newHazard()
		hz = &made
		g.byKey[key], g.seen[key] = hz, map[types.UID]bool{}
		g.keys = append(g.keys, key)
	}
	for _, o := range objs {
		if !g.seen[key][o.UID] {
			g.seen[key][o.UID] = true
			hz.Objects = append(hz.Objects, o)
		}
	}
	return hz
}

// each lists a collection in pages; a failed list makes the prediction incomplete.
func (r *run) each(gvr schema.GroupVersionResource, list func(metav1.ListOptions) (runtime.Object, error), fn func(runtime.Object)) {
	p := pager.New(pager.SimplePageFunc(list))
	p.PageSize = r.opts.Scan.ChunkSize
	err := p.EachListItem(r.ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		fn(obj)
		return nil
	})
	if err != nil {
		r.incomplete(gvr, err)
	}
}

// nsLabels are the labels a namespaceSelector is matched against.
func (r *run) nsLabels(o *kube.Object) map[string]string {
	if o.Resource.IsNamespaces() {
		return o.Meta.Labels
	}
	return r.kept.nsLabels[o.Meta.Namespace]
}

// namespaceRef is the reference to a namespace, uid included when it was listed.
func (r *run) namespaceRef(name string) finalizev1alpha1.ObjectReference {
	for _, t := range r.rep.Targets {
		if t.GroupResource() == namespacesResource.GroupResource() && t.Name == name {
			return t
		}
	}
	return namespacesResource.Ref("", name, "")
}

// crdRef is the reference to a CRD among the targets.
func (r *run) crdRef(name string) finalizev1alpha1.ObjectReference {
	for _, t := range r.rep.Targets {
		if t.GroupResource() == crdResource && t.Name == name {
			return t
		}
	}
	return crdsResource.Ref("", name, "")
}

// finalSteps say how to go on with the deletion once the hazard is out of the way.
func (r *run) finalSteps() []string {
	if r.rep.HelmRelease != "" {
		ns, name, _ := strings.Cut(r.rep.HelmRelease, "/")
		return []string{fmt.Sprintf("then uninstall the release: helm uninstall %s -n %s", name, ns)}
	}
	var cmds []string
	for _, t := range r.rep.Targets {
		cmds = append(cmds, "kubectl delete "+t.String())
	}
	return []string{"then delete what was asked: " + strings.Join(cmds, "; ")}
}

// deleteCommands are kubectl delete commands for refs, one per type and namespace.
func deleteCommands(refs []finalizev1alpha1.ObjectReference) []string {
	type group struct{ namespace, resource string }
	names := map[group][]string{}
	var order []group
	for _, ref := range refs {
		g := group{ref.Namespace, ref.GroupResource().String()}
		if _, ok := names[g]; !ok {
			order = append(order, g)
		}
		names[g] = append(names[g], ref.Name)
	}
	out := make([]string, 0, len(order))
	for _, g := range order {
		cmd := "kubectl delete " + g.resource
		if g.namespace != "" {
			cmd += " -n " + g.namespace
		}
		out = append(out, cmd+" "+strings.Join(names[g], " "))
	}
	return out
}

// stayStuck is "1 object that stays would be stuck the day it is deleted".
func stayStuck(n int, noun string) string {
	if n == 1 {
		return "1 " + noun + " that stays would be stuck the day it is deleted"
	}
	return fmt.Sprintf("%d %ss that stay would be stuck the day they are deleted", n, noun)
}
