// Package preflight predicts, before a deletion, what it would leave stuck in
// Terminating and why, from the live cluster: the engine of `kubectl finalize preflight`.
//
// A deletion is the objects named (or those of a Helm release's manifest) and what
// deleting them deletes: a namespace's content, a CRD's instances, and the dependents
// the garbage collector deletes once all their owners are gone. The cluster is listed
// once, metadata only, in pages (pkg/scan); the owners of finalizers are found as the
// doctor finds them (pkg/owner, pkg/doctor); a few more reads name the webhooks,
// APIServices, conversion webhooks and pods that matter. Nothing is written.
//
//   - preflight.go: the run, the deletion set and what is kept of the listing.
//   - hazard.go: the hazard interface, the families in the order they are looked for,
//     and their safe orders; each family in a file of its own (controllerdeleted.go,
//     crdinstances.go, webhookservice.go, conversionwebhook.go, apiserviceservice.go,
//     claiminuse.go), sharing controller.go and service.go.
//   - helm.go: the objects of a Helm release, from its record in the cluster.
//   - print.go: the text output.
package preflight
