package client

import (
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// ServerErrorBackoff paces what is sent again after a server error: a read, a review, an
// Event, the decision of a write that got no answer. 4 more attempts, 250 ms to 2 s
// apart, under 4 s in all.
var ServerErrorBackoff = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 4}

// RetryServerErrors wraps a transport so that a read (GET), or a review that stores
// nothing (SelfSubjectReview, SelfSubjectAccessReview), the API server answered with 500,
// 502, 503 or 504 and no Retry-After is sent again after ServerErrorBackoff. client-go
// already waits and retries when a Retry-After is given (429 from API Priority and
// Fairness, 5xx from a server shutting down), and retries a read whose connection was
// reset; a server error without one, such as an etcd timeout, would otherwise end the
// read at once. Writes pass through untouched: whether a write may be sent again is the
// writer's decision (pkg/remove reads the object again and decides anew; an Event is
// created again under the same name).
func RetryServerErrors(rt http.RoundTripper) http.RoundTripper {
	return &retryServerErrors{next: rt, backoff: ServerErrorBackoff}
}

type retryServerErrors struct {
	next    http.RoundTripper
	backoff wait.Backoff
}

func (r *retryServerErrors) RoundTrip(req *http.Request) (*http.Response, error) {
	if !safeToRepeat(req) {
		return r.next.RoundTrip(req)
	}
	backoff := r.backoff
	for {
		resp, err := r.next.RoundTrip(req)
		if err != nil || !serverError(resp) || backoff.Steps == 0 {
			return resp, err
		}
		if req.Body != nil {
			body, berr := req.GetBody()
			if berr != nil {
				return resp, err // err is nil: the server's answer stands when the request cannot be sent again
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
		pause := backoff.Step()
		// The answer is dropped for the next: drain it so the connection is reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(pause):
		}
	}
}

// safeToRepeat: a read, or a review that stores nothing (who am I, may I), whose body
// can be sent again.
func safeToRepeat(req *http.Request) bool {
	switch {
	case req.Method == http.MethodGet:
		return true
	case req.Method == http.MethodPost && req.GetBody != nil:
		return strings.HasSuffix(req.URL.Path, "/selfsubjectreviews") || strings.HasSuffix(req.URL.Path, "/selfsubjectaccessreviews") ||
			strings.HasSuffix(req.URL.Path, "/selfsubjectrulesreviews")
	}
	return false
}

// serverError is a 500, 502, 503 or 504 that does not say when to come back.
func serverError(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return resp.Header.Get("Retry-After") == ""
	}
	return false
}

// WrappedRoundTripper lets client-go reach the transport underneath.
func (r *retryServerErrors) WrappedRoundTripper() http.RoundTripper { return r.next }
