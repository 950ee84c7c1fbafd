// Package write is the only code of kubectl-finalize that writes finalizers.
//
// It removes one named finalizer from one object at a time, and every write is guarded:
// a finalizer in metadata.finalizers goes with a JSON patch that tests the object's uid
// and the finalizer's value at its index before removing that index; a namespace's
// spec.finalizers entry goes through the /finalize subresource with the resourceVersion
// just read as precondition. A conflict or a failed test means the object changed: it is
// read again and the decision made again, never retried blind. A new uid means a
// namesake was re-created, and is refused.
//
// It also force-deletes pods whose deletion waits for the kubelet of a node whose machine
// is gone (ForceDelete): one pod per DELETE, with gracePeriodSeconds 0 and preconditions
// on the uid and resourceVersion the deletion was planned from, after reading the pod and
// its node once more; never a pod of a Ready node.
//
// The Executor carries out the actions of a plan (pkg/remove/plan) the same way every
// time: an intent line in the audit log, a backup, the guarded removal, a re-read, an
// Event and the audit record (Auditor).
package write
