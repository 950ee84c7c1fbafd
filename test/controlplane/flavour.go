package controlplane

import "slices"

// The flavours of control plane the suites start, one per package's TestMain
// (docs/development.md, "The test framework"). A test that needs another shape (etcd
// compaction, a conversion webhook that breaks the namespace controller) passes Options
// of its own to Start.

// APIServer is etcd and kube-apiserver alone: objects stay as a test writes them; no
// controller removes a finalizer, deletes an object or reports on a namespace.
func APIServer() Options { return Options{} }

// WithControllers adds kube-controller-manager running DefaultControllers and extra.
func WithControllers(extra ...string) Options {
	return Options{Controllers: append(slices.Clone(DefaultControllers), extra...)}
}

// WithNodes adds n nodes (a kubelet and containerd each, kube-scheduler beside the
// first) and kube-controller-manager with NodeControllers too: pods run.
func WithNodes(n int) Options { return Options{Node: true, Nodes: n} }

// WithPodNetwork is one node whose pods have a real network, inside a network namespace
// the control plane makes: they reach the API server at the kubernetes Service.
func WithPodNetwork() Options { return Options{PodNetwork: true} }
