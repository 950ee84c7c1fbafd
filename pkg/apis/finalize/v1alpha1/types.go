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
	// ReasonClusterUnreachable means a whole cluster could not be read: unreachable, its
	// credentials refused, or no answer within --cluster-timeout.
	ReasonClusterUnreachable IncompleteReason = "ClusterUnreachable"
)

// ReasonConversionWebhookUnavailable is a cause and an incomplete reason at once:
// a CRD's conversion webhook cannot be reached, so its objects stored at one version
// cannot be read at another. Lists of its other versions fail, the scan's among them,
// and so does the namespace controller's: in the namespaces that hold its objects, then,
// once the API server's watch cache of the type cannot initialize, in every namespace.
// Untyped, it fits both Cause.Reason and IncompleteResource.Reason.
const ReasonConversionWebhookUnavailable = "ConversionWebhookUnavailable"

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
	// Cluster is the kubeconfig context the object was found through, when more than one
	// cluster was scanned.
	Cluster            string          `json:"cluster,omitempty"`
	Target             ObjectReference `json:"target"`
	DeletionTimestamp  metav1.Time     `json:"deletionTimestamp"`
	TerminatingSeconds int64           `json:"terminatingSeconds"`
	Finalizers         []Finalizer     `json:"finalizers"`
	// WaitsFor is set on a pod whose deletion waits for a kubelet: its grace period is
	// over, and the kubelet of its node has not confirmed that its containers stopped.
	// Finalizers, if any, are waited for too. For such a pod, deletionTimestamp is when
	// the grace period ended, and terminatingSeconds counts from then.
	WaitsFor *WaitsFor `json:"waitsFor,omitempty"`
	// Unreadable is set on an object the API server cannot read (#35): every list of its
	// type that reaches it fails. Its deletionTimestamp and finalizers are not known.
	Unreadable *Unreadable `json:"unreadable,omitempty"`
	// Cause is why the object is stuck, when it was diagnosed.
	Cause *Cause `json:"cause,omitempty"`
}

// WaitsFor is what the deletion of a pod waits for besides its finalizers.
type WaitsFor struct {
	// Node is the node (spec.nodeName) whose kubelet must confirm the pod stopped; empty
	// for a pod never scheduled.
	Node string `json:"node"`
}

// Unreadable is what the API server said of an object it cannot read.
type Unreadable struct {
	// Key is the object's key in etcd, when the API server named it.
	Key string `json:"key,omitempty"`
	// Message is the API server's error on a GET of the object.
	Message string `json:"message"`
	// Uncertain says what could not be told about the keys before it.
	Uncertain string `json:"uncertain,omitempty"`
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
	// Resembles is the catalogued finalizer this one is likely a misspelling of: one or
	// two edits from it, in the same project's domain, and not known itself. Owner is
	// then empty: no controller is known to remove it, whoever wrote it.
	Resembles string `json:"resembles,omitempty"`
	// System finalizers belong to Kubernetes itself; removing them by hand breaks its
	// guarantees (a claim still mounted, content stranded in etcd). A finalizer is system
	// by its name, whether or not the catalogue knows it: no domain ("kubernetes",
	// "orphan", "cleanup"), or a domain Kubernetes reserves (kubernetes.io, k8s.io and
	// their subdomains; pkg/owner IsSystem).
	System bool `json:"system"`
}

// Cause is why an object is stuck.
type Cause struct {
	// Reason is one of the Reason* constants: part of the contract.
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// NextStep is the next safe thing to do.
	NextStep string `json:"nextStep,omitempty"`
	// Blockers are what the object waits for: pods, an APIService, a webhook, or other
	// stuck objects (Stuck set), whose own causes are in the same list.
	Blockers []Blocker `json:"blockers,omitempty"`
	// External names the external resource behind the finalizer, when a preset knows
	// where its operator keeps it: what to look up before removing anything.
	External *External `json:"external,omitempty"`
}

// External is the external resource behind a finalizer, as a preset reads it.
type External struct {
	Preset string `json:"preset"`
	// Identity are the values that name it (arn, region, volumeHandle, ...).
	Identity map[string]string `json:"identity,omitempty"`
	// Retained names the setting that makes it outlive the object.
	Retained string `json:"retained,omitempty"`
	// Held names the setting that forbids acting for its operator (paused, read-only).
	Held string `json:"held,omitempty"`
	// Unnamed says why the preset does not name the resource of this object: its
	// operator is of a family the preset does not know, or whose identity it does not
	// know (Identity is then empty, whatever the object holds).
	Unnamed string `json:"unnamed,omitempty"`
	// Where says where its operator put it beyond its identity, as the operator recorded
	// it (provider-kubernetes: the ProviderConfig whose cluster the manifest was applied
	// to, from its ProviderConfigUsage); empty when the preset knows no such place, or
	// when the record cannot be used (Unnamed then says why).
	Where string `json:"where,omitempty"`
}

// Causes the doctor recognises. The names are part of the JSON contract.
const (
	ReasonAPIServiceUnavailable        = "APIServiceUnavailable"
	ReasonNamespaceContentRemaining    = "NamespaceContentRemaining"
	ReasonNamespaceFinalizersRemaining = "NamespaceFinalizersRemaining"
	ReasonPodsUsingClaim               = "PodsUsingClaim"
	ReasonClaimStillBound              = "ClaimStillBound"
	ReasonDependentsRemaining          = "DependentsRemaining"
	ReasonInstancesRemaining           = "InstancesRemaining"
	ReasonControllerInactive           = "ControllerInactive"
	ReasonControllerFailing            = "ControllerFailing"
	ReasonWebhookBlocking              = "WebhookBlocking"
	ReasonProgressing                  = "Progressing"
	ReasonUnknown                      = "Unknown"
	// ReasonFinalizerMisspelled: no controller is known to remove the finalizer, and it
	// is one or two edits from a catalogued finalizer of the same project (Resembles).
	ReasonFinalizerMisspelled = "FinalizerMisspelled"
	// ReasonUnreadable: the API server cannot read the object (its bytes in etcd cannot be
	// decoded or decrypted): every list of its type that reaches it fails.
	ReasonUnreadable = "Unreadable"
)

// Causes of a controller that runs but does not remove its finalizer.
const (
	// ReasonControllerIdle: the owner runs (its workload is ready, or it writes elsewhere)
	// but has written nothing to the object for the progress window.
	ReasonControllerIdle = "ControllerIdle"
	// ReasonControllerForbidden: the owner runs, but its ServiceAccount may not watch the
	// object's type in its namespace or may not patch or update the object.
	ReasonControllerForbidden = "ControllerForbidden"
)

// Causes of storage protections that wait for other storage objects.
const (
	// ReasonSnapshotsUsingClaim: VolumeSnapshots taken from the claim are not ready yet;
	// the snapshot-controller keeps snapshot.storage.kubernetes.io/pvc-as-source-protection
	// on the claim until they are.
	ReasonSnapshotsUsingClaim = "SnapshotsUsingClaim"
	// ReasonVolumeStillAttached: VolumeAttachments still attach the volume to nodes; the
	// CSI external-attacher keeps external-attacher/<driver> on it until they are gone.
	ReasonVolumeStillAttached = "VolumeStillAttached"
)

// Causes of a pod whose deletion waits for its kubelet: the grace period is over and
// the kubelet has not confirmed that the pod stopped.
const (
	// ReasonNodeGone: the Node object named by the pod's spec.nodeName does not exist.
	ReasonNodeGone = "NodeGone"
	// ReasonNodeNotReady: the node's Ready condition is False or Unknown; its kubelet
	// does not report, or reports that it cannot run pods.
	ReasonNodeNotReady = "NodeNotReady"
	// ReasonKubeletNotFinishing: the node is Ready, and its kubelet has not finished the
	// pod: containers not stopped, or volumes not unmounted or detached.
	ReasonKubeletNotFinishing = "KubeletNotFinishing"
)

// Blocker is something a stuck object waits for.
type Blocker struct {
	Target ObjectReference `json:"target"`
	// Stuck blockers are stuck objects themselves; their causes are diagnosed too.
	Stuck   bool   `json:"stuck,omitempty"`
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Diagnosis is what `doctor` prints: every stuck object with its cause, and the root
// causes that explain them, each said once.
type Diagnosis struct {
	metav1.TypeMeta `json:",inline"`

	// Target is the object `doctor TYPE/NAME` was asked about. Items then hold it and
	// everything it waits for; without a target, every stuck object.
	Target     *ObjectReference     `json:"target,omitempty"`
	RootCauses []RootCause          `json:"rootCauses"`
	Items      []StuckObject        `json:"items"`
	Incomplete []IncompleteResource `json:"incomplete"`
	// AcrossClusters are the root causes found in more than one cluster, each once with
	// the clusters it was found in, when more than one cluster was diagnosed.
	AcrossClusters []RepeatedCause `json:"acrossClusters,omitempty"`
}

// RepeatedCause is one root cause (the same reason about the same subject) found in
// several clusters: the same operator dead in four clusters is one finding.
type RepeatedCause struct {
	Reason   string  `json:"reason"`
	Subject  Subject `json:"subject"`
	NextStep string  `json:"nextStep"`
	// Clusters are the kubeconfig contexts it was found in, sorted.
	Clusters []string `json:"clusters"`
	// Objects counts the stuck objects it explains, in all those clusters.
	Objects int `json:"objects"`
}

// RootCause is one reason many objects may be stuck for: an unavailable APIService, an
// inactive controller, a pod that holds a claim.
type RootCause struct {
	// Cluster is the kubeconfig context, when more than one cluster was diagnosed.
	Cluster  string  `json:"cluster,omitempty"`
	Reason   string  `json:"reason"`
	Subject  Subject `json:"subject"`
	Message  string  `json:"message"`
	NextStep string  `json:"nextStep"`
	// Objects are the stuck objects this root cause explains, directly or through the
	// objects they wait for.
	Objects []ObjectReference `json:"objects"`
}

// Subject is what a root cause is about.
type Subject struct {
	// Kind is a Kubernetes kind (APIService, Pod, ValidatingWebhookConfiguration, ...),
	// or Controller for a controller known only by its name.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// IncompleteResource is a resource type, or a whole group version, that could not be read.
type IncompleteResource struct {
	// Cluster is the kubeconfig context, when more than one cluster was scanned. With
	// reason ClusterUnreachable, nothing of that cluster was read.
	Cluster      string `json:"cluster,omitempty"`
	GroupVersion string `json:"groupVersion"`
	Resource     string `json:"resource"`
	// Namespace is set when only that namespace's objects of the type could not be read:
	// the others were.
	Namespace string           `json:"namespace,omitempty"`
	Reason    IncompleteReason `json:"reason"`
	Message   string           `json:"message"`
}
