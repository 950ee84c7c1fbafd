// Package client is the part of client-go's typed clientset the plugin uses.
//
// The full clientset (k8s.io/client-go/kubernetes) links the typed clients and apply
// configurations of every API group: 13.7 MB of the binary, nearly all of it paged in at
// start. The plugin reads and writes seven groups, so it links those seven. Both
// *kubernetes.Clientset and client-go's fake clientset satisfy Interface, so tests pass
// either.
package client

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	admissionregistrationv1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	discoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	eventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Interface is the typed API the plugin uses, method for method as the clientset names it.
type Interface interface {
	Discovery() discovery.DiscoveryInterface
	AdmissionregistrationV1() admissionregistrationv1.AdmissionregistrationV1Interface
	AuthenticationV1() authenticationv1.AuthenticationV1Interface
	AuthorizationV1() authorizationv1.AuthorizationV1Interface
	CoordinationV1() coordinationv1.CoordinationV1Interface
	CoreV1() corev1.CoreV1Interface
	DiscoveryV1() discoveryv1.DiscoveryV1Interface
	EventsV1() eventsv1.EventsV1Interface
}

// Set holds one typed client per group, sharing one HTTP client (and so one connection
// pool and one rate limiter), as the clientset does.
type Set struct {
	discovery               *discovery.DiscoveryClient
	admissionregistrationV1 *admissionregistrationv1.AdmissionregistrationV1Client
	authenticationV1        *authenticationv1.AuthenticationV1Client
	authorizationV1         *authorizationv1.AuthorizationV1Client
	coordinationV1          *coordinationv1.CoordinationV1Client
	coreV1                  *corev1.CoreV1Client
	discoveryV1             *discoveryv1.DiscoveryV1Client
	eventsV1                *eventsv1.EventsV1Client
}

var _ Interface = (*Set)(nil)

// NewForConfig returns the clients for c, the way kubernetes.NewForConfig does: one
// HTTP client for all of them and, when c sets none, one token-bucket rate limiter from
// c's QPS and Burst.
func NewForConfig(c *rest.Config) (*Set, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	return NewForConfigAndClient(&cfg, httpClient)
}

// NewForConfigAndClient returns the clients for c over httpClient.
func NewForConfigAndClient(c *rest.Config, httpClient *http.Client) (*Set, error) {
	cfg := *c
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	var s Set
	var err error
	if s.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(&cfg, httpClient); err != nil {
		return nil, err
	}
	if s.admissionregistrationV1, err = admissionregistrationv1.NewForConfigAndClient(&cfg, httpClient); err != nil {
		return nil, err
	}
	if s.authenticationV1, err = authenticationv1.NewForConfigAndClient(&cfg, httpClient); err != nil {
		return nil, err
	}
	if s.authorizationV1, err = authorizationv1.NewForConfigAndClient(&cfg, httpClient); err != nil {
		return nil, err
	}
	if s.coordinationV1, err = coordinationv1.NewForConfigAndClient(&cfg, httpClient); err != nil {
		return nil, err
	}
	if s.coreV1, err = corev1.NewForConfigAndClient(&cfg, httpClient); err != nil {
		return nil, err
	}
	if s.discoveryV1, err = discoveryv1.NewForConfigAndClient(&cfg, httpClient); err != nil {
		return nil, err
	}
	if s.eventsV1, err = eventsv1.NewForConfigAndClient(&cfg, httpClient); err != nil {
		return nil, err
	}
	return &s, nil
}

// Discovery returns the discovery client.
func (s *Set) Discovery() discovery.DiscoveryInterface { return s.discovery }

// AdmissionregistrationV1 returns the admissionregistration.k8s.io/v1 client.
func (s *Set) AdmissionregistrationV1() admissionregistrationv1.AdmissionregistrationV1Interface {
	return s.admissionregistrationV1
}

// AuthenticationV1 returns the authentication.k8s.io/v1 client.
func (s *Set) AuthenticationV1() authenticationv1.AuthenticationV1Interface {
	return s.authenticationV1
}

// AuthorizationV1 returns the authorization.k8s.io/v1 client.
func (s *Set) AuthorizationV1() authorizationv1.AuthorizationV1Interface {
	return s.authorizationV1
}

// CoordinationV1 returns the coordination.k8s.io/v1 client.
func (s *Set) CoordinationV1() coordinationv1.CoordinationV1Interface { return s.coordinationV1 }

// CoreV1 returns the core v1 client.
func (s *Set) CoreV1() corev1.CoreV1Interface { return s.coreV1 }

// DiscoveryV1 returns the discovery.k8s.io/v1 client.
func (s *Set) DiscoveryV1() discoveryv1.DiscoveryV1Interface { return s.discoveryV1 }

// EventsV1 returns the events.k8s.io/v1 client.
func (s *Set) EventsV1() eventsv1.EventsV1Interface { return s.eventsV1 }

// Clients are the clients a pass over one cluster reads and writes through.
type Clients struct {
	Discovery discovery.DiscoveryInterface
	Metadata  metadata.Interface
	Kube      Interface
	Dynamic   dynamic.Interface
}

// Refresh drops what the discovery client cached, so that the next scan discovers the
// cluster's types as they are then: a run that scans more than once (reconcile without
// --once) lists a type installed since its last scan, and no longer a type removed.
func (c *Clients) Refresh() {
	if cached, ok := c.Discovery.(discovery.CachedDiscoveryInterface); ok {
		cached.Invalidate()
	}
}
