package provider

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// cloud is an HTTPS server with its own CA that plays a cloud API.
type cloud struct {
	*httptest.Server
	caFile string
	hits   atomic.Int32
	last   atomic.Pointer[http.Request]
}

func newCloud(t *testing.T, h http.HandlerFunc) *cloud {
	t.Helper()
	c := &cloud{}
	c.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		c.last.Store(r)
		h(w, r)
	}))
	t.Cleanup(c.Close)
	c.caFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate().Raw})
	if err := os.WriteFile(c.caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *cloud) spec(path string) *finalizev1alpha1.HTTPProvider {
	return &finalizev1alpha1.HTTPProvider{URL: c.URL + path, TLS: &finalizev1alpha1.TLS{CAFile: c.caFile}, Timeout: &metav1.Duration{Duration: 3 * time.Second}}
}

func request() *Request {
	return &Request{Rule: "dbs", Finalizer: "db.example.com/finalizer", Object: &unstructured.Unstructured{Object: object}}
}

func ask(t *testing.T, spec *finalizev1alpha1.HTTPProvider, opts Options) Answer {
	t.Helper()
	p, err := New(&finalizev1alpha1.Verify{HTTP: spec}, opts)
	if err != nil {
		t.Fatal(err)
	}
	call, err := p.Prepare(request())
	if err != nil {
		t.Fatal(err)
	}
	return call.Do(context.Background())
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

func TestHTTPStatuses(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		spec    func(*finalizev1alpha1.HTTPProvider)
		want    finalizev1alpha1.Verdict
		says    string
	}{
		{"404 is gone", status(404), nil, finalizev1alpha1.VerdictGone, ": 404 Not Found"},
		{"410 is gone", status(410), nil, finalizev1alpha1.VerdictGone, ": 410 Gone"},
		{"200 is present", status(200), nil, finalizev1alpha1.VerdictPresent, ": 200 OK"},
		{"204 is present", status(204), nil, finalizev1alpha1.VerdictPresent, ": 204 No Content"},
		{"401 is neither", status(401), nil, finalizev1alpha1.VerdictUnknown, "401 Unauthorized, which means neither gone nor present"},
		{"500 again and again", status(500), nil, finalizev1alpha1.VerdictUnknown, "500 Internal Server Error"},
		{"a chosen status", status(400), func(s *finalizev1alpha1.HTTPProvider) { s.Gone = []int32{400} }, finalizev1alpha1.VerdictGone, "400 Bad Request"},
		{"a body that says deleted", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"state":"DELETED"}`)) },
			func(s *finalizev1alpha1.HTTPProvider) {
				s.Response = &finalizev1alpha1.HTTPResponse{JSONPath: "{.state}", Gone: []string{"DELETED"}}
			}, finalizev1alpha1.VerdictGone, `{.state} = "DELETED"`},
		{"a body that says available", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"state":"AVAILABLE"}`)) },
			func(s *finalizev1alpha1.HTTPProvider) {
				s.Response = &finalizev1alpha1.HTTPResponse{JSONPath: "{.state}", Gone: []string{"DELETED"}}
			}, finalizev1alpha1.VerdictPresent, `"AVAILABLE"`},
		{"a value neither gone nor present", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"state":"DELETING"}`)) },
			func(s *finalizev1alpha1.HTTPProvider) {
				s.Response = &finalizev1alpha1.HTTPResponse{JSONPath: "{.state}", Gone: []string{"DELETED"}, Present: []string{"AVAILABLE"}}
			}, finalizev1alpha1.VerdictUnknown, "neither gone nor present"},
		{"garbage", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>oops")) },
			func(s *finalizev1alpha1.HTTPProvider) {
				s.Response = &finalizev1alpha1.HTTPResponse{JSONPath: "{.state}", Gone: []string{"DELETED"}}
			}, finalizev1alpha1.VerdictUnknown, "the body is not JSON"},
		{"a 50 MB body is not read", bigBody, func(s *finalizev1alpha1.HTTPProvider) {
			s.Response = &finalizev1alpha1.HTTPResponse{JSONPath: "{.state}", Gone: []string{"DELETED"}}
		}, finalizev1alpha1.VerdictUnknown, "the body is larger than 1048576 bytes"},
		{"a 50 MB body without a JSONPath", bigBody, nil, finalizev1alpha1.VerdictPresent, "200 OK"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCloud(t, tt.handler)
			spec := c.spec("/v1/instances/{.status.instanceID}")
			if tt.spec != nil {
				tt.spec(spec)
			}
			a := ask(t, spec, Options{})
			if a.Verdict != tt.want || !strings.Contains(a.Evidence, tt.says) {
				t.Errorf("got %s: %s; want %s saying %q", a.Verdict, a.Evidence, tt.want, tt.says)
			}
		})
	}
}

func bigBody(w http.ResponseWriter, _ *http.Request) {
	chunk := []byte(strings.Repeat("x", 1<<20))
	for range 50 {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

func TestHTTPRetriesThenAnswers(t *testing.T) {
	var n atomic.Int32
	c := newCloud(t, func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	})
	start := time.Now()
	a := ask(t, c.spec("/v1/{.status.instanceID}"), Options{})
	if a.Verdict != finalizev1alpha1.VerdictGone || n.Load() != 2 {
		t.Errorf("429 then 404: %s %s after %d requests", a.Verdict, a.Evidence, n.Load())
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("Retry-After: 1 was not honoured: answered after %s", waited)
	}
	c = newCloud(t, status(503))
	a = ask(t, c.spec("/v1/{.status.instanceID}"), Options{})
	if a.Verdict != finalizev1alpha1.VerdictUnknown || c.hits.Load() != 4 {
		t.Errorf("503 forever: %s %s after %d requests, want Unknown after 4", a.Verdict, a.Evidence, c.hits.Load())
	}
}

func TestHTTPHangsAndRedirects(t *testing.T) {
	hang := newCloud(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	spec := hang.spec("/v1/{.status.instanceID}")
	spec.Timeout = &metav1.Duration{Duration: 300 * time.Millisecond}
	start := time.Now()
	if a := ask(t, spec, Options{}); a.Verdict != finalizev1alpha1.VerdictUnknown || !strings.Contains(a.Evidence, "no answer within 300ms") {
		t.Errorf("a hang: %s %s", a.Verdict, a.Evidence)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a hang took %s, the timeout is 300ms", d)
	}
	other := newCloud(t, status(404))
	away := newCloud(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL+"/gone", http.StatusFound) })
	if a := ask(t, away.spec("/v1/{.status.instanceID}"), Options{}); a.Verdict != finalizev1alpha1.VerdictUnknown || !strings.Contains(a.Evidence, "refusing a redirect to another host") || other.hits.Load() != 0 {
		t.Errorf("a redirect to another host: %s %s (%d requests there)", a.Verdict, a.Evidence, other.hits.Load())
	}
	var home *cloud
	home = newCloud(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/moved" {
			http.Redirect(w, r, home.URL+"/moved", http.StatusMovedPermanently)
			return
		}
		w.WriteHeader(http.StatusGone)
	})
	if a := ask(t, home.spec("/v1/{.status.instanceID}"), Options{}); a.Verdict != finalizev1alpha1.VerdictGone {
		t.Errorf("a redirect on the same host is followed: %s %s", a.Verdict, a.Evidence)
	}
}

func TestHTTPSecretsAndEscaping(t *testing.T) {
	c := newCloud(t, status(404))
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := c.spec("/v1/{.metadata.annotations.hostile}?name={.metadata.annotations.hostile}")
	spec.Headers = []finalizev1alpha1.Header{
		{Name: "Authorization", ValueFrom: &finalizev1alpha1.ValueSource{Env: "DBAPI_TOKEN", Prefix: "Bearer "}},
		{Name: "X-Other", ValueFrom: &finalizev1alpha1.ValueSource{File: tokenFile}},
		{Name: "X-Object", Value: "{.metadata.namespace}/{.metadata.name}"},
	}
	env := func(name string) (string, bool) {
		return map[string]string{"DBAPI_TOKEN": "env-secret"}[name], name == "DBAPI_TOKEN"
	}
	a := ask(t, spec, Options{LookupEnv: env})
	r := c.last.Load()
	if a.Verdict != finalizev1alpha1.VerdictGone || r.Header.Get("Authorization") != "Bearer env-secret" || r.Header.Get("X-Other") != "file-secret" || r.Header.Get("X-Object") != "team-a/db-1" {
		t.Errorf("headers %v, answer %+v", r.Header, a)
	}
	if strings.Contains(a.Evidence, "secret") {
		t.Errorf("the evidence shows a secret: %s", a.Evidence)
	}
	// One escaped segment and one query value, whatever the annotation holds.
	if r.URL.EscapedPath() != "/v1/a%2F..%2Fb%3Fc=d%23e%252Fx%0ASet-Cookie:%20y" || r.URL.Query().Get("name") != "a/../b?c=d#e%2Fx\nSet-Cookie: y" {
		t.Errorf("path %q, query %q", r.URL.EscapedPath(), r.URL.RawQuery)
	}
	spec.Headers = spec.Headers[:1]
	if _, err := New(&finalizev1alpha1.Verify{HTTP: spec}, Options{LookupEnv: func(string) (string, bool) { return "", false }}); err == nil || !strings.Contains(err.Error(), "environment variable DBAPI_TOKEN is not set") {
		t.Errorf("a missing secret: %v", err)
	}
}

func TestHTTPUnknownCAIsUnknown(t *testing.T) {
	c := newCloud(t, status(404))
	spec := c.spec("/v1/{.status.instanceID}")
	spec.TLS = nil // the system's CAs do not know this server
	if a := ask(t, spec, Options{}); a.Verdict != finalizev1alpha1.VerdictUnknown || !strings.Contains(a.Evidence, "certificate") {
		t.Errorf("an unknown CA: %s %s", a.Verdict, a.Evidence)
	}
}

// roundTripFunc lets a test stand in for the network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestHTTPAnAnswerAfterTheDeadlineIsNotUsed replays what net/http does when a response
// races the request's deadline: it returns the response, not the deadline's error. CI
// caught it once, a hanging server's empty 200 read as "the body is not JSON"; a 404
// that late must not count as Gone either.
func TestHTTPAnAnswerAfterTheDeadlineIsNotUsed(t *testing.T) {
	p, err := New(&finalizev1alpha1.Verify{HTTP: &finalizev1alpha1.HTTPProvider{
		URL: "https://cloud.invalid/v1/{.status.instanceID}", Timeout: &metav1.Duration{Duration: 100 * time.Millisecond}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.(*httpProvider).client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		<-r.Context().Done()
		return &http.Response{StatusCode: http.StatusNotFound, Body: http.NoBody, Request: r}, nil
	})
	call, err := p.Prepare(request())
	if err != nil {
		t.Fatal(err)
	}
	if a := call.Do(context.Background()); a.Verdict != finalizev1alpha1.VerdictUnknown || !strings.Contains(a.Evidence, "no answer within 100ms") {
		t.Errorf("a 404 after the deadline: %s %s, want Unknown: no answer within 100ms", a.Verdict, a.Evidence)
	}
}
