// Package scan finds every object that is being deleted and still carries finalizers.
//
// It discovers every listable resource type once (aggregated discovery, preferred
// versions, built-in, CRDs and aggregated APIs, namespaced and cluster-scoped) and lists
// each through the metadata client, in pages, several types at a time, with no request per
// object. Namespaces are listed with the typed client, because their own finalizers live in
// spec.finalizers. What cannot be discovered or listed is reported, never hidden: a partial
// scan must not look clean.
package scan
