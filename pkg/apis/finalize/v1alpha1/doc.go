// Package v1alpha1 holds the types kubectl-finalize prints and reads: the results of its
// commands (StuckObjectList, ...) and, later, its policy and provider protocol. Their JSON
// is a contract with users' scripts: fields are added, never renamed.
//
// +k8s:deepcopy-gen=package
// +groupName=kubectl-finalize.github.io
package v1alpha1
