package write

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// FieldManager names kubectl-finalize in managedFields and audit logs.
const FieldManager = "kubectl-finalize"

// defaultMaxAttempts bounds how often a removal is decided again after the object
// changed under it.
const defaultMaxAttempts = 5

// DryRun is kubectl's --dry-run.
type DryRun string

// The --dry-run strategies.
const (
	DryRunNone   DryRun = "none"
	DryRunClient DryRun = "client"
	DryRunServer DryRun = "server"
)

// Result of one removal.
type Result = finalizev1alpha1.RemovalResult

// Results of one write.
const (
	// Removed: this write removed the finalizer.
	Removed = finalizev1alpha1.ResultRemoved
	// WouldRemove: a dry run; nothing changed.
	WouldRemove = finalizev1alpha1.ResultWouldRemove
	// AlreadyRemoved: someone else removed it first; nothing to do.
	AlreadyRemoved = finalizev1alpha1.ResultAlreadyRemoved
	// ObjectGone: the object no longer exists.
	ObjectGone = finalizev1alpha1.ResultObjectGone
)

// Effect is what a removal did and what the object looks like after it.
type Effect struct {
	Result Result
	// Deleted: after the removal the object is gone.
	Deleted bool
	// Remaining are the finalizers still on the object, metadata and spec.
	Remaining []string
	// Observed: Deleted and Remaining are what the write's response showed, so the
	// object need not be read again.
	Observed bool
	// Attempts is how many times the removal was decided.
	Attempts int
	// Reverified counts how often the object changed after it was verified and was
	// verified again.
	Reverified int
	// Pinned is the resourceVersion the last write was guarded by: the version the
	// provider verified. Empty for a removal that was not pinned (forced).
	Pinned string
	// Verification is the last verification made again after the object changed: the
	// one the write was made on. Nil when the object was not verified again.
	Verification *plan.Verification
}

// ErrUIDChanged means the object was deleted and a namesake created: the decision was
// about another object.
var ErrUIDChanged = errors.New("the object was replaced by a namesake with another uid")

// ErrNotReverified means a pinned object changed after it was verified and could not be
// verified again.
var ErrNotReverified = errors.New("the object changed after it was verified and is not verified any more")

// Remover performs guarded removals.
type Remover struct {
	Metadata metadata.Interface
	Kube     client.Interface
	// Raw sends the DELETE of an unsafe deletion, whose answer tells the unsafe deleter's
	// Status from an ordinary deletion's object; nil sends it through Metadata, whose
	// answer is not read.
	Raw rest.Interface
	// MaxAttempts bounds re-decisions; zero means defaultMaxAttempts.
	MaxAttempts int
	// BeforeWrite, if set, runs between the read and the write of every attempt. Tests
	// use it to race a removal exactly where a race matters.
	BeforeWrite func(attempt int)
	// Reverify verifies a pinned target again after the object changed, and returns the
	// verification, whose ResourceVersion the write is then pinned to. An error (the
	// verification is not a Gone any more) keeps the finalizer. Without it, a pinned
	// target that changed is not removed.
	Reverify func(ctx context.Context, t plan.Target) (plan.Verification, error)
	// Reverified, if set, is told of each verification made again, after it and before
	// the write made on it: the executor records it there. An error stops the removal
	// before that write, and is the removal's.
	Reverified func(v *plan.Verification) error
	// Clock is the API server's clock, which a force deletion finds its pod overdue and
	// its kubelet alive by at the write; nil measures one (plan.NewServerClock) per force
	// deletion.
	Clock clock.PassiveClock
	// LeaseWatch, if set, is how long a force deletion watches the Lease of its pod's
	// node, instead of plan.LeaseWatchFor the Lease: tests shorten it.
	LeaseWatch time.Duration

	// leases are the watches of node Leases of one execution, one per node.
	leases *leaseWatches
}

// writes are the write of each kind of removal (plan.Kinds), each in the file of its
// kind: one attempt, after which again says that the object changed under it and the
// removal must be decided anew.
var writes = map[plan.Kind]func(r *Remover, ctx context.Context, t *plan.Target, dry DryRun, attempt int) (out Effect, again bool, err error){
	plan.Patch:        (*Remover).patch,
	plan.Finalize:     (*Remover).finalize,
	plan.ForceDelete:  (*Remover).forceDelete,
	plan.UnsafeDelete: (*Remover).unsafeDelete,
}

// Remove makes the removal t names, of whatever kind: a finalizer, or a pod's force
// deletion. With DryRunClient it only reads; with DryRunServer the write is sent with
// dryRun=All, so admission (webhooks included) runs and nothing changes.
func (r *Remover) Remove(ctx context.Context, t plan.Target, dry DryRun) (Effect, error) {
	attempts := r.MaxAttempts
	if attempts <= 0 {
		attempts = defaultMaxAttempts
	}
	try := writes[t.WriteKind()]
	var lastErr error
	var unanswered *unansweredError
	reverified := 0
	var verification *plan.Verification
	pause := client.ServerErrorBackoff
	for attempt := 1; attempt <= attempts; attempt++ {
		var (
			out   Effect
			again bool
			err   error
		)
		out, again, err = try(r, ctx, &t, dry, attempt)
		if errors.Is(err, errChangedSinceVerified) {
			v, rerr := r.reverify(ctx, &t)
			if rerr != nil {
				return Effect{Attempts: attempt, Reverified: reverified, Verification: verification}, rerr
			}
			reverified, verification = reverified+1, v
		}
		out.Attempts, out.Reverified, out.Pinned, out.Verification = attempt, reverified, t.ResourceVersion, verification
		if !again {
			if err != nil && unanswered != nil {
				err = fmt.Errorf("%s: the API server did not answer the write (%w), then %w: %s", t.String(), unanswered.err, err, unknownOutcome)
			}
			return out, err
		}
		if errors.As(err, &unanswered) {
			// The write may or may not have been applied: wait, then read and decide anew.
			select {
			case <-ctx.Done():
				return Effect{Attempts: attempt, Reverified: reverified, Verification: verification}, fmt.Errorf("%s: %w; %s", t.String(), err, unknownOutcome)
			case <-time.After(pause.Step()):
			}
		}
		klog.V(2).InfoS("The object changed under the removal; deciding again", "target", t.String(), "attempt", attempt, "err", err)
		lastErr = err
	}
	if errors.As(lastErr, &unanswered) {
		return Effect{Attempts: attempts, Reverified: reverified, Verification: verification}, fmt.Errorf("%s: gave up after %d attempts, the API server kept failing: %w; %s", t.String(), attempts, lastErr, unknownOutcome)
	}
	return Effect{Attempts: attempts, Reverified: reverified, Verification: verification}, fmt.Errorf("%s: gave up after %d attempts, the object kept changing: %w", t.String(), attempts, lastErr)
}

// unknownOutcome ends the error of a write whose answer never came.
const unknownOutcome = "whether the finalizer was removed is unknown until the object is read again, which a rerun does"

// unansweredError means a write got a server error or a broken connection instead of an
// answer: it may or may not have been applied. The guard makes sending it again
// harmless, but the object is read first, so the next attempt is a decision of its own.
type unansweredError struct{ err error }

func (e *unansweredError) Error() string { return "no answer to the write: " + e.err.Error() }
func (e *unansweredError) Unwrap() error { return e.err }

// unanswered says whether err leaves a write's outcome unknown.
func unanswered(err error) bool {
	if isWebhookError(err) {
		return false // refused in admission, before anything was stored
	}
	return serverError(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}

// errChangedSinceVerified means the object's resourceVersion is not the one verified.
var errChangedSinceVerified = errors.New("the object changed since it was verified")

// reverify verifies t again and pins it to the version verified, after Reverified
// recorded the verification.
func (r *Remover) reverify(ctx context.Context, t *plan.Target) (*plan.Verification, error) {
	if r.Reverify == nil {
		return nil, fmt.Errorf("%s: %w; nothing was removed", t.String(), ErrNotReverified)
	}
	v, err := r.Reverify(ctx, *t)
	if err == nil && v.ResourceVersion == "" {
		err = errors.New("the verification names no version of the object to pin the write to")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w; nothing was removed", t.String(), ErrNotReverified, err)
	}
	klog.V(2).InfoS("Verified again after the object changed", "target", t.String(), "resourceVersion", v.ResourceVersion, "evidence", v.Evidence)
	if r.Reverified != nil {
		if err := r.Reverified(&v); err != nil {
			return nil, err
		}
	}
	t.ResourceVersion = v.ResourceVersion
	t.Finalizers = nil // the verified version's finalizers are unknown here: read them
	return &v, nil
}

func (r *Remover) metadataResource(t *plan.Target) metadata.ResourceInterface {
	c := r.Metadata.Resource(t.Resource.GroupVersionResource)
	if t.Namespace != "" {
		return c.Namespace(t.Namespace)
	}
	return c
}

// decidedFor refuses a removal without the uid of the object it was decided for.
func decidedFor(t *plan.Target) error {
	if t.UID == "" {
		return fmt.Errorf("%s: refusing to remove a finalizer without the uid of the object it was decided for", t.String())
	}
	return nil
}

// writeError explains a failed write: the permission that is missing (the first its kind
// needs, the write itself), or the webhook that refused.
func writeError(t plan.Target, err error) error {
	w := t.WriteKind().Permissions(&t)[0]
	verb, resource := w.Verb, w.What()
	where := ""
	if t.Namespace != "" {
		where = fmt.Sprintf(" in namespace %q", t.Namespace)
	}
	switch {
	case apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "admission webhook"):
		return fmt.Errorf("%s: you may not %s %q%s; ask for RBAC permission to %s %s: %w", t.String(), verb, resource, where, verb, resource, err)
	case isWebhookError(err):
		return fmt.Errorf("%s: an admission webhook refused the write (run kubectl finalize doctor to see which, and why): %w", t.String(), err)
	}
	return fmt.Errorf("%s: %w", t.String(), err)
}

// Observe reads the object after a removal: gone, or the finalizers it still has. An
// object read is gone only when its uid is not the target's; a target without a uid (an
// object nobody could read) is gone only when nothing is found.
func (r *Remover) Observe(ctx context.Context, t plan.Target) (deleted bool, remaining []string, err error) {
	if t.Resource.IsNamespaces() {
		ns, err := r.Kube.CoreV1().Namespaces().Get(ctx, t.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && t.UID != "" && ns.UID != t.UID) {
			return true, nil, nil
		}
		if err != nil {
			return false, nil, err
		}
		return false, allFinalizers(&ns.ObjectMeta, ns), nil
	}
	cur, err := r.metadataResource(&t).Get(ctx, t.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && t.UID != "" && cur.UID != t.UID) {
		return true, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	return false, cur.Finalizers, nil
}
