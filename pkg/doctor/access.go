package doctor

import (
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/controller"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// access is what a controller's ServiceAccount may do with one stuck object, as the
// API server's authorizers answer a SubjectAccessReview: RBAC and any other.
type access struct {
	// serviceAccount is "namespace/name".
	serviceAccount string
	// user is the ServiceAccount's user name, for kubectl auth can-i --as.
	user string
	// missing are the permissions without which it cannot remove its finalizer: watch
	// and list the type in the object's namespace (else it never sees the object), and
	// patch or update the object.
	missing []string
	// notes are permissions it lacks that only some clusters require.
	notes []string
	// checked is false when the review could not be made.
	checked bool
	// clusterWide: list and watch were allowed at cluster scope, so an informer over
	// every namespace may list the type; false when they were allowed only in the
	// object's namespace (a RoleBinding there).
	clusterWide bool
	// writeVerb is the write allowed ("patch", else "update"), when one is.
	writeVerb string
}

// accessOf asks whether w's ServiceAccount may watch o's type where o is and patch or
// update objects of that type there. The questions name no object: a controller's RBAC
// names types, not the objects it will be given, and so a thousand idle objects of one
// type in one namespace cost five reviews, not five thousand. They are asked at cluster
// scope first, and in the namespace only when denied there, so a controller allowed
// cluster-wide costs five reviews whatever the number of namespaces. Each distinct
// question is asked once per diagnosis.
func (f *facts) accessOf(w *controller.Workload, o *kube.Object) access {
	a := access{serviceAccount: w.Namespace + "/" + w.ServiceAccount, user: "system:serviceaccount:" + w.Namespace + ":" + w.ServiceAccount}
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + w.Namespace, "system:authenticated"}
	attrs := func(verb, name, sub string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Namespace: o.Meta.Namespace, Verb: verb, Group: o.Resource.Group, Version: o.Resource.Version,
			Resource: o.Resource.Resource, Subresource: sub, Name: name}
	}
	// Asked at cluster scope first: a controller's RBAC is most often a ClusterRole bound
	// cluster-wide, and one answer then holds for every namespace. Only a denial there
	// is asked again in the object's namespace (a RoleBinding may grant it there).
	// It also says whether the answer was given at cluster scope.
	askWhere := func(verb, sub string) (ok, checked, cluster bool) {
		at := attrs(verb, "", sub)
		if o.Meta.Namespace != "" {
			all := at
			all.Namespace = metav1.NamespaceAll
			if ok, checked := f.may(a.user, groups, all); !checked || ok {
				return ok, checked, true
			}
			ok, checked := f.may(a.user, groups, at)
			return ok, checked, false
		}
		ok, checked = f.may(a.user, groups, at)
		return ok, checked, true
	}
	ask := func(verb, sub string) (bool, bool) {
		ok, checked, _ := askWhere(verb, sub)
		return ok, checked
	}
	where := inNamespace(o)
	var missingWatch []string
	a.clusterWide = true
	for _, verb := range []string{"list", "watch"} {
		ok, checked, cluster := askWhere(verb, "")
		if !checked {
			return a
		}
		if !ok {
			missingWatch = append(missingWatch, verb)
		}
		a.clusterWide = a.clusterWide && ok && cluster
	}
	if len(missingWatch) > 0 {
		a.missing = append(a.missing, fmt.Sprintf("%s %s %s (it never sees the object)", strings.Join(missingWatch, " and "), o.Resource, where))
	}
	patch, checked := ask("patch", "")
	if !checked {
		return a
	}
	update, checked := ask("update", "")
	if !checked {
		return a
	}
	if !patch && !update {
		// RBAC may grant the write for some objects only (resourceNames): denied for the
		// type, it is asked again for this object before it is said missing.
		named, ok := f.may(a.user, groups, attrs("patch", o.Meta.Name, ""))
		if !ok {
			return a
		}
		patch = named
	}
	switch {
	case patch:
		a.writeVerb = "patch"
	case update:
		a.writeVerb = "update"
	default:
		a.missing = append(a.missing, fmt.Sprintf("patch or update %s %s (it cannot remove its finalizer)", o.Resource, where))
	}
	finalizers, checked := ask("update", "finalizers")
	if !checked {
		return a
	}
	if !finalizers {
		a.notes = append(a.notes, fmt.Sprintf("it may not update %s/finalizers, which clusters that enforce owner-reference permissions (the OwnerReferencesPermissionEnforcement admission plugin, on in OpenShift) require of a controller that sets blockOwnerDeletion on what it creates for the object", o.Resource))
	}
	a.checked = true
	return a
}

// may asks the API server whether user may do what attrs say. It returns whether the
// review was made. A review that fails (refused, timing out, or any other error) is
// said once, and no more are asked: an authorizer that times out is not asked again for
// every object.
func (f *facts) may(user string, groups []string, attrs authorizationv1.ResourceAttributes) (allowed, checked bool) {
	if f.read[reviewsRefusedKey{}] != nil {
		return false, false
	}
	key := reviewKey{user, attrs}
	if v, ok := f.read[key]; ok {
		return v.(bool), true
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs}}
	got, err := f.kube.AuthorizationV1().SubjectAccessReviews().Create(f.ctx, sar, metav1.CreateOptions{})
	if err != nil {
		f.read[reviewsRefusedKey{}] = true
		f.warnf("could not ask whether controllers' ServiceAccounts may act on the objects they hold (SubjectAccessReview): %v", err)
		return false, false
	}
	f.read[key] = got.Status.Allowed
	return got.Status.Allowed, true
}

// reviewKey keys the answer of one SubjectAccessReview; reviewsRefusedKey is set once
// a review failed, and no more are asked.
type (
	reviewKey struct {
		user  string
		attrs authorizationv1.ResourceAttributes
	}
	reviewsRefusedKey struct{}
)

// allowed says exactly what the reviews allowed, and what that does not show. Only
// meaningful when the reviews were made and nothing is missing.
func (a *access) allowed(o *kube.Object) string {
	if o.Meta.Namespace == "" {
		return fmt.Sprintf("SubjectAccessReviews allow its ServiceAccount %s to list and watch %s and to %s them: its permissions do not stop it seeing the object or removing its finalizer",
			a.serviceAccount, o.Resource, a.writeVerb)
	}
	if a.clusterWide {
		return fmt.Sprintf("SubjectAccessReviews allow its ServiceAccount %s to list and watch %s cluster-wide and to %s them in namespace %s: its permissions do not stop it seeing the object or removing its finalizer (whether it watches namespace %s is another matter)",
			a.serviceAccount, o.Resource, a.writeVerb, o.Meta.Namespace, o.Meta.Namespace)
	}
	return fmt.Sprintf("SubjectAccessReviews allow its ServiceAccount %s to list and watch %s in namespace %s only, not cluster-wide, and to %s them there: if it watches every namespace (most controllers do unless told which), its informer's cluster-wide list is refused and it never sees the object; check %s",
		a.serviceAccount, o.Resource, o.Meta.Namespace, a.writeVerb, a.canIAll("list", o))
}

// canIAll asks, as a person, whether it may verb o's type in every namespace.
func (a *access) canIAll(verb string, o *kube.Object) string {
	return fmt.Sprintf("kubectl auth can-i %s %s -A --as %s", verb, o.Resource, a.user)
}

// canI is the command that asks the same question as a person.
func (a *access) canI(verb string, o *kube.Object) string {
	cmd := fmt.Sprintf("kubectl auth can-i %s %s", verb, o.Resource)
	if o.Meta.Namespace != "" {
		cmd += " -n " + o.Meta.Namespace
	}
	return cmd + " --as " + a.user
}

// mayNot says what w's ServiceAccount lacks (a.missing), naming the workload.
func (a access) mayNot(w *controller.Workload) string {
	return fmt.Sprintf("ServiceAccount %s (of %s %s/%s) may not %s", a.serviceAccount, w.Kind, w.Namespace, w.Name, strings.Join(a.missing, ", nor "))
}
