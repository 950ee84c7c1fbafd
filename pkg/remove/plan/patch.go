package plan

import (
	"context"
	"fmt"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// Event reasons of the removal of a finalizer.
const (
	// ReasonRemoved is the reason of an Event for a removal a provider verified.
	ReasonRemoved = "FinalizerRemoved"
	// ReasonForceRemoved is the reason of an Event for a removal forced without
	// verification.
	ReasonForceRemoved = "FinalizerForceRemoved"
)

// Patch removes a finalizer from metadata.finalizers with a JSON patch that tests the
// object's uid, the resourceVersion of a pinned removal, and the finalizer at its index
// (pkg/remove/write, patch.go).
var Patch Kind = patch{}

type patch struct{}

func (patch) Action() finalizev1alpha1.RemovalAction { return "" }

func (patch) Describe(t *Target) string {
	return fmt.Sprintf("finalizer %s of %s", t.Finalizer, t.Ref)
}

func (patch) Permissions(t *Target) []Permission {
	return []Permission{{Verb: "patch", Group: t.Resource.Group, Resource: t.Resource.Resource, Namespace: t.Namespace}}
}

func (patch) Reason(verified bool) string { return finalizerReason(verified) }

func (patch) Event(t *Target) (string, string) { return finalizerEvent(t) }

func (patch) refuse(context.Context, *Planner, *Action, *kube.Object, Options) *Refusal { return nil }

// finalizerReason is the reason of the removal of a finalizer, from either field.
func finalizerReason(verified bool) string {
	if verified {
		return ReasonRemoved
	}
	return ReasonForceRemoved
}

// finalizerEvent is the Event of the removal of a finalizer, from either field.
func finalizerEvent(t *Target) (string, string) {
	return "RemoveFinalizer", "Removed finalizer " + t.Finalizer
}
