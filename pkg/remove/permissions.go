package remove

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// access is one permission a removal needs.
type access struct {
	verb, group, resource, subresource, namespace string
}

func (a access) String() string {
	what := a.resource
	if a.group != "" {
		what += "." + a.group
	}
	if a.subresource != "" {
		what += "/" + a.subresource
	}
	if a.namespace != "" {
		return fmt.Sprintf("%s %s in namespace %s", a.verb, what, a.namespace)
	}
	return a.verb + " " + what
}

// needs are the permissions one removal needs: the write itself (and the reads that
// guard it), and the Event that audits it (in the object's namespace, or default when
// that refuses it).
func needs(t *plan.Target) (write []access, events []access) {
	switch {
	case t.ForceDelete:
		write = []access{{verb: "delete", resource: "pods", namespace: t.Namespace}, {verb: "get", resource: "pods", namespace: t.Namespace}}
		if t.Node != "" {
			// The node's Lease is read, then listed by its name and watched from that
			// list's resourceVersion before the DELETE.
			write = append(write, access{verb: "get", resource: "nodes"},
				access{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: corev1.NamespaceNodeLease},
				access{verb: "list", group: "coordination.k8s.io", resource: "leases", namespace: corev1.NamespaceNodeLease},
				access{verb: "watch", group: "coordination.k8s.io", resource: "leases", namespace: corev1.NamespaceNodeLease})
		}
	case t.Field == finalizev1alpha1.FieldSpecFinalizers:
		write = []access{{verb: "update", resource: "namespaces", subresource: "finalize"}}
	default:
		write = []access{{verb: "patch", group: t.Resource.Group, resource: t.Resource.Resource, namespace: t.Namespace}}
	}
	events = []access{{verb: "create", group: "events.k8s.io", resource: "events", namespace: metav1.NamespaceDefault}}
	if t.Namespace != "" && t.Namespace != metav1.NamespaceDefault {
		events = append([]access{{verb: "create", group: "events.k8s.io", resource: "events", namespace: t.Namespace}}, events...)
	}
	return write, events
}

// permitted asks the API server (SelfSubjectAccessReview) for every permission the
// actions need, before anything is written. An action whose permissions are missing
// fails in its row, naming them, and is not attempted: no run stops halfway for lack of
// a permission. It reports which actions may go on.
func permitted(ctx context.Context, kube client.Interface, actions []plan.Action, rows []finalizev1alpha1.Removal) []bool {
	cache := map[access]error{}
	allowed := func(a access) error {
		if err, ok := cache[a]; ok {
			return err
		}
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace,
		}}}
		var err error
		switch got, rerr := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{}); {
		case rerr != nil:
			err = fmt.Errorf("could not ask whether it may %s: %w", a, rerr)
		case !got.Status.Allowed:
			err = fmt.Errorf("it may not %s", a)
		}
		cache[a] = err
		return err
	}
	ok := make([]bool, len(actions))
	for i := range actions {
		write, events := needs(&actions[i].Target)
		var err error
		for _, w := range write {
			if err = allowed(w); err != nil {
				break
			}
		}
		if err == nil {
			// One of the Event's namespaces is enough.
			var denied []string
			for _, e := range events {
				if eerr := allowed(e); eerr == nil {
					denied = nil
					break
				}
				denied = append(denied, e.namespace)
			}
			if len(denied) > 0 {
				err = fmt.Errorf("it may not create events.events.k8s.io in namespace %s, so the removal could not be audited", strings.Join(denied, " nor in "))
			}
		}
		if err != nil {
			rows[i].Result = finalizev1alpha1.ResultFailed
			rows[i].Error = fmt.Sprintf("not attempted: %v; grant it (kubectl finalize rbac --policy FILE prints what a pass needs)", err)
			continue
		}
		ok[i] = true
	}
	return ok
}
