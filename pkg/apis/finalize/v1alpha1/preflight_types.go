package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Hazards `preflight` predicts. The names are part of the JSON contract.
const (
	// HazardControllerDeleted: objects carry a finalizer whose controller the deletion
	// removes (every Deployment, StatefulSet or DaemonSet it runs as is deleted). Those
	// being deleted stay Terminating; the others will the day they are deleted.
	HazardControllerDeleted = "ControllerDeleted"
	// HazardOperatorDeletedFirst: a namespace is deleted with an operator inside it and
	// objects in the same namespace that carry the operator's finalizers. The namespace
	// controller deletes the pods first, so the operator is gone before it can finalize
	// them.
	HazardOperatorDeletedFirst = "OperatorDeletedFirst"
	// HazardCRDInstancesWithFinalizers: a CRD is deleted while instances of it carry
	// finalizers; the CRD stays Terminating until their controller removes them.
	HazardCRDInstancesWithFinalizers = "CRDInstancesWithFinalizers"
	// HazardWebhookServiceDeleted: a validating or mutating webhook with failurePolicy
	// Fail, or a CRD's conversion webhook, loses its service (or the workload behind
	// it) while its configuration stays: it then rejects the writes it intercepts,
	// finalizer removals included. Also a CRD deleted with its conversion webhook's
	// service while objects remain that may be stored at another version: its cleanup
	// reads them through the webhook.
	HazardWebhookServiceDeleted = "WebhookServiceDeleted"
	// HazardAPIServiceServiceDeleted: an APIService loses its service (or the workload
	// behind it) while it stays registered: it becomes unavailable, and no namespace in
	// the cluster can finish deleting.
	HazardAPIServiceServiceDeleted = "APIServiceServiceDeleted"
	// HazardAPIServiceUnavailable: an APIService that stays is already unavailable (its
	// Available condition is False and its group version cannot be discovered now): the
	// namespace controller's discovery fails, so no namespace of the deletion can finish.
	HazardAPIServiceUnavailable = "APIServiceUnavailable"
	// HazardConversionWebhookUnavailable: a CRD's conversion webhook already fails, and a
	// list of the type in a namespace of the deletion, made now as the namespace
	// controller makes it, fails with it: that namespace cannot finish deleting.
	HazardConversionWebhookUnavailable = "ConversionWebhookUnavailable"
	// HazardClaimInUse: a PersistentVolumeClaim is deleted while pods that are not deleted
	// with it still use it; kubernetes.io/pvc-protection keeps it until they are gone.
	HazardClaimInUse = "ClaimInUse"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PreflightReport is what `preflight` prints: what deleting the targets would leave
// stuck, why, and a safe order. No hazard means the deletion is safe as far as the
// cluster tells; Incomplete then says what could not be checked.
type PreflightReport struct {
	metav1.TypeMeta `json:",inline"`

	// Targets are the objects whose deletion was asked about: those named, or those of
	// the Helm release.
	Targets []ObjectReference `json:"targets"`
	// HelmRelease is "NAMESPACE/NAME" of the release whose objects are the targets, when
	// --helm-release was given, and HelmRevision its revision that was read.
	HelmRelease  string `json:"helmRelease,omitempty"`
	HelmRevision int    `json:"helmRevision,omitempty"`
	// Deleted counts the objects the deletion removes: the targets, the content of the
	// namespaces and the instances of the CRDs among them, and their dependents the
	// garbage collector deletes.
	Deleted int `json:"deleted"`
	// Hazards are what the deletion would leave stuck, grouped by what causes them.
	Hazards []Hazard `json:"hazards"`
	// Incomplete lists what could not be read: the prediction may miss hazards there.
	Incomplete []IncompleteResource `json:"incomplete"`
}

// Hazard is one reason the deletion would leave objects stuck, said once for every
// object it would strand.
type Hazard struct {
	// Reason is one of the Hazard* constants.
	Reason string `json:"reason"`
	// Cause is the object whose deletion causes it: the controller's workload, the
	// namespace, the CRD, the webhook configuration or APIService that would lose its
	// service, the claim.
	Cause   ObjectReference `json:"cause"`
	Message string          `json:"message"`
	// Objects are the objects it would leave stuck (or, for a webhook or an APIService,
	// the objects of the deletion whose finalizers it would keep from being removed).
	Objects []ObjectReference `json:"objects"`
	// SafeOrder is the order that avoids it, one step an entry.
	SafeOrder []string `json:"safeOrder"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(SchemeGroupVersion, &PreflightReport{})
		return nil
	})
}
