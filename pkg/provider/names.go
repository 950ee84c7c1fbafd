package provider

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// nameRule is what the name of an object of one type must be. The kubernetes provider
// checks a name against its type's rule before it asks: a name no object of the type can
// have ("Orders-DB", "orders-db ") is answered 404 by the API server, which would read as
// Gone while the object it was meant to name exists.
type nameRule struct {
	// Name says which rule, for evidence.
	Name  string
	check func(string) []string
}

// Check returns why name breaks the rule, or nothing.
func (r nameRule) Check(name string) []string { return r.check(name) }

// The rules object names follow.
var (
	// dns1123Subdomain is the rule of most built-in types and of every custom resource,
	// and the strictest that every type's names meet but those below: it is the rule of a
	// type this table does not know.
	dns1123Subdomain = nameRule{"an RFC 1123 subdomain", validation.IsDNS1123Subdomain}
	// dns1123Label is the rule of namespaces, services and statefulsets.
	dns1123Label = nameRule{"an RFC 1123 label", validation.IsDNS1123Label}
	// pathSegmentName is the rule of types that take any name the API server can store:
	// not "." or "..", and no '/' or '%'.
	pathSegmentName = nameRule{"a path segment name", content.IsPathSegmentName}
	// configMapKeyName: letters, digits, '-', '_' and '.'.
	configMapKeyName = nameRule{"a ConfigMap key", validation.IsConfigMapKey}
	// ipAddressName: an IP address in its canonical form.
	ipAddressName = nameRule{"an IP address in canonical form", isCanonicalIP}
	// clusterTrustBundleName: an RFC 1123 subdomain, after a signer's prefix ending in ':'.
	clusterTrustBundleName = nameRule{"an RFC 1123 subdomain after an optional signer prefix", isClusterTrustBundleName}
)

// nameRules are the types whose names follow another rule than dns1123Subdomain, as the
// API server of Kubernetes v1.36 validates them on create (k8s.io/kubernetes@v1.36.3,
// pkg/apis/*/validation; every name also passes content.IsPathSegmentName in the generic
// registry, k8s.io/apiserver@v0.36.3 pkg/registry/generic/registry/store.go):
//
//   - namespaces: ValidateNamespaceName = NameIsDNSLabel (core/validation/validation.go,
//     apimachinery pkg/api/validation/generic.go)
//   - services: NameIsDNS1035Label, or NameIsDNSLabel with RelaxedServiceNameValidation
//     (beta, on by default in v1.36; ValidateServiceCreate): a DNS label admits both
//   - statefulsets.apps: ValidateStatefulSetName = NameIsDNSLabel (apps/validation)
//   - roles, clusterroles, rolebindings, clusterrolebindings: ValidateRBACName =
//     content.IsPathSegmentName (rbac/validation)
//   - certificatesigningrequests: ValidateCertificateRequestName accepts any name
//     (certificates/validation), so the registry's path segment rule is all
//   - clustertrustbundles: ValidateClusterTrustBundleName, a DNS subdomain after the
//     signer's prefix (core/validation/names.go)
//   - ipaddresses.networking.k8s.io: ValidateIPAddressName, a canonical IP
//     (networking/validation)
//   - leasecandidates.coordination.k8s.io: ValidLeaseCandidateName = IsConfigMapKey
//     (coordination/validation)
//   - events (core): ValidateEventCreate checks nothing more through core/v1
//     (core/validation/events.go), so the path segment rule is all; the same objects are
//     events.events.k8s.io
//
// Every other built-in type validated there uses NameIsDNSSubdomain (pods, secrets,
// configmaps, nodes, persistentvolumes, deployments, jobs, ...), and custom resources do
// too (k8s.io/apiextensions-apiserver@v0.36.3 pkg/registry/customresource/validator.go).
// A type not listed gets dns1123Subdomain: where its names may be more (an aggregated
// API's), a name beyond it is Unknown, never Gone.
var nameRules = map[schema.GroupResource]nameRule{
	{Resource: "namespaces"}:                                               dns1123Label,
	{Resource: "services"}:                                                 dns1123Label,
	{Resource: "events"}:                                                   pathSegmentName,
	{Group: "events.k8s.io", Resource: "events"}:                           pathSegmentName,
	{Group: "apps", Resource: "statefulsets"}:                              dns1123Label,
	{Group: "rbac.authorization.k8s.io", Resource: "roles"}:                pathSegmentName,
	{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}:         pathSegmentName,
	{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}:         pathSegmentName,
	{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}:  pathSegmentName,
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: pathSegmentName,
	{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}:        clusterTrustBundleName,
	{Group: "networking.k8s.io", Resource: "ipaddresses"}:                  ipAddressName,
	{Group: "coordination.k8s.io", Resource: "leasecandidates"}:            configMapKeyName,
}

// nameRuleFor is the rule the names of objects of gr follow.
func nameRuleFor(gr schema.GroupResource) nameRule {
	if r, ok := nameRules[gr]; ok {
		return r
	}
	return dns1123Subdomain
}

// checkName says why name cannot be the name of an object of gr, naming the rule it
// breaks, or "".
func checkName(gr schema.GroupResource, name string) string {
	rule := pathSegmentName
	msgs := rule.Check(name)
	if len(msgs) == 0 {
		rule = nameRuleFor(gr)
		msgs = rule.Check(name)
	}
	if len(msgs) == 0 {
		return ""
	}
	return fmt.Sprintf("%q is not a name any %s object can have: it must be %s: %s", name, gr, rule.Name, strings.Join(msgs, "; "))
}

// checkNamespace says why ns cannot be a namespace's name, or "".
func checkNamespace(ns string) string {
	if msgs := dns1123Label.Check(ns); len(msgs) > 0 {
		return fmt.Sprintf("%q is not a name any namespace can have: it must be %s: %s", ns, dns1123Label.Name, strings.Join(msgs, "; "))
	}
	return ""
}

// isCanonicalIP is ValidateIPAddressName's rule: validation.IsValidIP, as messages.
func isCanonicalIP(name string) []string {
	var msgs []string
	for _, e := range validation.IsValidIP(field.NewPath("name"), name) {
		msgs = append(msgs, e.Detail)
	}
	return msgs
}

// isClusterTrustBundleName: a bundle of a signer is named "SIGNER:NAME", the signer's '/'
// written ':'; NAME, or the whole name of a bundle without a signer, is a DNS subdomain.
func isClusterTrustBundleName(name string) []string {
	if i := strings.LastIndex(name, ":"); i >= 0 {
		if i == 0 {
			return []string{"the signer prefix before ':' is empty"}
		}
		return validation.IsDNS1123Subdomain(name[i+1:])
	}
	return validation.IsDNS1123Subdomain(name)
}
