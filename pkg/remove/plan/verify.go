package plan

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// Verifier tells whether the external resource behind a finalizer is gone. pkg/policy
// implements it with the rules of a policy and their providers.
type Verifier interface {
	// Verify answers for one finalizer of one object. A Verification without a Rule
	// means no rule applies: the removal is unverified.
	Verify(ctx context.Context, req VerifyRequest) Verification
}

// VerifyRequest is one question to a Verifier.
type VerifyRequest struct {
	Object    *kube.Object
	Finalizer finalizev1alpha1.Finalizer
	// Fresh asks again rather than answering from what was verified earlier in the run:
	// the object changed since.
	Fresh bool
}

// Status says whether a rule's verdict can be acted on, and if not, why not.
type Status string

// The statuses of a Verification.
const (
	// Answered: the verdict is the provider's (or the object's) answer, and stands.
	Answered Status = ""
	// TooYoung: the object has been terminating for less than the rule's minAge; the
	// provider was not asked, and Evidence says how long it waits.
	TooYoung Status = "TooYoung"
	// Distrusted: the rule's provider called a live object gone, or could not be checked
	// against live objects; Detail says which. Nothing is removed on its Gone.
	Distrusted Status = "Distrusted"
	// Unread: verifying needed a read of the cluster that failed (not an object that
	// vanished, an API server that did not answer); Detail is the failure. The finalizer
	// is kept, and the pass failed to do its job.
	Unread Status = "Unread"
	// ControlsUnread: a Gone that cannot be trusted because a read that checking the
	// rule's provider against its live objects needed failed: Distrusted and Unread at
	// once, with Detail saying both.
	ControlsUnread Status = "ControlsUnread"
)

// Verification is a Verifier's answer.
type Verification struct {
	// Rule is the policy rule that matched; empty when none did.
	Rule     string
	Verdict  finalizev1alpha1.Verdict
	Evidence string
	// Status says whether the verdict can be acted on; Detail says why not.
	Status Status
	Detail string
	// VerifiedAt is when the verdict was answered: by the provider (an answer shared by
	// requests alike in one pass keeps the time it was first given), or by the object
	// read then. Zero when nothing was answered (no rule, too young, unread).
	VerifiedAt time.Time
	// ResourceVersion is the version of the object the provider's request was built
	// from. A verified removal is pinned to it: if the object changed, it is verified
	// again before anything is written.
	ResourceVersion string
	// Finalizers are the object's metadata.finalizers at ResourceVersion.
	Finalizers []string
	// AllowSystem and AllowRetained are the rule's permissions.
	AllowSystem   bool
	AllowRetained bool
}

// Gone reports whether the verification proves the finalizer's work is done.
func (v *Verification) Gone() bool {
	if v.Rule == "" || v.Status != Answered {
		return false
	}
	return v.Verdict == finalizev1alpha1.VerdictGone || (v.Verdict == finalizev1alpha1.VerdictRetained && v.AllowRetained)
}

// Unread reports whether a read the verification needed failed: the finalizer is kept
// without a decision about it.
func (v *Verification) Unread() bool {
	return v.Status == Unread || v.Status == ControlsUnread
}

// Record is the verification as the audit log, the report and Events record it.
func (v *Verification) Record() *finalizev1alpha1.VerificationRecord {
	r := &finalizev1alpha1.VerificationRecord{Rule: v.Rule, Verdict: v.Verdict, Evidence: v.Evidence, ResourceVersion: v.ResourceVersion}
	if !v.VerifiedAt.IsZero() {
		at := metav1.NewMicroTime(v.VerifiedAt.Truncate(time.Microsecond)) // as it is shown
		r.VerifiedAt = &at
	}
	return r
}

// Distrusted reports whether the rule's Gone cannot be trusted.
func (v *Verification) Distrusted() bool {
	return v.Status == Distrusted || v.Status == ControlsUnread
}
