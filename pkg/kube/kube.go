// Package kube is the vocabulary every part of kubectl-finalize speaks: a resource type
// (Resource, resolved from a kubectl type argument by ResolveResource) and a stuck object
// (Object: its metadata, its finalizers and, for a namespace, the namespace itself). The
// scanner finds Objects; the owner resolver, the doctor, the policy, the providers and
// the writer all work on them.
package kube

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// Resource is one listable resource type, at its preferred version.
type Resource struct {
	schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// String is resource.group, kubectl's name for the type ("deployments.apps", "pods").
func (r Resource) String() string { return r.GroupResource().String() }

// IsNamespaces reports whether r is the core namespaces resource.
func (r Resource) IsNamespaces() bool { return r.Group == "" && r.Resource == "namespaces" }

// Ref is the reference to an object of this type; uid may be empty when it is not known.
func (r Resource) Ref(namespace, name string, uid types.UID) finalizev1alpha1.ObjectReference {
	return finalizev1alpha1.ObjectReference{
		APIVersion: r.APIVersion(), Kind: r.Kind, Resource: r.Resource,
		Namespace: namespace, Name: name, UID: uid,
	}
}

// apiVersions are the apiVersion strings made so far, one per group and version: a
// reference to each of thousands of stuck objects of one type does not make its own.
var apiVersions sync.Map // schema.GroupVersion → string

// APIVersion is the type's apiVersion ("v1", "apps/v1").
func (r Resource) APIVersion() string {
	gv := r.GroupVersion()
	if gv.Group == "" {
		return gv.Version
	}
	if v, ok := apiVersions.Load(gv); ok {
		return v.(string)
	}
	v, _ := apiVersions.LoadOrStore(gv, gv.String())
	return v.(string)
}

// Object is one stuck object: its metadata (managedFields and ownerReferences included),
// the finalizers it carries, and for a namespace, the namespace itself.
type Object struct {
	Resource Resource
	Meta     metav1.ObjectMeta
	// Namespace is set when the object is a namespace: spec.finalizers and the namespace
	// controller's conditions live there.
	Namespace *corev1.Namespace
	// Finalizers holds name and field of each finalizer; owners are filled in later.
	Finalizers []finalizev1alpha1.Finalizer
	// WaitsFor is set on a pod whose deletion waits for the kubelet of its node.
	WaitsFor *finalizev1alpha1.WaitsFor
}

// Ref is the reference to the object, uid included.
func (o *Object) Ref() Ref {
	return Ref{Resource: o.Resource, Namespace: o.Meta.Namespace, Name: o.Meta.Name, UID: o.Meta.UID}
}

// Terminating is how long the object has been terminating at now.
func (o *Object) Terminating(now time.Time) time.Duration {
	d := now.Sub(o.Meta.DeletionTimestamp.Time)
	if d < 0 { // the server's clock is ahead of ours
		return 0
	}
	return d
}

// Stuck converts the object to the API type.
func (o *Object) Stuck(now time.Time) finalizev1alpha1.StuckObject {
	return finalizev1alpha1.StuckObject{
		Target:             o.Ref().API(),
		DeletionTimestamp:  *o.Meta.DeletionTimestamp,
		TerminatingSeconds: int64(o.Terminating(now) / time.Second),
		Finalizers:         append([]finalizev1alpha1.Finalizer{}, o.Finalizers...),
		WaitsFor:           o.WaitsFor.DeepCopy(),
	}
}

// NewObject copies what is kept of a stuck object (ns is set for a namespace), so the
// page of a list it came from can be freed: its metadata slimmed (slimMeta). For a
// namespace, the namespace too, without the last-applied-configuration annotation, which
// can hold a whole copy of it. A scan of many objects makes them with a Shared's
// NewObject, which keeps what they repeat once.
func NewObject(r Resource, meta *metav1.ObjectMeta, ns *corev1.Namespace) *Object {
	return (*Shared)(nil).NewObject(r, meta, ns)
}
