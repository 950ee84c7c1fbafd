package plan

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// Target is one finalizer of one object (or one pod to force-delete, or one object the
// API server cannot read to delete unsafely), and the uid of the object the decision to
// remove it was made about.
type Target struct {
	// Kind is what the removal writes; unset, the removal of Finalizer from Field
	// (finalizerKind).
	Kind Kind
	// Ref is the object, and the uid the decision was made about.
	kube.Ref
	Finalizer string
	// Field is metadata.finalizers or spec.finalizers (namespaces only).
	Field string
	// ResourceVersion, if set, pins a verified removal to the version of the object a
	// provider verified: the write tests it, and if the object changed it is verified
	// again (write.Remover.Reverify) before anything is written.
	ResourceVersion string
	// Finalizers, with ResourceVersion, are the object's metadata.finalizers at that
	// version, as verified. The first attempt then writes without reading first: the
	// write tests the uid, the version and the finalizer's place, so it fails, changing
	// nothing, unless the object is exactly what was verified.
	Finalizers []string
	// SystemByRule: the finalizer is a system finalizer, and what lets it go is the
	// allowSystem of the rule that verified it (reconcile), not a person's --allow-system.
	// A verification made again before the write counts only when its rule sets
	// allowSystem too: the rule that matches the object may have changed with it.
	SystemByRule bool

	// The rest is a force deletion's (Kind ForceDelete), whose Finalizer is empty and
	// whose UID and ResourceVersion are the pod's as read when planned, always set.
	//
	// Node is the node whose kubelet the pod's deletion waits for; empty for a pod never
	// scheduled.
	Node string
	// NodeGone: the deletion was verified by the Node object's absence, so a Node of that
	// name found at the write means it is not verified any more.
	NodeGone bool
	// NodeAbsent: no Node object of that name existed when the deletion was planned,
	// verified or forced; a Node of that name at the write is a machine that registered
	// since, and refuses it.
	NodeAbsent bool
	// NodeUID and NodeProviderID are the Node's as read when planned, when it existed:
	// the write refuses a Node of that name with another uid or providerID, a machine
	// the decision was not made about.
	NodeUID        types.UID
	NodeProviderID string
	// GraceMargin is how long after its grace period the pod must be, checked again at
	// the write.
	GraceMargin time.Duration

	// The rest is an unsafe deletion's (Kind UnsafeDelete), whose Finalizer, UID and
	// ResourceVersion are empty: nobody can read them.
	//
	// Key is the object's etcd key as the API server named it when the deletion was
	// planned; the write refuses an error that names another.
	Key string
	// Unreadable is the API server's error on the GET the deletion was planned from.
	Unreadable string
}

// String names the target in errors: "finalizer F of configmaps/cfg -n team-a", or
// "force deletion of pods/web-0 -n team-a".
func (t *Target) String() string { return t.WriteKind().Describe(t) }

// WriteKind is the target's kind: Kind, or when it is unset the removal of Finalizer from
// Field.
func (t *Target) WriteKind() Kind {
	if t.Kind != nil {
		return t.Kind
	}
	return finalizerKind(t.Field)
}
