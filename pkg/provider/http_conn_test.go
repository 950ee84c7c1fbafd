package provider

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// TestHTTPConnectionsAreKept: a rule's requests reuse their connections to the API,
// whatever part of the answer the rule reads: a body the answer does not need (a rule
// that reads only the status, a status that is neither gone nor present, a 5xx) is read
// to its end, up to drainLimit, before it is closed. Closed unread, each verification
// cost a new TLS handshake: 800 connections for 800 requests.
func TestHTTPConnectionsAreKept(t *testing.T) {
	body := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"state":"available"}`))
		}
	}
	readsJSON := &finalizev1alpha1.HTTPResponse{JSONPath: "{.state}", Gone: []string{"deleted"}}
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		resp *finalizev1alpha1.HTTPResponse
	}{
		{"a JSON value read", body(http.StatusOK), readsJSON},
		{"a 404 read", body(http.StatusNotFound), readsJSON},
		{"the status only", body(http.StatusOK), nil},
		{"neither gone nor present", body(http.StatusTeapot), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The connections are counted from the server's start: httptest's own hook
			// calls the one set before it starts.
			var conns atomic.Int32
			srv := httptest.NewUnstartedServer(tc.h)
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.StartTLS()
			t.Cleanup(srv.Close)
			c := &cloud{Server: srv, caFile: filepath.Join(t.TempDir(), "ca.pem")}
			if err := os.WriteFile(c.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
				t.Fatal(err)
			}
			spec := c.spec("/instances/x")
			spec.Response = tc.resp
			call := prepare(t, newProvider(t, &finalizev1alpha1.Verify{HTTP: spec}, Options{}))
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 50 {
						_ = call.Do(context.Background())
					}
				})
			}
			wg.Wait()
			// Eight at once, each kept: about one connection for each, and those a dial
			// that raced a connection going idle adds (up to 36 seen on a loaded
			// machine); a connection per request is 400.
			if n := conns.Load(); n > 100 {
				t.Errorf("%d connections for 400 requests, 8 at a time", n)
			}
		})
	}
}
