package doctor

import (
	"fmt"
	"strings"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// An object the API server cannot read (#35): what it blocks, what most likely made it
// so, and the safe order out.

func init() {
	register(family{causes: []Cause{
		{Reason: finalizev1alpha1.ReasonUnreadable, Priority: 0,
			Help: "the API server cannot read the object (bytes it cannot decode or decrypt): every list of its type that reaches it fails",
			Doc:  "the scan found an object the API server cannot read: a list of its type failed with a storage error (the `AllowUnsafeMalformedObjectDeletion` gate's `StorageReadError`, or a decode, transform or decrypt failure), the scan walked past it, and a GET of its name fails the same way. What it blocks (its namespace's deletion, every list of its type that reaches it, the watch cache and so the controllers that list the type) and the likely cause by the error (an encryption key removed, or corruption) are said; the next step is to restore it before the unsafe deletion"},
	}})
}

// decryptWords are in the API server's error when the object was encrypted with a key its
// encryption configuration no longer has.
var decryptWords = []string{"decrypt", "transform", "no matching prefix", "aes", "kms"}

// unreadableCause explains u.
func unreadableCause(u scan.Unreadable) (*finalizev1alpha1.Cause, *rootSpec) {
	what := u.Resource.Resource
	if u.Resource.Group != "" {
		what += "." + u.Resource.Group
	}
	blocks := fmt.Sprintf("every list of %s that reaches it fails (kubectl get %s -A; the watch cache of the type cannot start, so controllers that list %s wait; the garbage collector cannot see them)", what, what, what)
	if u.Namespace != "" {
		blocks += fmt.Sprintf(", and namespace %s cannot finish deleting: the namespace controller cannot list its %s", u.Namespace, what)
	}
	likely := "its bytes in etcd are not an object the API server can decode: a partial write, a bug, or a damaged disk"
	msg := strings.ToLower(u.Message)
	for _, w := range decryptWords {
		if strings.Contains(msg, w) {
			likely = "it was encrypted at rest with a key the API server's encryption configuration no longer has (a key rotated away before every object was rewritten)"
			break
		}
	}
	ref := what + "/" + u.Name
	if u.Namespace != "" {
		ref += " -n " + u.Namespace
	}
	message := fmt.Sprintf("the API server cannot read %s (%s); most likely %s; %s", ref, u.Message, likely, blocks)
	if u.Uncertain != "" {
		message += "; " + u.Uncertain
	}
	next := "restore it first: put the removed key back into the API server's encryption configuration (or restore the object from an etcd backup) and restart the API server; " +
		fmt.Sprintf("only if it cannot be restored, delete it without reading it: kubectl finalize remove %s/%s%s --unsafe-delete --force-unverified --reason TEXT ", u.Resource.GroupResource(), u.Name, nsFlag(u.Namespace)) +
		"(a DELETE with ignoreStoreReadErrorWithClusterBreakingPotential, which needs the AllowUnsafeMalformedObjectDeletion feature gate on every kube-apiserver and the unsafe-delete-ignore-read-errors verb); its finalizers do not run, so whatever they guard is left as it is"
	cause := &finalizev1alpha1.Cause{Reason: finalizev1alpha1.ReasonUnreadable, Message: message, NextStep: next}
	root := &rootSpec{reason: finalizev1alpha1.ReasonUnreadable, subject: finalizev1alpha1.Subject{Kind: u.Resource.Kind, Namespace: u.Namespace, Name: u.Name},
		message: "the API server cannot read it: " + likely, next: next}
	return cause, root
}

// unreadableIn explains namespace o by the objects in it the API server cannot read: the
// namespace controller cannot list their type there, so the namespace cannot finish.
func (d *diagnoser) unreadableIn(o *kube.Object) []finding {
	var fs []finding
	for _, u := range d.f.res.Unreadable {
		if u.Namespace != o.Meta.Name {
			continue
		}
		c, root := unreadableCause(u)
		ref := u.Resource.Ref(u.Namespace, u.Name, "")
		fd := finding{reason: finalizev1alpha1.ReasonUnreadable, root: root, next: c.NextStep,
			message:  fmt.Sprintf("the namespace cannot finish deleting while it holds %s %s, which the API server cannot read: the namespace controller's list of %s in it fails", u.Resource.Kind, u.Name, u.Resource.Resource),
			blockers: []finalizev1alpha1.Blocker{{Target: ref, Stuck: true, Message: "the API server cannot read it"}}}
		fs = append(fs, fd)
	}
	return fs
}

// nsFlag is " -n NAMESPACE", or "" for a cluster-scoped object.
func nsFlag(namespace string) string {
	if namespace == "" {
		return ""
	}
	return " -n " + namespace
}
