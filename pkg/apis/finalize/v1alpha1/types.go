package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Where a finalizer sits.
const (
	// FieldMetadataFinalizers is metadata.finalizers, removed with a guarded JSON patch.
	FieldMetadataFinalizers = "metadata.finalizers"
	// FieldSpecFinalizers is a Namespace's spec.finalizers, removed through /finalize.
	FieldSpecFinalizers = "spec.finalizers"
)

// OwnerSource says how the owner of a finalizer was found, best source first.
type OwnerSource string

const (
	// OwnerSourceCatalog means a built-in catalogue of well-known finalizers.
	OwnerSourceCatalog OwnerSource = "catalog"
	// OwnerSourceManagedFields means the field manager that wrote the finalizer.
	OwnerSourceManagedFields OwnerSource = "managedFields"
	// OwnerSourceAPIGroup means the finalizer's domain matches a served API group.
	OwnerSourceAPIGroup OwnerSource = "apiGroup"
	// OwnerSourceUnknown means nothing tells who should remove the finalizer.
	OwnerSourceUnknown OwnerSource = "unknown"
)

// IncompleteReason says why a part of the cluster could not be read.
type IncompleteReason string

const (
	// ReasonDiscoveryFailed means the group version could not be discovered (often an
	// aggregated API whose APIService is unavailable).
	ReasonDiscoveryFailed IncompleteReason = "DiscoveryFailed"
	// ReasonForbidden means the user may not list the resource.
	ReasonForbidden IncompleteReason = "Forbidden"
	// ReasonListFailed means listing the resource failed for another reason.
	ReasonListFailed IncompleteReason = "ListFailed"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// StuckObjectList is what `scan` prints: every object that has a deletionTimestamp and
// still carries finalizers, longest-terminating first, and what could not be read.
type StuckObjectList struct {
	metav1.TypeMeta `json:",inline"`

	Items []StuckObject `json:"items"`
	// Incomplete lists the resource types that could not be discovered or listed. When it
	// is not empty, objects of those types may be stuck without being in Items.
	Incomplete []IncompleteResource `json:"incomplete"`
}

// StuckObject is one object being deleted that still carries finalizers.
type StuckObject struct {
	Target             ObjectReference `json:"target"`
	DeletionTimestamp  metav1.Time     `json:"deletionTimestamp"`
	TerminatingSeconds int64           `json:"terminatingSeconds"`
	Finalizers         []Finalizer     `json:"finalizers"`
	// Cause is why the object is stuck, when it was diagnosed.
	Cause *Cause `json:"cause,omitempty"`
}

// ObjectReference names an object completely, uid included: a re-created namesake is a
// different object.
type ObjectReference struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Resource   string    `json:"resource"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
}

// Finalizer is one finalizer of a stuck object and who is expected to remove it.
type Finalizer struct {
	Name string `json:"name"`
	// Field is FieldMetadataFinalizers or FieldSpecFinalizers.
	Field string `json:"field"`
	// Owner is whoever is expected to remove the finalizer: a controller, or an API group
	// whose controller it is. Empty when unknown.
	Owner       string      `json:"owner"`
	OwnerSource OwnerSource `json:"ownerSource"`
	// AddedBy is the field manager that wrote the finalizer, when managedFields tell.
	AddedBy string `json:"addedBy,omitempty"`
	// System finalizers belong to Kubernetes itself; removing them by hand breaks its
	// guarantees (a claim still mounted, content stranded in etcd).
	System bool `json:"system"`
}

// Cause is why an object is stuck.
type Cause struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// IncompleteResource is a resource type, or a whole group version, that could not be read.
type IncompleteResource struct {
	GroupVersion string           `json:"groupVersion"`
	Resource     string           `json:"resource"`
	Reason       IncompleteReason `json:"reason"`
	Message      string           `json:"message"`
}
