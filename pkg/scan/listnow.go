package scan

import (
	"context"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// LiveList is a list of one type in one namespace made now, as the namespace controller
// makes it: whether it fails there with a CRD's conversion error.
type LiveList struct {
	// Failing: the list failed with a conversion error (Err says it); OK: it succeeded.
	// Neither: it could not be made (Err).
	Failing, OK bool
	// CacheDown: the API server refused it with 429 "storage is (re)initializing": its
	// watch cache of the type is not serving. For a type whose conversion webhook fails,
	// that cache cannot start (its first list converts every object), and the namespace
	// controller's list, which the cache serves, is refused the same way (Err says it).
	CacheDown bool
	Err       error
}

// cacheDownMessage is what the API server's storage layer says while the watch cache of
// a type is not serving (k8s.io/apiserver storage errors, NewTooManyRequestsError).
const cacheDownMessage = "storage is (re)initializing"

// partialObjectMetadataList asks for a list's metadata only (the metadata client's
// Accept header).
const partialObjectMetadataList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

// listNowTimeout bounds one ListNow: a conversion webhook may take its whole
// timeoutSeconds (at most 30 s) before the API server gives up on it.
const listNowTimeout = 35 * time.Second

// ListNow lists gvr in namespace ns once, as the namespace controller does (one request,
// no limit), and says whether it fails with a conversion error. It is not retried: while
// the API server's watch cache of a type cannot initialize, it answers such a list at
// once with 429 "storage is (re)initializing" and Retry-After 30 s, and client-go would
// try ten times, five minutes per namespace (kube v1.36, observed). A discovery client
// without a REST client (fakes) lists through dyn.
func ListNow(ctx context.Context, disc discovery.DiscoveryInterface, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string) LiveList {
	ctx, cancel := context.WithTimeout(ctx, listNowTimeout)
	defer cancel()
	var err error
	if rc := disc.RESTClient(); rc != nil && !reflect.ValueOf(rc).IsNil() {
		path := "/apis/" + gvr.Group + "/" + gvr.Version
		if gvr.Group == "" {
			path = "/api/" + gvr.Version
		}
		// Metadata only, as the namespace controller's metadata client lists: the API
		// server still reads (and converts) every object, but sends none of its body.
		err = rc.Get().AbsPath(path, "namespaces", ns, gvr.Resource).SetHeader("Accept", partialObjectMetadataList).MaxRetries(0).Do(ctx).Error()
	} else {
		_, err = dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	}
	switch {
	case err == nil:
		return LiveList{OK: true}
	case len(ConversionFailures(err.Error())) > 0:
		return LiveList{Failing: true, Err: err}
	case apierrors.IsTooManyRequests(err) && strings.Contains(err.Error(), cacheDownMessage):
		return LiveList{CacheDown: true, Err: err}
	}
	return LiveList{Err: err}
}

// ListNowCommand is ListNow's list, for people: unpaginated, like the namespace
// controller's (kubectl's pages of 500 are served another way, and an empty namespace's
// may succeed while the controller's list fails).
func ListNowCommand(gvr schema.GroupVersionResource, ns string) string {
	what := gvr.Resource + "." + gvr.Version
	if gvr.Group != "" {
		what += "." + gvr.Group
	}
	return "kubectl get " + what + " -n " + ns + " --chunk-size=0"
}
