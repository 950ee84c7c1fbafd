package write

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// patch makes one attempt at the removal of a finalizer from metadata.finalizers (the
// plan.Patch kind); again reports that the object changed and the removal must be
// decided anew.
func (r *Remover) patch(ctx context.Context, t *plan.Target, dry DryRun, attempt int) (Effect, bool, error) {
	if err := decidedFor(t); err != nil {
		return Effect{}, false, err
	}
	res := r.metadataResource(t)
	idx := -1
	if attempt == 1 && t.ResourceVersion != "" && t.Finalizers != nil && dry != DryRunClient {
		// Pinned to what was verified: the guarded write itself checks that nothing changed.
		idx = slices.Index(t.Finalizers, t.Finalizer)
	}
	if idx < 0 {
		cur, err := res.Get(ctx, t.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return Effect{Result: ObjectGone, Deleted: true}, false, nil
		}
		if err != nil {
			return Effect{}, false, fmt.Errorf("reading %s: %w", t.Ref, err)
		}
		if cur.UID != t.UID {
			return Effect{}, false, fmt.Errorf("%s: %w (uid %s, expected %s): nothing was removed", t.String(), ErrUIDChanged, cur.UID, t.UID)
		}
		if idx = slices.Index(cur.Finalizers, t.Finalizer); idx < 0 {
			return Effect{Result: AlreadyRemoved, Remaining: cur.Finalizers}, false, nil
		}
		if t.ResourceVersion != "" && cur.ResourceVersion != t.ResourceVersion {
			return Effect{}, true, errChangedSinceVerified
		}
		if dry == DryRunClient {
			return Effect{Result: WouldRemove, Remaining: slices.Delete(slices.Clone(cur.Finalizers), idx, idx+1)}, false, nil
		}
	}
	patch, err := pinnedPatch(t.UID, t.ResourceVersion, idx, t.Finalizer)
	if err != nil {
		return Effect{}, false, err
	}
	if r.BeforeWrite != nil {
		r.BeforeWrite(attempt)
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager}
	if dry == DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	after, err := res.Patch(ctx, t.Name, types.JSONPatchType, patch, opts)
	switch {
	case err == nil:
		if dry == DryRunServer {
			return Effect{Result: WouldRemove, Remaining: after.Finalizers}, false, nil
		}
		if t.Resource.IsNamespaces() {
			return Effect{Result: Removed}, false, nil // spec.finalizers are not in the response: Observe reads them
		}
		return observed(after), false, nil
	case apierrors.IsConflict(err), apierrors.IsInvalid(err), apierrors.IsNotFound(err):
		// A failed test (422), a conflict (409) or a vanished object: look again.
		return Effect{}, true, err
	case unanswered(err):
		return Effect{}, true, &unansweredError{err}
	}
	return Effect{}, false, writeError(*t, err)
}

// observed is the outcome of a removal as the write's response shows the object. A
// write that leaves a deleted object without finalizers, and with no grace period left,
// is the write in which the API server deletes it (the registry deletes during the
// update), and the response is the object as deleted. A pod still within its grace
// period is not deleted by that write: the kubelet deletes it later, so its outcome is
// left for Observe.
func observed(after *metav1.PartialObjectMetadata) Effect {
	out := Effect{Result: Removed, Remaining: after.Finalizers}
	switch {
	case len(after.Finalizers) > 0:
		out.Observed = true
	case after.DeletionTimestamp != nil && after.DeletionGracePeriodSeconds != nil && *after.DeletionGracePeriodSeconds == 0:
		out.Observed, out.Deleted, out.Remaining = true, true, nil
	}
	return out
}

// Patch is the guarded JSON patch that removes finalizer at index idx of the object with
// uid: it fails, changing nothing, unless the object is still that one and the finalizer
// is still at that index.
func Patch(uid types.UID, idx int, finalizer string) ([]byte, error) {
	return pinnedPatch(uid, "", idx, finalizer)
}

// pinnedPatch is Patch that also fails unless the object is still at resourceVersion, the
// version a provider verified; an empty resourceVersion pins nothing.
func pinnedPatch(uid types.UID, resourceVersion string, idx int, finalizer string) ([]byte, error) {
	path := fmt.Sprintf("/metadata/finalizers/%d", idx)
	ops := []map[string]any{{"op": "test", "path": "/metadata/uid", "value": uid}}
	if resourceVersion != "" {
		ops = append(ops, map[string]any{"op": "test", "path": "/metadata/resourceVersion", "value": resourceVersion})
	}
	ops = append(ops,
		map[string]any{"op": "test", "path": path, "value": finalizer},
		map[string]any{"op": "remove", "path": path})
	return json.Marshal(ops)
}
