package scan

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A list made now is failing with a conversion error, refused because the type's watch
// cache is not serving (which, for a type whose conversion webhook fails, it cannot
// start), or neither; any other refusal, a 429 included, proves nothing.
func TestWhatAListMadeNowSays(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "gadgets"}
	for _, tc := range []struct {
		name                     string
		err                      error
		failing, cacheDown, isOK bool
	}{
		{"ok", nil, false, false, true},
		{"conversion", errors.New(`conversion webhook for example.com/v1, Kind=Gadget failed: Post "https://conv.ns.svc:443/convert?timeout=30s": service "conv" not found`), true, false, false},
		{"the watch cache is not serving", apierrors.NewTooManyRequests("storage is (re)initializing", 30), false, true, false},
		{"another 429", apierrors.NewTooManyRequests("the server has received too many requests", 1), false, false, false},
		{"forbidden", apierrors.NewForbidden(gvr.GroupResource(), "", errors.New("RBAC")), false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "GadgetList"})
			dyn.PrependReactor("list", "gadgets", func(k8stesting.Action) (bool, runtime.Object, error) {
				if tc.err == nil {
					return false, nil, nil
				}
				return true, nil, tc.err
			})
			l := ListNow(context.Background(), &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}, dyn, gvr, "a")
			if l.Failing != tc.failing || l.CacheDown != tc.cacheDown || l.OK != tc.isOK {
				t.Errorf("%+v, want failing %v, cache down %v, ok %v", l, tc.failing, tc.cacheDown, tc.isOK)
			}
		})
	}
}
