package write

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// UnsafeDelete deletes the object t names, which the API server cannot read, with
// ignoreStoreReadErrorWithClusterBreakingPotential: true. It first reads the object once
// more: nothing is deleted unless that read fails with the "corrupt object" error, naming
// the key it was planned with (plan.ProveUnreadable). The API server checks the same again
// before it removes the key (it refuses the option for an object it can read), and sends
// neither its finalizers nor admission a word. No dry run is sent: the API server refuses
// dryRun with the option; the plan's proof is all a dry run shows.
func (r *Remover) UnsafeDelete(ctx context.Context, t plan.Target, dry DryRun) (Effect, error) {
	out := Effect{Attempts: 1}
	u := plan.Unreadable{Resource: t.Resource, Namespace: t.Namespace, Name: t.Name}
	c := r.metadataResource(&t)
	proof, refused := plan.ProveUnreadable(ctx, u, func(ctx context.Context) error {
		_, err := c.Get(ctx, t.Name, metav1.GetOptions{})
		return err
	})
	switch {
	case refused != nil && refused.ObjectGone:
		out.Result, out.Deleted, out.Observed = ObjectGone, true, true
		return out, nil
	case refused != nil:
		return out, fmt.Errorf("%s: not deleted: %s", t.String(), refused.Message)
	case t.Key != "" && proof.Key != t.Key:
		return out, fmt.Errorf("%s: not deleted: the API server's error names etcd key %q, not %q as planned: run again to decide it afresh", t.String(), proof.Key, t.Key)
	}
	if dry != DryRunNone {
		out.Result = WouldRemove
		return out, nil
	}
	if r.BeforeWrite != nil {
		r.BeforeWrite(1)
	}
	ordinary, err := r.deleteUnsafely(ctx, t)
	switch {
	case err == nil && ordinary:
		return out, fmt.Errorf("%s: the API server answered the DELETE with the object, as an ordinary deletion does, not with the unsafe deleter's Status: an API server without the %s feature gate took it, "+
			"and the object, restored in between, is being deleted the ordinary way, with its finalizers; nothing was deleted without reading it", t.String(), plan.FeatureGate)
	case err == nil:
		return r.afterUnsafeDelete(ctx, t, out)
	case strings.Contains(err.Error(), "no unsafe deleter provided"):
		return out, fmt.Errorf("%s: not deleted: the API server has no unsafe deletion of %s (%w)", t.String(), t.Resource.GroupResource(), err)
	case kube.IsNotFoundOf(err, t.Resource.GroupResource(), t.Name):
		out.Result, out.Deleted, out.Observed = ObjectGone, true, true
		return out, nil
	case apierrors.IsInvalid(err):
		// "is exclusively used to delete corrupt object(s)": the API server read it.
		return out, fmt.Errorf("%s: not deleted: the API server refused the option, it reads the object now: %w", t.String(), err)
	case unanswered(err) && scan.StorageFailure(err):
		// An API server without the gate dropped the option and failed to read the
		// object, as every read does: nothing was deleted.
		return out, fmt.Errorf("%s: not deleted: the API server that answered the DELETE failed to read the object (%w): it does not have the %s feature gate on "+
			"(an API server behind the same address may have it, and this one not): enable it on every kube-apiserver", t.String(), err, plan.FeatureGate)
	case unanswered(err):
		return out, fmt.Errorf("%s: the API server did not answer the DELETE (%w): whether the object was deleted is unknown until it is read again, which a rerun does", t.String(), err)
	}
	return out, writeError(t, err)
}

// unsafeDelete is UnsafeDelete as the write of the plan.UnsafeDelete kind: it is never
// decided again here.
func (r *Remover) unsafeDelete(ctx context.Context, t *plan.Target, dry DryRun, _ int) (Effect, bool, error) {
	out, err := r.UnsafeDelete(ctx, *t, dry)
	return out, false, err
}

// afterUnsafeDelete reads the object once the API server answered the DELETE: an unsafe
// deletion leaves nothing to read. An object read means an API server without the gate
// took the DELETE for an ordinary one (the object was restored in between): it is being
// deleted the ordinary way, with its finalizers, and nothing was deleted without reading
// it. One still unreadable means the answer deleted nothing.
func (r *Remover) afterUnsafeDelete(ctx context.Context, t plan.Target, out Effect) (Effect, error) {
	cur, err := r.metadataResource(&t).Get(ctx, t.Name, metav1.GetOptions{})
	switch {
	case kube.IsNotFoundOf(err, t.Resource.GroupResource(), t.Name):
		out.Result, out.Deleted, out.Observed = Removed, true, true
		return out, nil
	case err == nil:
		out.Remaining, out.Observed = cur.Finalizers, true
		return out, fmt.Errorf("%s: the API server read the object after the DELETE (uid %s, finalizers %v): an API server without the %s feature gate took the DELETE for an ordinary one, "+
			"so the object, restored in between, is being deleted the ordinary way, with its finalizers; nothing was deleted without reading it", t.String(), cur.UID, cur.Finalizers, plan.FeatureGate)
	case scan.StorageFailure(err):
		return out, fmt.Errorf("%s: the API server answered the DELETE, and still cannot read the object (%w): it was not deleted; run again", t.String(), err)
	}
	return out, fmt.Errorf("%s: the API server answered the DELETE, and reading the object afterwards failed (%w): whether it is gone is unknown (kubectl get it)", t.String(), err)
}

// deleteUnsafely sends the DELETE with ignoreStoreReadErrorWithClusterBreakingPotential,
// and says whether the API server's answer was an ordinary deletion's: the object (an
// API server without the gate drops the option), where the unsafe deleter answers with a
// bare Status. Without Raw, the answer is not read (ordinary is false).
func (r *Remover) deleteUnsafely(ctx context.Context, t plan.Target) (ordinary bool, err error) {
	opts := metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}, IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true)}
	if r.Raw == nil {
		return false, r.metadataResource(&t).Delete(ctx, t.Name, opts)
	}
	body, err := json.Marshal(opts)
	if err != nil {
		return false, err
	}
	answer, err := r.Raw.Delete().AbsPath(objectPath(t)).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Raw()
	if err != nil {
		return false, err
	}
	var kind metav1.TypeMeta
	if err := json.Unmarshal(answer, &kind); err != nil {
		return false, fmt.Errorf("the API server's answer to the DELETE is not an object (%w): whether it was deleted is unknown until it is read again", err)
	}
	return kind.Kind != "Status", nil
}

// objectPath is the API path of the object t names.
func objectPath(t plan.Target) string {
	p := "/apis/" + t.Resource.Group + "/" + t.Resource.Version
	if t.Resource.Group == "" {
		p = "/api/" + t.Resource.Version
	}
	if t.Namespace != "" {
		p += "/namespaces/" + url.PathEscape(t.Namespace)
	}
	return p + "/" + t.Resource.Resource + "/" + url.PathEscape(t.Name)
}
