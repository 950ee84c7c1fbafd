package provider

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// TestHTTPAnswersShareTheirShape: an API answers in a few shapes, and a pass keeps an
// answer for each object it verified (#36), so answers alike share one shape, and each
// still holds its own: a 404 in JSON is not a 200 in JSON, nor a 404 from another server.
func TestHTTPAnswersShareTheirShape(t *testing.T) {
	var gone, proxied atomic.Bool
	c := newCloud(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if proxied.Load() {
			w.Header().Set("Server", "nginx")
		}
		if gone.Load() {
			w.WriteHeader(http.StatusNotFound)
		}
		_, _ = w.Write([]byte(`{}`))
	})
	p := newProvider(t, &finalizev1alpha1.Verify{HTTP: c.spec("/instances/x")}, Options{})
	ask := func() Answer { return prepare(t, p).Do(context.Background()) }

	gone.Store(true)
	var wg sync.WaitGroup
	answers := make([]Answer, 8)
	for i := range answers {
		wg.Go(func() { answers[i] = ask() })
	}
	wg.Wait()
	for i, a := range answers {
		if a.Verdict != finalizev1alpha1.VerdictGone || a.Shape == nil || a.Shape != answers[0].Shape {
			t.Fatalf("answer %d: %+v, shape %p, the first's %p", i, a, a.Shape, answers[0].Shape)
		}
	}
	proxied.Store(true)
	proxy := ask()
	gone.Store(false)
	present := ask()
	if present.Shape == answers[0].Shape || proxy.Shape == answers[0].Shape || *proxy.Shape == *answers[0].Shape {
		t.Errorf("answers of other shapes share one: present %+v, the proxy's %+v, gone %+v", *present.Shape, *proxy.Shape, *answers[0].Shape)
	}
	if !proxy.Shape.HasServer || proxy.Shape.Server != "nginx" || answers[0].Shape.HasServer {
		t.Errorf("the shapes lost their Server: %+v, %+v", *proxy.Shape, *answers[0].Shape)
	}
}
