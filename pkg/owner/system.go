package owner

import (
	"fmt"
	"strings"
)

// reservedDomains are the DNS domains Kubernetes keeps for its own components, with all
// their subdomains: kubernetes.io (pvc-protection, batch.kubernetes.io/job-tracking,
// external-provisioner.volume.kubernetes.io/finalizer) and k8s.io
// (customresourcecleanup.apiextensions.k8s.io, networking.k8s.io/service-cidr-finalizer,
// gateway.networking.k8s.io). The Kubernetes project's own sub-projects (CSI sidecars, the
// snapshot controller, Gateway API) write theirs there too.
var reservedDomains = []string{"kubernetes.io", "k8s.io"}

// IsSystem reports whether finalizer is a system finalizer: one whose name has no domain
// ("kubernetes", "orphan", "foregroundDeletion", "cleanup",
// "external-attacher/csi.example.com"), or whose domain is one Kubernetes reserves
// (kubernetes.io, k8s.io or a subdomain of either). It decides by the name alone, never by
// whether the catalogue knows it: a reserved name the catalogue does not list, added by a
// newer Kubernetes or by a component nobody catalogued, is system all the same. Removing a
// system finalizer takes --allow-system (remove) or allowSystem (a policy's rule).
//
// Finalizer names are case-sensitive, and the API server accepts a domain only in lower
// case before a "/". A name without one may be in any case, though
// ("Cleanup.Example.K8s.IO" on a custom resource): the domain is compared in lower case,
// so that such a name is system too. Any doubt makes a name system, never the reverse.
func IsSystem(finalizer string) bool { return SystemReason(finalizer) != "" }

// SystemReason says why finalizer is a system finalizer ("it names no domain", "its
// domain example.kubernetes.io is under kubernetes.io"), or "" when it is not one.
// IsSystem is SystemReason's answer.
func SystemReason(finalizer string) string {
	domain := domainOf(finalizer)
	if domain == "" {
		if prefix, _, found := strings.Cut(finalizer, "/"); found {
			return fmt.Sprintf("its prefix %q names no domain", prefix)
		}
		return "it names no domain"
	}
	d := strings.TrimSuffix(strings.ToLower(domain), ".")
	for _, r := range reservedDomains {
		switch {
		case d == r:
			return fmt.Sprintf("its domain is %s", domain)
		case strings.HasSuffix(d, "."+r):
			return fmt.Sprintf("its domain %s is under %s", domain, r)
		}
	}
	return ""
}
