// Package owner says who is expected to remove a finalizer: the built-in catalogue of
// well-known finalizers first, then the field manager that wrote it (from managedFields),
// then the controller of the API group its domain names. It also reports which manager
// added the finalizer, whatever the owner's source, and decides by a finalizer's name
// alone whether it is a system finalizer (IsSystem: no domain, or one Kubernetes
// reserves), whether or not the catalogue knows it.
package owner
