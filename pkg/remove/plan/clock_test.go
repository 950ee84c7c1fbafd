package plan

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
)

// TestServerClockIsTheAPIServersClock: an API server whose clock is 10 minutes ahead of
// this machine's: the clock reads its Date once, from a GET /version, and says its time
// from then on; a fake client, which cannot be asked, is the local clock without an
// error; an answer without a Date is the local clock, with the error that says why.
func TestServerClockIsTheAPIServersClock(t *testing.T) {
	ahead := 10 * time.Minute
	asked := 0
	date := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked++
		if date {
			w.Header().Set("Date", time.Now().Add(ahead).UTC().Format(http.TimeFormat))
		} else {
			w.Header()["Date"] = nil // net/http writes none
		}
		_, _ = w.Write([]byte(`{"major":"1","minor":"36"}`))
	}))
	t.Cleanup(srv.Close)
	kc, err := client.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	clk := NewServerClock(t.Context(), kc)
	for range 2 {
		if skew := time.Until(clk.Now()); clk.Err() != nil || skew < ahead-2*time.Second || skew > ahead+2*time.Second {
			t.Errorf("the server's clock is %s ahead, the clock says %s (%v)", ahead, skew, clk.Err())
		}
	}
	if since := clk.Since(time.Now()); since < ahead-2*time.Second || since > ahead+2*time.Second {
		t.Errorf("Since(now) by the server's clock: %s, want %s", since, ahead)
	}
	if asked != 1 {
		t.Errorf("GET /version sent %d times, want once per clock", asked)
	}
	fk := NewServerClock(t.Context(), fake.NewClientset())
	if skew := time.Until(fk.Now()); skew > time.Second || skew < -time.Second || fk.Err() != nil {
		t.Errorf("a fake client: %s off the local clock, error %v", skew, fk.Err())
	}
	date = false
	none := NewServerClock(t.Context(), kc)
	if skew := time.Until(none.Now()); skew > time.Second || skew < -time.Second || none.Err() == nil ||
		!strings.Contains(none.Err().Error(), "no valid Date header") {
		t.Errorf("no Date: %s off the local clock, error %v", skew, none.Err())
	}
}
