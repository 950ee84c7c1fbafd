package plan

import (
	"context"
	"fmt"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// Kind is what a removal writes: the removal of a finalizer from metadata.finalizers
// (Patch), of a namespace's own finalizer from spec.finalizers (Finalize), the force
// deletion of a pod (ForceDelete), or the deletion of an object the API server cannot
// read (UnsafeDelete). Each kind is one file of this package, with what is
// particular to it: its name in the API, what refuses it, the permissions its write needs
// and the reason of its audit lines and Event. Its write is its file of the same name in
// pkg/remove/write.
type Kind interface {
	// Action names the kind in the API (Removal.Action): empty for the removal of a
	// finalizer, which was the only kind before there were others.
	Action() finalizev1alpha1.RemovalAction
	// Describe names a target of the kind in errors: "finalizer F of configmaps/cfg -n a".
	Describe(t *Target) string
	// Permissions are what the write of t asks of the API server: the write, and the
	// reads that guard it. The Event that audits it is every kind's (EventPermissions).
	Permissions(t *Target) []Permission
	// Reason is the reason of the Event and the action of the audit lines of a removal
	// of the kind, verified by a rule or forced by a person.
	Reason(verified bool) string
	// Event is the action of the Event that records a removal of t, and how its note
	// begins.
	Event(t *Target) (action, note string)

	// refuse says why a planned removal of the kind may not happen, beyond what refuses
	// every kind (a system finalizer, no verification), or nil.
	refuse(ctx context.Context, p *Planner, a *Action, o *kube.Object, opts Options) *Refusal
}

// Kinds are every kind of removal, in the order the documentation lists them.
var Kinds = []Kind{Patch, Finalize, ForceDelete, UnsafeDelete}

// PersonOnly are the kinds only a person's `remove` makes, one object per run after a
// typed confirmation: reconcile never plans them, the runner refuses a plan that holds
// one without a person's confirmation, and `rbac` never grants their write.
var PersonOnly = map[Kind]bool{UnsafeDelete: true}

// finalizerKind is the kind of the removal of a finalizer in field: the patch of
// metadata.finalizers, or a namespace's /finalize for spec.finalizers.
func finalizerKind(field string) Kind {
	if field == finalizev1alpha1.FieldSpecFinalizers {
		return Finalize
	}
	return Patch
}

// Permission is one permission a removal needs: a verb on a resource (and subresource),
// in a namespace or cluster-wide.
type Permission struct {
	Verb, Group, Resource, Subresource, Namespace string
}

// What is the resource as RBAC names it: "leases.coordination.k8s.io",
// "namespaces/finalize".
func (p Permission) What() string {
	what := p.Resource
	if p.Group != "" {
		what += "." + p.Group
	}
	if p.Subresource != "" {
		what += "/" + p.Subresource
	}
	return what
}

func (p Permission) String() string {
	if p.Namespace != "" {
		return fmt.Sprintf("%s %s in namespace %s", p.Verb, p.What(), p.Namespace)
	}
	return p.Verb + " " + p.What()
}

// EventPermissions are what the Event that audits a removal in namespace needs: create
// events in that namespace or, when it refuses them (a terminating namespace, or a
// cluster-scoped object's, which has none), in default.
func EventPermissions(namespace string) []Permission {
	events := []Permission{{Verb: "create", Group: "events.k8s.io", Resource: "events", Namespace: "default"}}
	if namespace != "" && namespace != "default" {
		events = append([]Permission{{Verb: "create", Group: "events.k8s.io", Resource: "events", Namespace: namespace}}, events...)
	}
	return events
}
