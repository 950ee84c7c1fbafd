package plan

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
)

// TestServerNowIsTheAPIServersClock: an API server whose clock is 10 minutes ahead of
// this machine's: a pod's margin is measured against its clock, read from the Date of a
// GET /version, once per client; a fake client without one falls back to the local clock.
func TestServerNowIsTheAPIServersClock(t *testing.T) {
	ahead := 10 * time.Minute
	asked := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked++
		w.Header().Set("Date", time.Now().Add(ahead).UTC().Format(http.TimeFormat))
		_, _ = w.Write([]byte(`{"major":"1","minor":"36"}`))
	}))
	t.Cleanup(srv.Close)
	kc, err := client.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if skew := time.Until(ServerNow(t.Context(), kc)); skew < ahead-2*time.Second || skew > ahead+2*time.Second {
			t.Errorf("the server's clock is %s ahead, ServerNow says %s", ahead, skew)
		}
	}
	if asked != 1 {
		t.Errorf("GET /version sent %d times, want once per client", asked)
	}
	if skew := time.Until(ServerNow(t.Context(), fake.NewClientset())); skew > time.Second || skew < -time.Second {
		t.Errorf("a fake client: %s off the local clock", skew)
	}
}
