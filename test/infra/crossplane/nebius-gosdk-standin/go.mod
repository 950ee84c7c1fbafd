// A stand-in for github.com/nebius/gosdk, whose v0.2.28 the Go module proxy does not
// serve (403, "This module version is not available"). provider-kubernetes imports it
// only to authenticate to Nebius Managed Kubernetes clusters (pkg/kube/client/nebius),
// a code path the tests never take: every ProviderConfig they make reads a kubeconfig.
// It has the package API that path uses, and fails at once when called.
module github.com/nebius/gosdk

go 1.26
