package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Verdict is a provider's answer to one question: is the external resource behind a
// finalizer gone?
type Verdict string

const (
	// VerdictGone means the provider checked and the external resource is gone: the
	// finalizer's work is done.
	VerdictGone Verdict = "Gone"
	// VerdictPresent means the external resource still exists.
	VerdictPresent Verdict = "Present"
	// VerdictUnknown means the provider could not tell: an error, a timeout, a malformed
	// answer. It keeps the finalizer, like Present.
	VerdictUnknown Verdict = "Unknown"
	// VerdictRetained means the external resource is meant to outlive the object (a
	// deletion policy of Orphan, Retain or abandon).
	VerdictRetained Verdict = "Retained"
)

// RemovalResult is what happened to one planned removal.
type RemovalResult string

const (
	// ResultRemoved means this run removed the finalizer.
	ResultRemoved RemovalResult = "Removed"
	// ResultWouldRemove means a dry run: the removal was verified or allowed, nothing was
	// written.
	ResultWouldRemove RemovalResult = "WouldRemove"
	// ResultAlreadyRemoved means someone else removed the finalizer between the scan and
	// the write; nothing was written.
	ResultAlreadyRemoved RemovalResult = "AlreadyRemoved"
	// ResultObjectGone means the object was deleted between the scan and the write.
	ResultObjectGone RemovalResult = "ObjectGone"
	// ResultKept means the finalizer was kept: not verified, refused, or the pass stopped
	// before writing.
	ResultKept RemovalResult = "Kept"
	// ResultFailed means the removal was attempted and failed.
	ResultFailed RemovalResult = "Failed"
	// ResultTooYoung means the object has been terminating for less than the rule's
	// minAge: its controller may still be at work, so it was not verified.
	ResultTooYoung RemovalResult = "TooYoung"
)

// RefusalKind says why a requested removal is refused. `remove` names the flag that
// would allow it; `reconcile` the policy field.
type RefusalKind string

const (
	// RefusalNoSuchFinalizer means the object does not carry the finalizer.
	RefusalNoSuchFinalizer RefusalKind = "NoSuchFinalizer"
	// RefusalSystem means a finalizer of Kubernetes itself.
	RefusalSystem RefusalKind = "System"
	// RefusalStranding means the kubernetes finalizer of a namespace that may still hold
	// objects, which would stay in etcd.
	RefusalStranding RefusalKind = "Stranding"
	// RefusalUnverified means no provider verified that what the finalizer guards is gone.
	RefusalUnverified RefusalKind = "Unverified"
	// RefusalTooYoung means the object has been terminating for less than the rule's minAge,
	// so the rule does not verify it yet.
	RefusalTooYoung RefusalKind = "TooYoung"
	// RefusalNotOverdue means a pod a force deletion was asked for is not overdue: it
	// is not being deleted, or its grace period (and the margin after it) is not over,
	// or it is gone. Nothing allows it: its kubelet may still stop it.
	RefusalNotOverdue RefusalKind = "NotOverdue"
	// RefusalNodeReady means a pod a force deletion was asked for is bound to a node that
	// exists and is Ready: its kubelet answers, and may be running the pod's containers.
	// Nothing allows it.
	RefusalNodeReady RefusalKind = "NodeReady"
	// RefusalKubeletAlive means a pod a force deletion was asked for is bound to a node
	// whose kubelet shows signs of life though the node is not Ready (or its Node object
	// is gone): the API server saw its Lease in kube-node-lease change recently (by the
	// API server's clock), its renewTime is recent, or it wrote Ready=False recently.
	// Nothing allows it.
	RefusalKubeletAlive RefusalKind = "KubeletAlive"
	// RefusalMachinePresent means a policy rule applies to a pod a force deletion was
	// asked for, and its provider answered that the node's machine is present, or its
	// Gone cannot be trusted (its controls failed): the evidence is against the
	// deletion. Nothing allows it; --force-unverified covers only no rule, or Unknown.
	RefusalMachinePresent RefusalKind = "MachinePresent"
	// RefusalReadable means an unsafe deletion was asked for an object the API server
	// reads, or whose read failed otherwise than on its stored bytes (a timeout, a
	// permission): nothing proves it unreadable. Nothing allows it; an object that can be
	// read has its finalizers removed by name.
	RefusalReadable RefusalKind = "Readable"
	// RefusalGateOff means an unsafe deletion was asked for an object the API server
	// cannot read, and the API server's answer is not the one it gives with the
	// AllowUnsafeMalformedObjectDeletion feature gate on: without it, the API server drops
	// the option and the DELETE fails like every read. Nothing allows it but the gate.
	RefusalGateOff RefusalKind = "GateOff"
	// RefusalForbidden means the API server said (SelfSubjectAccessReview) that the user
	// may not make the write: for an unsafe deletion, the verbs delete and
	// unsafe-delete-ignore-read-errors on the object. Nothing allows it but a grant.
	RefusalForbidden RefusalKind = "Forbidden"
	// RefusalTypeWide means an unsafe deletion was asked for an object the API server
	// cannot read, but it cannot read other objects of the type either, or none could be
	// found to compare: its configuration (an encryption provider, a KMS plugin, a storage
	// version), not this object's bytes, is the likely cause, and mending it brings every
	// object back. Nothing allows it.
	RefusalTypeWide RefusalKind = "TypeWide"
	// RefusalUnsupported means an unsafe deletion was asked for a type the API server
	// cannot delete so (namespaces, and RBAC's four types, have no unsafe deleter; a
	// namespace's own key deleted would leave its content in etcd), or that an aggregated
	// API server serves. Nothing allows it.
	RefusalUnsupported RefusalKind = "Unsupported"
)

// RemovalAction is what a planned write does. The empty action removes one finalizer.
type RemovalAction string

const (
	// ActionForceDelete deletes a pod whose deletion waits for the kubelet of a node whose
	// machine is gone: DELETE with gracePeriodSeconds 0, preconditioned on the pod's uid
	// and resourceVersion. It removes no finalizer; the pod's finalizers stay, each its
	// own removal.
	ActionForceDelete RemovalAction = "ForceDelete"
	// ActionUnsafeDelete deletes an object the API server cannot read (its bytes in etcd
	// cannot be decoded or decrypted): DELETE with
	// ignoreStoreReadErrorWithClusterBreakingPotential, which needs the
	// AllowUnsafeMalformedObjectDeletion feature gate and the
	// unsafe-delete-ignore-read-errors verb. No finalizer runs; the object's key is
	// removed from etcd. Only `remove` makes one, one object per run, after a person typed
	// its name; never `reconcile`.
	ActionUnsafeDelete RemovalAction = "UnsafeDelete"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// RemovalPlan is every removal decided before any is made: what `remove` previews and,
// with -o json|yaml, prints with each result.
type RemovalPlan struct {
	metav1.TypeMeta `json:",inline"`

	// DryRun is none, client or server.
	DryRun  string    `json:"dryRun,omitempty"`
	Actions []Removal `json:"actions"`
	// Refusals are the requested removals that will not happen: the same rows as
	// Actions, each with its Kind and, in Message, why.
	Refusals []Removal `json:"refusals"`
}

// Removal is one finalizer of one object (or one pod to force-delete): planned, then
// carried out, or refused.
type Removal struct {
	Target ObjectReference `json:"target"`
	// Action is ForceDelete for the force deletion of a pod, UnsafeDelete for the deletion
	// of an object the API server cannot read (both with an empty Finalizer);
	// empty for the removal of a finalizer.
	Action RemovalAction `json:"action,omitempty"`
	// Node is the node whose kubelet a force-deleted pod's deletion waited for.
	Node      string `json:"node,omitempty"`
	Finalizer string `json:"finalizer"`
	// Field is metadata.finalizers or spec.finalizers.
	Field string `json:"field,omitempty"`
	// Owner is who is expected to remove the finalizer.
	Owner string `json:"owner,omitempty"`
	// Cause is the reason the doctor gives for the object being stuck.
	Cause string `json:"cause,omitempty"`
	// Rule is the policy rule that matched the finalizer.
	Rule string `json:"rule,omitempty"`
	// Verdict and Evidence are the provider's answer. The evidence names the request
	// (method and URL, credentials redacted; the exec program; the Kubernetes object).
	// Once a removal was attempted, Rule, Verdict, Evidence, VerifiedAt and
	// ResourceVersion are those of the verification the write was made on: the object's
	// second verification when it changed after its first (Verifications says how many).
	Verdict  Verdict `json:"verdict,omitempty"`
	Evidence string  `json:"evidence,omitempty"`
	// VerifiedAt is when the verification was answered.
	VerifiedAt *metav1.MicroTime `json:"verifiedAt,omitempty"`
	// ResourceVersion is the version of the object the verification was made from: a
	// verified removal's write is pinned to it.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Verifications counts the verifications the removal took: one, and one more each
	// time the object changed after it was verified and was verified again.
	Verifications int `json:"verifications,omitempty"`
	// FirstVerification is the first verification, when the one the write was made on
	// answered otherwise (another rule, verdict or request).
	FirstVerification *VerificationRecord `json:"firstVerification,omitempty"`
	// Reason is why a person forced the removal without verification.
	Reason string        `json:"reason,omitempty"`
	Result RemovalResult `json:"result,omitempty"`
	// Kind says why the plan refused the removal, when it did: a RemovalPlan's refusals
	// and the rows a reconcile pass kept by a refusal carry it.
	Kind RefusalKind `json:"kind,omitempty"`
	// Message says why the finalizer was kept.
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

// VerificationRecord is one verification of a removal, as recorded: which rule, what
// it answered about which request, when, and the version of the object it was made from.
type VerificationRecord struct {
	Rule            string            `json:"rule,omitempty"`
	Verdict         Verdict           `json:"verdict,omitempty"`
	Evidence        string            `json:"evidence,omitempty"`
	VerifiedAt      *metav1.MicroTime `json:"verifiedAt,omitempty"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
}

// Forced reports whether a person forced the removal without a provider's Gone.
func (r *Removal) Forced() bool { return r.Reason != "" }

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReconcileReport is what one `reconcile` pass did: one action per (object, finalizer) a
// rule matched, and why each was removed or kept.
type ReconcileReport struct {
	metav1.TypeMeta `json:",inline"`

	// Policy is the file the pass followed.
	Policy string `json:"policy,omitempty"`
	DryRun bool   `json:"dryRun"`
	// StartTime and CompletionTime bound the pass.
	StartTime      metav1.Time `json:"startTime"`
	CompletionTime metav1.Time `json:"completionTime"`
	Actions        []Removal   `json:"actions"`
	// Summary counts the actions by result.
	Summary map[RemovalResult]int `json:"summary"`
	// Rules say which rules' providers were checked against live objects, and which
	// could not be trusted.
	Rules []RuleStatus `json:"rules,omitempty"`
	// Breaker is set when the pass planned more removals than it may make.
	Breaker *Breaker `json:"breaker,omitempty"`
	// Incomplete lists what the scan could not read; objects of those types may be
	// stuck without being in Actions.
	Incomplete []IncompleteResource `json:"incomplete"`
}

// RuleStatus says whether a rule's provider could be trusted in a pass, and why not.
type RuleStatus struct {
	Rule string `json:"rule"`
	// Broken means the provider called a live object gone: nothing was removed under the
	// rule.
	Broken bool `json:"broken,omitempty"`
	// Distrust says why the rule's Gone answers were not trusted. Controls are checked
	// per resource type: a rule may be trusted for one type and not for another, and
	// Distrust then names the type.
	Distrust string `json:"distrust,omitempty"`
	// CannotVerify, when set, says why the rule could not verify in this pass, and for
	// which resource types: its provider cannot be built or cannot run (a credential
	// source unset, empty or unreadable, a CA file that cannot be read); or, for a type,
	// every live object of it its provider was asked about answered Unknown (an expired
	// token); or a Gone of a type was held back because no live object of it could check
	// the provider. Nothing of those types was removed under the rule, and the pass fails
	// (exit 1) until it is fixed.
	CannotVerify string `json:"cannotVerify,omitempty"`
	// Controls are the live objects its provider was asked about.
	Controls []ControlResult `json:"controls,omitempty"`
	// Warnings are what the rule's preset says a person must know.
	Warnings []string `json:"warnings,omitempty"`
}

// ControlResult is a provider's answer about one live object. Each object is asked
// once per rule, under one of its finalizers the rule matches, however many it carries:
// a rule's controls count distinct objects.
type ControlResult struct {
	Target ObjectReference `json:"target"`
	// Finalizer is the finalizer the provider was asked about (the object's first that
	// the rule matches and would ask about).
	Finalizer string  `json:"finalizer,omitempty"`
	Verdict   Verdict `json:"verdict"`
	Evidence  string  `json:"evidence"`
}

// Breaker says that a pass planned more removals than it may make, and made none.
type Breaker struct {
	Planned     int `json:"planned"`
	MaxRemovals int `json:"maxRemovals"`
	// PlannedForceDeletions and MaxForceDeletions: of the planned removals, the force
	// deletions of pods, and how many a pass may make.
	PlannedForceDeletions int `json:"plannedForceDeletions"`
	MaxForceDeletions     int `json:"maxForceDeletions"`
}
