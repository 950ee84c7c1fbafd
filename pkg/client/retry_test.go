package client

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

func TestReadsAreRetriedOnServerErrors(t *testing.T) {
	var calls atomic.Int32
	failures := map[string]int{"/flaky": 2, "/down": 100, "/told": 100, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": 1}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(calls.Add(1))
		if b, _ := io.ReadAll(r.Body); r.Method == http.MethodPost && string(b) != "{}" {
			t.Errorf("attempt %d of a POST: body %q", n, b)
		}
		switch {
		case r.URL.Path == "/told":
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		case n <= failures[r.URL.Path]:
			w.WriteHeader([]int{http.StatusInternalServerError, http.StatusGatewayTimeout}[n%2])
		default:
			_, _ = w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	rt := &retryServerErrors{next: http.DefaultTransport, backoff: wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 4}}
	do := func(method, path string) (int, int32) {
		calls.Store(0)
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, calls.Load()
	}
	for _, tt := range []struct {
		method, path string
		code         int
		calls        int32
	}{
		{"GET", "/flaky", 200, 3},   // two server errors, then the answer
		{"GET", "/down", 504, 5},    // bounded: the first attempt and 4 more
		{"GET", "/told", 503, 1},    // a Retry-After is client-go's to honour
		{"PATCH", "/flaky", 504, 1}, // a write is the writer's decision
		{"POST", "/flaky", 504, 1},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 200, 2}, // a review stores nothing
	} {
		if code, calls := do(tt.method, tt.path); code != tt.code || calls != tt.calls {
			t.Errorf("%s %s: %d after %d calls, want %d after %d", tt.method, tt.path, code, calls, tt.code, tt.calls)
		}
	}
}
