// Package owner says who is expected to remove a finalizer: the built-in catalogue of
// well-known finalizers first, then the field manager that wrote it (from managedFields),
// then the controller of the API group its domain names. It also reports which manager
// added the finalizer, whatever the owner's source.
package owner
