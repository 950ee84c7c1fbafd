package remove

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// permitted asks the API server (SelfSubjectAccessReview) for every permission the
// actions need, before anything is written. An action whose permissions are missing
// fails in its row, naming them, and is not attempted: no run stops halfway for lack of
// a permission. It reports which actions may go on.
func permitted(ctx context.Context, kube client.Interface, actions []plan.Action, rows []finalizev1alpha1.Removal) []bool {
	cache := map[plan.Permission]error{}
	allowed := func(a plan.Permission) error {
		if err, ok := cache[a]; ok {
			return err
		}
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.Verb, Group: a.Group, Resource: a.Resource, Subresource: a.Subresource, Namespace: a.Namespace,
		}}}
		var err error
		switch got, rerr := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{}); {
		case rerr != nil:
			err = &unasked{perm: a, err: rerr}
		case !got.Status.Allowed:
			err = fmt.Errorf("it may not %s", a)
		}
		cache[a] = err
		return err
	}
	ok := make([]bool, len(actions))
	for i := range actions {
		t := &actions[i].Target
		var err error
		for _, w := range t.WriteKind().Permissions(t) {
			if err = allowed(w); err != nil {
				break
			}
		}
		if err == nil {
			// One of the Event's namespaces is enough.
			var denied []string
			var u *unasked
			for _, e := range plan.EventPermissions(t.Namespace) {
				eerr := allowed(e)
				if eerr == nil {
					denied, u = nil, nil
					break
				}
				if !errors.As(eerr, &u) {
					denied = append(denied, e.Namespace)
				}
			}
			switch {
			case u != nil: // one of them may be allowed: nothing says it is not
				err = u
			case len(denied) > 0:
				err = fmt.Errorf("it may not create events.events.k8s.io in namespace %s, so the removal could not be audited", strings.Join(denied, " nor in "))
			}
		}
		if err != nil {
			// The row names its object: a reason shared by many rows is still about each.
			rows[i].Result = finalizev1alpha1.ResultFailed
			var u *unasked
			if errors.As(err, &u) {
				// The API server did not answer: nothing says a grant is missing.
				rows[i].Error = fmt.Sprintf("not attempted: could not ask whether it may %s (for %s): %v; run it again", u.perm, rows[i].Target, u.err)
				continue
			}
			rows[i].Error = fmt.Sprintf("not attempted: %v (for %s); grant it (kubectl finalize rbac --policy FILE prints what a pass needs)", err, rows[i].Target)
			continue
		}
		ok[i] = true
	}
	return ok
}

// unasked is a permission the API server could not be asked about.
type unasked struct {
	perm plan.Permission
	err  error
}

func (u *unasked) Error() string {
	return fmt.Sprintf("could not ask whether it may %s: %v", u.perm, u.err)
}
func (u *unasked) Unwrap() error { return u.err }
