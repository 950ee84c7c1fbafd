package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Event reasons of unsafe deletions.
const (
	// ReasonUnreadableObjectDeletedUnverified is the reason of the Event for the deletion
	// of an object the API server could not read, forced by a person with a reason: every
	// one is, since nothing can tell what the finalizers of an object nobody can read
	// guarded.
	ReasonUnreadableObjectDeletedUnverified = "UnreadableObjectDeletedUnverified"
	// ReasonUnreadableObjectDeleted would be the reason of one a rule verified: none is
	// ever planned so. It keeps the audit's verified and forced reasons apart, as every
	// kind's are.
	ReasonUnreadableObjectDeleted = "UnreadableObjectDeleted"
)

// VerbUnsafeDelete is the verb the API server authorizes, besides delete, for a DELETE
// with ignoreStoreReadErrorWithClusterBreakingPotential.
const VerbUnsafeDelete = "unsafe-delete-ignore-read-errors"

// FeatureGate is the feature gate of the API server the unsafe deletion needs
// (KEP-3926: alpha, off by default, in Kubernetes 1.32 to 1.36).
const FeatureGate = "AllowUnsafeMalformedObjectDeletion"

// UnsafeDelete deletes an object the API server cannot read: a DELETE with
// ignoreStoreReadErrorWithClusterBreakingPotential: true, which removes its key from etcd
// without reading it, without its finalizers, without admission and without
// preconditions (the API server refuses them with the option). It is planned from a GET
// of the object made afresh (planUnsafe): the API server's "corrupt object" answer is what
// proves both that the object cannot be read and that the API server has the feature
// gate. Its write (pkg/remove/write, unsafedelete.go) reads it once more first.
//
// It is break-glass, and only `remove` asks for it (Options.UnsafeDelete): one object
// per run, forced with a reason, after a person typed the object's name. A run with no
// person to confirm (reconcile) refuses a plan that holds one (pkg/remove, Act).
var UnsafeDelete Kind = unsafeDelete{}

type unsafeDelete struct{}

func (unsafeDelete) Action() finalizev1alpha1.RemovalAction {
	return finalizev1alpha1.ActionUnsafeDelete
}

func (unsafeDelete) Describe(t *Target) string {
	return fmt.Sprintf("unsafe deletion of %s", t.Ref)
}

// Permissions: the object is read afresh, and deleted with the option, which the API
// server authorizes as delete and then as unsafe-delete-ignore-read-errors.
func (unsafeDelete) Permissions(t *Target) []Permission {
	p := Permission{Group: t.Resource.Group, Resource: t.Resource.Resource, Namespace: t.Namespace}
	unsafe, del, get := p, p, p
	unsafe.Verb, del.Verb, get.Verb = VerbUnsafeDelete, "delete", "get"
	return []Permission{unsafe, del, get}
}

func (unsafeDelete) Reason(verified bool) string {
	if verified {
		return ReasonUnreadableObjectDeleted
	}
	return ReasonUnreadableObjectDeletedUnverified
}

func (unsafeDelete) Event(t *Target) (string, string) {
	key := ""
	if t.Key != "" {
		key = " (etcd key " + t.Key + ")"
	}
	return "UnsafeDelete", fmt.Sprintf("Deleted without reading it%s, with ignoreStoreReadErrorWithClusterBreakingPotential: the API server could not read it (%s); its finalizers did not run", key, t.Unreadable)
}

// refuse: an unsafe deletion is decided whole when it is planned (planUnsafe).
func (unsafeDelete) refuse(context.Context, *Planner, *Action, *kube.Object, Options) *Refusal {
	return nil
}

// Unreadable names an object the API server cannot read, for an unsafe deletion: what the
// scan found (scan.Unreadable), or what a person named that the scan did not list.
type Unreadable struct {
	Resource  kube.Resource
	Namespace string
	Name      string
}

// Ref is the object's reference; it has no uid, which nobody can read.
func (u Unreadable) Ref() kube.Ref {
	return kube.Ref{Resource: u.Resource, Namespace: u.Namespace, Name: u.Name}
}

// UnreadableProof is what a GET of an object made afresh proved about it, for an unsafe
// deletion: a refusal, or the key and error of an object the API server cannot read,
// with the feature gate on.
type UnreadableProof struct {
	// Key is the object's etcd key, as the API server named it.
	Key string
	// Message is the API server's error.
	Message string
	// Evidence says how the plan knows the object cannot be read and the API server has
	// the gate, for the plan, the audit and the Event.
	Evidence string
}

// ProveUnreadable reads the object u names (get) and says whether the API server's answer
// proves it cannot read it, with the AllowUnsafeMalformedObjectDeletion feature gate on:
// the proof, or the refusal that says why not. An object read, a read that fails
// otherwise (a timeout, a permission, a conversion webhook) and an error the API server
// gives without the gate refuse it. The write calls it again before its DELETE.
func ProveUnreadable(ctx context.Context, u Unreadable, get func(ctx context.Context) error) (UnreadableProof, *Refusal) {
	ref := u.Ref()
	err := get(ctx)
	switch {
	case err == nil:
		return UnreadableProof{}, refusal(finalizev1alpha1.RefusalReadable, fmt.Sprintf(
			"the API server reads it: an unsafe deletion is only for an object it cannot read; remove its finalizers by name instead (--%s)", "finalizer"))
	case kube.IsNotFoundOf(err, u.Resource.GroupResource(), u.Name):
		r := refusal(finalizev1alpha1.RefusalReadable, "it is gone")
		r.ObjectGone = true
		return UnreadableProof{}, r
	case !scan.StorageFailure(err):
		return UnreadableProof{}, refusal(finalizev1alpha1.RefusalReadable, fmt.Sprintf(
			"reading it failed, but not on its stored bytes (%v): nothing proves the API server cannot read it; run again once it answers", err))
	}
	if kms(err) {
		return UnreadableProof{}, refusal(finalizev1alpha1.RefusalTypeWide, fmt.Sprintf(
			"the KMS plugin did not decrypt it (%v): that is the KMS's answer, not the object's bytes; the API server caches the keys it decrypted, so other objects of the type may still be read while none written before could be; "+
				"restore the KMS key or the plugin's access to it", err))
	}
	key, corrupt := scan.CorruptObject(err)
	if !corrupt {
		return UnreadableProof{}, refusal(finalizev1alpha1.RefusalGateOff, fmt.Sprintf(
			"the API server cannot read it (%v), but its answer is not the StorageError \"corrupt object\" it gives with the %s feature gate on: "+
				"without the gate it drops ignoreStoreReadErrorWithClusterBreakingPotential and the DELETE fails like the read; "+
				"restore the object first (kubectl finalize doctor %s); only if it cannot be restored, start every kube-apiserver with --feature-gates=%s=true "+
				"(alpha, Kubernetes 1.32 to 1.36) and run again", err, FeatureGate, doctorArgs(ref), FeatureGate))
	}
	if key != "" && !keyNames(key, u) {
		return UnreadableProof{}, refusal(finalizev1alpha1.RefusalReadable, fmt.Sprintf(
			"the API server's error names etcd key %s, which is not the key of %s: nothing proves that this object is the one it cannot read", key, ref))
	}
	where := ""
	if key != "" {
		where = " (etcd key " + key + ")"
	}
	return UnreadableProof{Key: key, Message: err.Error(), Evidence: fmt.Sprintf(
		"a GET of it made now failed with the storage layer's StorageError \"corrupt object\"%s, which the API server gives only with the %s feature gate on", where, FeatureGate)}, nil
}

// kms reports whether err is a KMS plugin's refusal to decrypt (KMS v1 and v2 envelopes:
// "failed to decrypt DEK"), which says nothing of the object's bytes.
func kms(err error) bool {
	msg := scan.ErrorWords(err)
	return strings.Contains(msg, "decrypt dek") || strings.Contains(msg, "kms") || strings.Contains(msg, "envelope")
}

// keyNames reports whether an etcd key named by the API server is u's:
// .../<namespace>/<name>, or .../<name> for a cluster-scoped object. The resource part is
// not checked: the API server stores some types under other names.
func keyNames(key string, u Unreadable) bool {
	parts := strings.Split(key, "/")
	// "", the resource (one segment or more), the namespace if any, the name.
	least := 3
	if u.Namespace != "" {
		least = 4
	}
	if len(parts) < least || parts[0] != "" || parts[len(parts)-1] != u.Name {
		return false
	}
	return u.Namespace == "" || parts[len(parts)-2] == u.Namespace
}

// planUnsafe decides the unsafe deletion of the object u names: it must be proven
// unreadable with the gate on by a GET made now, the person must be allowed both verbs
// on it, and it is always forced (--force-unverified with a reason).
func (p *Planner) planUnsafe(ctx context.Context, u Unreadable, cause *finalizev1alpha1.Cause, opts Options) (*Action, *Refusal) {
	ref := u.Ref()
	refuse := func(r *Refusal) (*Action, *Refusal) {
		r.Target, r.Action = ref.API(), UnsafeDelete.Action()
		if cause != nil {
			r.Cause = cause.Reason
		}
		return nil, r
	}
	if !opts.UnsafeDelete {
		return refuse(refusal(finalizev1alpha1.RefusalUnverified, "an unsafe deletion is only made when a person asks for it (kubectl finalize remove --unsafe-delete)"))
	}
	if p.Metadata == nil {
		return refuse(refusal(finalizev1alpha1.RefusalReadable, "it could not be read afresh: no client"))
	}
	if why := p.unsupported(ctx, u); why != "" {
		return refuse(refusal(finalizev1alpha1.RefusalUnsupported, why))
	}
	proof, r := ProveUnreadable(ctx, u, func(ctx context.Context) error {
		c := p.Metadata.Resource(u.Resource.GroupVersionResource)
		var err error
		if u.Namespace != "" {
			_, err = c.Namespace(u.Namespace).Get(ctx, u.Name, metav1.GetOptions{})
		} else {
			_, err = c.Get(ctx, u.Name, metav1.GetOptions{})
		}
		return err
	})
	if r != nil {
		return refuse(r)
	}
	// The API server calls any object it cannot read corrupt, whatever the reason: one
	// whose encryption provider or KMS plugin cannot decrypt anything of the type, or whose
	// storage version it no longer decodes, is not corrupt. Only another object of the
	// type that it reads proves the failure is this object's.
	other, lists, err := p.readsAnother(ctx, u)
	switch {
	case err != nil:
		return refuse(refusal(finalizev1alpha1.RefusalTypeWide, fmt.Sprintf(
			"nothing proves the failure is this object's and not the type's: looking for another %s the API server reads failed (%v); run again once it answers", u.Resource.Resource, err)))
	case other == "":
		return refuse(refusal(finalizev1alpha1.RefusalTypeWide, fmt.Sprintf(
			"the API server reads no other %s from etcd either (%d requests, in other namespaces and after this one): its configuration (an encryption provider or KMS plugin, a storage version), not this object's bytes, is the likely cause, and mending it brings every object back", u.Resource.Resource, lists)))
	}
	proof.Evidence += "; the API server reads other " + u.Resource.Resource + " (" + other + "), so the failure is this object's"
	a := &Action{
		Target:       Target{Ref: ref, Kind: UnsafeDelete, Key: proof.Key, Unreadable: proof.Message},
		Cause:        cause,
		Verification: Verification{Evidence: proof.Evidence},
	}
	// The API server authorizes both verbs on the object itself: ask about it by name.
	for _, perm := range UnsafeDelete.Permissions(&a.Target)[:2] {
		if why := p.allowed(ctx, perm, u.Name); why != "" {
			return refuse(refusal(finalizev1alpha1.RefusalForbidden, why))
		}
	}
	if !opts.ForceUnverified || opts.Reason == "" {
		return refuse(refusal(finalizev1alpha1.RefusalUnverified,
			"nothing can verify what the finalizers of an object nobody can read guard, and none of them will run: it is only deleted with a person's reason"))
	}
	a.Reason = opts.Reason
	return a, nil
}

// maxSiblingLists bounds the lists readsAnother makes: on an API server whose watch
// cache of the type cannot start, each takes seconds.
const maxSiblingLists = 10

// readsAnother returns another object of u's resource the API server reads ("configmaps/x
// -n b"), or "" when it found none in the lists it made (at most maxSiblingLists, of one
// object each): in other namespaces, then after u in its own scope (a continue token from
// u's name).
func (p *Planner) readsAnother(ctx context.Context, u Unreadable) (other string, lists int, err error) {
	if p.Kube == nil {
		return "", 0, errors.New("no client")
	}
	c := p.Metadata.Resource(u.Resource.GroupVersionResource)
	nss, err := p.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 50})
	if err != nil {
		return "", 0, fmt.Errorf("listing namespaces: %w", err)
	}
	found := func(list *metav1.PartialObjectMetadataList, err error) (string, error) {
		lists++
		switch {
		case err == nil && len(list.Items) > 0:
			// A list may be answered from the watch cache, which holds what was decoded
			// before; a GET without a resourceVersion reads etcd now.
			it := list.Items[0]
			var gerr error
			if it.Namespace != "" {
				_, gerr = c.Namespace(it.Namespace).Get(ctx, it.Name, metav1.GetOptions{})
			} else {
				_, gerr = c.Get(ctx, it.Name, metav1.GetOptions{})
			}
			lists++
			switch {
			case gerr == nil:
				ref := kube.Ref{Resource: u.Resource, Namespace: it.Namespace, Name: it.Name}
				return ref.String(), nil
			case apierrors.IsNotFound(gerr), scan.StorageFailure(gerr):
				return "", nil
			}
			return "", gerr
		case err == nil, scan.StorageFailure(err):
			return "", nil
		}
		return "", err
	}
	if u.Resource.Namespaced {
		for i := range nss.Items {
			if ns := nss.Items[i].Name; ns != u.Namespace && lists < maxSiblingLists-1 {
				if other, err := found(c.Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})); other != "" || err != nil {
					return other, lists, err
				}
			}
		}
	}
	var rv int64
	if _, err := fmt.Sscan(nss.ResourceVersion, &rv); err != nil {
		return "", lists, fmt.Errorf("the revision of the namespaces' list, %q: %w", nss.ResourceVersion, err)
	}
	token, err := scan.ContinueAfter(rv, u.Name)
	if err != nil {
		return "", lists, err
	}
	after := metav1.ListOptions{Limit: 1, Continue: token}
	if u.Resource.Namespaced {
		other, err = found(c.Namespace(u.Namespace).List(ctx, after))
	} else {
		other, err = found(c.List(ctx, after))
	}
	return other, lists, err
}

// unsupported says why the API server cannot delete u unsafely, or "": the types whose
// storage has no unsafe deleter (k8s.io/kubernetes: namespaces, and RBAC's, which answer
// 500 "no unsafe deleter provided"), and a type an aggregated API server serves, whose
// storage is not the kube-apiserver's.
func (p *Planner) unsupported(ctx context.Context, u Unreadable) string {
	switch gr := u.Resource.GroupResource(); {
	case u.Resource.IsNamespaces():
		return "the API server has no unsafe deletion of a namespace, and the namespace's own key deleted would leave every object in it in etcd, to come back with a namespace of that name; " +
			"delete the objects in it that nobody can read, and the namespace finishes by itself"
	case gr == schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}:
		return "a CustomResourceDefinition's key deleted would leave every object of its type in etcd, to come back with a CRD of that name: restore it from an etcd backup"
	case gr.Group == "rbac.authorization.k8s.io":
		return fmt.Sprintf("the API server has no unsafe deletion of %s (its storage has no unsafe deleter): restore the object from an etcd backup", gr)
	case gr.Group == "":
		return ""
	}
	if p.Dynamic == nil {
		return "whether an aggregated API server serves it could not be read: no client"
	}
	name := u.Resource.Version + "." + u.Resource.Group
	svc, err := p.Dynamic.Resource(apiServices).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("whether an aggregated API server serves it could not be read (APIService %s: %v): run again once it can", name, err)
	}
	if ref, ok, _ := unstructured.NestedMap(svc.Object, "spec", "service"); ok && ref != nil {
		return fmt.Sprintf("APIService %s sends it to an aggregated API server (service %v/%v): its storage is not the kube-apiserver's, which alone deletes an object it cannot read",
			name, ref["namespace"], ref["name"])
	}
	return ""
}

// apiServices are the aggregation layer's APIServices.
var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// allowed asks the API server (SelfSubjectAccessReview) whether the user may perm on the
// object name, and says why not, or "" when it may.
func (p *Planner) allowed(ctx context.Context, perm Permission, name string) string {
	if p.Kube == nil {
		return fmt.Sprintf("could not ask whether you may %s: no client", perm)
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
		Verb: perm.Verb, Group: perm.Group, Resource: perm.Resource, Namespace: perm.Namespace, Name: name,
	}}}
	got, err := p.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	switch {
	case err != nil:
		return fmt.Sprintf("could not ask the API server whether you may %s (%v): run again once it answers", perm, err)
	case !got.Status.Allowed:
		return fmt.Sprintf("you may not %s (name %s); ask for RBAC permission: a rule with verbs [delete, %s] on %s", perm, name, VerbUnsafeDelete, perm.What())
	}
	return ""
}

// doctorArgs are the doctor's arguments for ref: "configmaps/cfg -n team-a".
func doctorArgs(ref kube.Ref) string {
	args := ref.Resource.GroupResource().String() + "/" + ref.Name
	if ref.Namespace != "" {
		args += " -n " + ref.Namespace
	}
	return args
}
