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

// ask asks the http provider of spec about request().
func ask(t *testing.T, spec *finalizev1alpha1.HTTPProvider, opts Options) Answer {
	t.Helper()
	return askVia(t, &finalizev1alpha1.Verify{HTTP: spec}, opts)
}

// askVia asks the provider of v about request().
func askVia(t *testing.T, v *finalizev1alpha1.Verify, opts Options) Answer {
	t.Helper()
	return prepare(t, newProvider(t, v, opts)).Do(context.Background())
}

// newProvider is the provider of v, or fails t.
func newProvider(t *testing.T, v *finalizev1alpha1.Verify, opts Options) Provider {
	t.Helper()
	p, err := New(v, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// prepare is p's call about request(), or fails t.
func prepare(t *testing.T, p Provider) Call {
	t.Helper()
	call, err := p.Prepare(request())
	if err != nil {
		t.Fatal(err)
	}
	return call
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
}

// TestHTTPRedirects: a 3xx is never a verdict. Without redirects: SameHost it is Unknown
// with its Location; with it, a redirect on the same host is followed and every hop is
// in the evidence, and one elsewhere is still Unknown.
func TestHTTPRedirects(t *testing.T) {
	other := newCloud(t, status(404))
	var home *cloud
	home = newCloud(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/i-123":
			http.Redirect(w, r, "/login?next=/v1/i-123", http.StatusFound)
		case "/v1/away":
			http.Redirect(w, r, other.URL+"/gone", http.StatusFound)
		case "/v1/loop":
			http.Redirect(w, r, "/v1/loop", http.StatusTemporaryRedirect)
		case "/v1/plain":
			http.Redirect(w, r, strings.Replace(home.URL, "https://", "http://", 1)+"/login", http.StatusFound)
		case "/v1/unchanged":
			w.WriteHeader(http.StatusNotModified)
		default: // a login page that does not know the path asked about
			w.WriteHeader(http.StatusNotFound)
		}
	})
	sameHost := func(s *finalizev1alpha1.HTTPProvider) { s.Redirects = finalizev1alpha1.RedirectsSameHost }
	tests := []struct {
		name string
		path string
		spec func(*finalizev1alpha1.HTTPProvider)
		want finalizev1alpha1.Verdict
		says string
	}{
		{"to a login page on the same host", "/v1/{.status.instanceID}", nil, finalizev1alpha1.VerdictUnknown,
			"/v1/i-123: 302 Found, a redirect to " + home.URL + "/login?next=/v1/i-123: redirects are not followed for a verdict"},
		{"to another host", "/v1/away", nil, finalizev1alpha1.VerdictUnknown, "302 Found, a redirect to " + other.URL + "/gone: redirects are not followed"},
		{"same host, followed", "/v1/{.status.instanceID}", sameHost, finalizev1alpha1.VerdictGone,
			"GET " + home.URL + "/v1/i-123, redirected to GET " + home.URL + "/login?next=/v1/i-123: 404 Not Found"},
		{"another host, not followed", "/v1/away", sameHost, finalizev1alpha1.VerdictUnknown,
			"302 Found, a redirect to " + other.URL + "/gone: a redirect to another host (" + strings.TrimPrefix(other.URL, "https://") + ") is not followed"},
		{"https to http, not followed", "/v1/plain", sameHost, finalizev1alpha1.VerdictUnknown, "a redirect from https to http is not followed"},
		{"a loop", "/v1/loop", sameHost, finalizev1alpha1.VerdictUnknown, "307 Temporary Redirect, a redirect to " + home.URL + "/v1/loop: stopped after 5 redirects"},
		{"304", "/v1/unchanged", sameHost, finalizev1alpha1.VerdictUnknown, "304 Not Modified, a redirect without a Location, which means neither gone nor present"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := home.spec(tt.path)
			if tt.spec != nil {
				tt.spec(spec)
			}
			a := ask(t, spec, Options{})
			if a.Verdict != tt.want || !strings.Contains(a.Evidence, tt.says) {
				t.Errorf("got %s: %s\nwant %s saying %q", a.Verdict, a.Evidence, tt.want, tt.says)
			}
		})
	}
	if n := other.hits.Load(); n != 0 {
		t.Errorf("%d requests reached the other host", n)
	}
}

func TestHTTPSecretsAndEscaping(t *testing.T) {
	c := newCloud(t, status(404))
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := c.spec("/v1/{.metadata.annotations.arn}?name={.metadata.annotations.queryish}")
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
	// A segment as it is, and one query value, whatever the annotation holds.
	if r.URL.EscapedPath() != "/v1/arn:aws:rds:eu-west-1:123456789012:db:orders" || r.URL.Query().Get("name") != "a/../b?c=d#e%2Fx Set-Cookie: y&z=1" {
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
	p := newProvider(t, &finalizev1alpha1.Verify{HTTP: &finalizev1alpha1.HTTPProvider{
		URL: "https://cloud.invalid/v1/{.status.instanceID}", Timeout: &metav1.Duration{Duration: 100 * time.Millisecond}}}, Options{})
	p.(*httpProvider).client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		<-r.Context().Done()
		return &http.Response{StatusCode: http.StatusNotFound, Body: http.NoBody, Request: r}, nil
	})
	if a := prepare(t, p).Do(context.Background()); a.Verdict != finalizev1alpha1.VerdictUnknown || !strings.Contains(a.Evidence, "no answer within 100ms") {
		t.Errorf("a 404 after the deadline: %s %s, want Unknown: no answer within 100ms", a.Verdict, a.Evidence)
	}
}

// TestHTTPAPlaceholderIsNoValue: an object whose instance is "None" is not asked about:
// the API would answer 404 for an instance named None, and that would read as Gone.
func TestHTTPAPlaceholderIsNoValue(t *testing.T) {
	c := newCloud(t, status(404))
	p, err := New(&finalizev1alpha1.Verify{HTTP: c.spec("/v1/instances/{.metadata.annotations.none}")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Prepare(request())
	if err == nil || !strings.Contains(err.Error(), `{.metadata.annotations.none}: resolves to "None", a placeholder, not a value`) {
		t.Errorf("got %v, want a placeholder error", err)
	}
	if n := c.hits.Load(); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}

// TestHTTPACredentialThatCannotBeReadSendsNothing: an environment variable unset, empty
// or blank, or a file unreadable or empty, fails the build of the provider; a file that
// becomes unreadable or empty later makes each call CannotRun, with nothing sent.
func TestHTTPACredentialThatCannotBeReadSendsNothing(t *testing.T) {
	c := newCloud(t, status(404))
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(token, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"EMPTY": "", "BLANK": " \t", "NEWLINE": "abc\ndef", "GOOD": "s3cret"}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	build := func(src finalizev1alpha1.ValueSource, inQuery bool) error {
		spec := c.spec("/v1/{.status.instanceID}")
		if inQuery {
			spec.Query = []finalizev1alpha1.QueryParameter{{Name: "api_key", ValueFrom: &src}}
		} else {
			spec.Headers = []finalizev1alpha1.Header{{Name: "Authorization", ValueFrom: &src}}
		}
		_, err := New(&finalizev1alpha1.Verify{HTTP: spec}, Options{LookupEnv: lookup})
		return err
	}
	write("\n")
	for _, tt := range []struct {
		name    string
		src     finalizev1alpha1.ValueSource
		inQuery bool
		want    string
	}{
		{"unset", finalizev1alpha1.ValueSource{Env: "UNSET", Prefix: "Bearer "}, false, "header Authorization: environment variable UNSET is not set"},
		{"empty", finalizev1alpha1.ValueSource{Env: "EMPTY", Prefix: "Bearer "}, false, "header Authorization: environment variable EMPTY is empty"},
		{"blank", finalizev1alpha1.ValueSource{Env: "BLANK"}, false, "header Authorization: environment variable BLANK is empty"},
		{"a line break", finalizev1alpha1.ValueSource{Env: "NEWLINE"}, false, "header Authorization: environment variable NEWLINE holds a line break or a NUL byte"},
		{"an empty file", finalizev1alpha1.ValueSource{File: token}, false, "header Authorization: file " + token + " is empty"},
		{"no file", finalizev1alpha1.ValueSource{File: filepath.Join(dir, "missing")}, false, "header Authorization: the file cannot be read: open " + dir + "/missing: no such file or directory"},
		{"empty, in the query", finalizev1alpha1.ValueSource{Env: "EMPTY"}, true, "query parameter api_key: environment variable EMPTY is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := build(tt.src, tt.inQuery); err == nil || err.Error() != tt.want {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
	// CA and client certificate files are read when the provider is built.
	for _, tt := range []struct {
		name string
		tls  finalizev1alpha1.TLS
		want string
	}{
		{"no CA file", finalizev1alpha1.TLS{CAFile: filepath.Join(dir, "missing-ca.pem")}, "tls.caFile: open " + dir + "/missing-ca.pem: no such file or directory"},
		{"an empty CA file", finalizev1alpha1.TLS{CAFile: token}, "tls.caFile: " + token + " holds no PEM certificate"},
		{"no client certificate", finalizev1alpha1.TLS{CertFile: filepath.Join(dir, "c.pem"), KeyFile: filepath.Join(dir, "k.pem")}, "tls.certFile and tls.keyFile: open " + dir + "/c.pem"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := c.spec("/v1/{.status.instanceID}")
			spec.TLS = &tt.tls
			if _, err := New(&finalizev1alpha1.Verify{HTTP: spec}, Options{}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
	if c.hits.Load() != 0 {
		t.Fatalf("%d requests were sent", c.hits.Load())
	}

	// A file read at each request: emptied or removed after the build.
	write("file-secret\n")
	spec := c.spec("/v1/{.status.instanceID}")
	spec.Headers = []finalizev1alpha1.Header{{Name: "Authorization", ValueFrom: &finalizev1alpha1.ValueSource{File: token, Prefix: "Bearer "}}}
	p, err := New(&finalizev1alpha1.Verify{HTTP: spec}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		change func()
		want   string
	}{
		{"emptied", func() { write("") }, "not sent: header Authorization: file " + token + " is empty"},
		{"removed", func() { _ = os.Remove(token) }, "not sent: header Authorization: the file cannot be read"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.change()
			a := prepare(t, p).Do(context.Background())
			if a.Verdict != finalizev1alpha1.VerdictUnknown || !a.CannotRun || !strings.Contains(a.Evidence, tt.want) {
				t.Errorf("got %+v, want Unknown, CannotRun, saying %q", a, tt.want)
			}
		})
	}
	if c.hits.Load() != 0 {
		t.Errorf("%d requests were sent", c.hits.Load())
	}
}

// TestHTTPQueryCredentialsAreNeverShown: a query parameter from valueFrom is sent, and
// shown nowhere: not in the evidence of an answer, of a redirect whose Location carries
// it, of a body that echoes it, or of a failed connection; not in the call's key.
func TestHTTPQueryCredentialsAreNeverShown(t *testing.T) {
	const key = "k3y/with+odd=chars"
	var got atomic.Pointer[string]
	c := newCloud(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("api_key")
		got.Store(&q)
		switch r.URL.Path {
		case "/v1/echo":
			_, _ = w.Write([]byte(`{"state":"` + r.URL.RawQuery + `"}`))
		case "/v1/moved":
			http.Redirect(w, r, "/login?"+r.URL.RawQuery, http.StatusFound)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	lookup := func(name string) (string, bool) { return key, name == "DBAPI_KEY" }
	spec := func(path string) *finalizev1alpha1.HTTPProvider {
		s := c.spec(path + "?region={.metadata.namespace}")
		s.Query = []finalizev1alpha1.QueryParameter{{Name: "api_key", ValueFrom: &finalizev1alpha1.ValueSource{Env: "DBAPI_KEY"}}, {Name: "name", Value: "{.metadata.name}"}}
		return s
	}
	withBody := spec("/v1/echo")
	withBody.Response = &finalizev1alpha1.HTTPResponse{JSONPath: "{.state}", Gone: []string{"deleted"}}
	closed := newCloud(t, status(404))
	closed.Close()
	for _, tt := range []struct {
		name string
		spec *finalizev1alpha1.HTTPProvider
		want finalizev1alpha1.Verdict
		says string
	}{
		{"gone", spec("/v1/{.status.instanceID}"), finalizev1alpha1.VerdictGone, "GET " + c.URL + "/v1/i-123?region=team-a&api_key=REDACTED&name=db-1: 404 Not Found"},
		{"an echo in the body", withBody, finalizev1alpha1.VerdictPresent, `{.state} = "region=team-a&api_key=REDACTED&name=db-1"`},
		{"an echo in a Location", spec("/v1/moved"), finalizev1alpha1.VerdictUnknown, "a redirect to " + c.URL + "/login?region=team-a&api_key=REDACTED&name=db-1"},
		{"a failed connection", func() *finalizev1alpha1.HTTPProvider {
			s := spec("/v1/x")
			s.URL = closed.URL + "/v1/x"
			return s
		}(), finalizev1alpha1.VerdictUnknown, "api_key=REDACTED"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got.Store(nil)
			p := newProvider(t, &finalizev1alpha1.Verify{HTTP: tt.spec}, Options{LookupEnv: lookup})
			call := prepare(t, p)
			a := call.Do(context.Background())
			if a.Verdict != tt.want || !strings.Contains(a.Evidence, tt.says) {
				t.Errorf("got %s: %s\nwant %s saying %q", a.Verdict, a.Evidence, tt.want, tt.says)
			}
			for _, shown := range []string{a.Evidence, call.Key(), p.String()} {
				if strings.Contains(shown, "k3y") || strings.Contains(shown, "k3y%2F") {
					t.Errorf("the key is shown: %s", shown)
				}
			}
			if g := got.Load(); tt.name != "a failed connection" && (g == nil || *g != key) {
				t.Errorf("the server got api_key %v, want %q", g, key)
			}
		})
	}
}

// TestHTTPCallKeysHoldNoSecret: a call's key follows the non-secret query, and two calls
// that differ only in what a secret holds share it.
func TestHTTPCallKeysHoldNoSecret(t *testing.T) {
	c := newCloud(t, status(404))
	keyOf := func(secret, name string) string {
		s := c.spec("/v1/{.status.instanceID}")
		s.Query = []finalizev1alpha1.QueryParameter{{Name: "token", ValueFrom: &finalizev1alpha1.ValueSource{Env: "T"}}, {Name: "n", Value: name}}
		return prepare(t, newProvider(t, &finalizev1alpha1.Verify{HTTP: s}, Options{LookupEnv: func(string) (string, bool) { return secret, true }})).Key()
	}
	if keyOf("one-secret", "a") != keyOf("another-secret", "a") || keyOf("one-secret", "a") == keyOf("one-secret", "b") {
		t.Error("a call's key must follow the request without its secrets")
	}
}

// TestHTTPASecretParameterIsRedactedByName: a parameter from valueFrom is redacted by its
// name in a Location the server sends back, whatever its value (here one the rule never
// sent) and whatever its name. A value shorter than redact.MinLength is no credential:
// the provider is not built.
func TestHTTPASecretParameterIsRedactedByName(t *testing.T) {
	c := newCloud(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/login?tenant=t7-of-another", http.StatusFound)
	})
	spec := c.spec("/v1/{.status.instanceID}")
	spec.Query = []finalizev1alpha1.QueryParameter{{Name: "tenant", ValueFrom: &finalizev1alpha1.ValueSource{Env: "TENANT"}}}
	a := ask(t, spec, Options{LookupEnv: func(string) (string, bool) { return "tenant-7a", true }})
	if want := "a redirect to " + c.URL + "/login?tenant=REDACTED: "; !strings.Contains(a.Evidence, want) || strings.Contains(a.Evidence, "t7") {
		t.Errorf("got %s, want it saying %q", a.Evidence, want)
	}
	if _, err := New(&finalizev1alpha1.Verify{HTTP: spec}, Options{LookupEnv: func(string) (string, bool) { return "t7", true }}); err == nil ||
		err.Error() != "query parameter tenant: environment variable TENANT is shorter than 8 bytes: no credential is that short, and a value that short cannot be told apart from the rest of the output" {
		t.Errorf("a value too short: %v", err)
	}
}

// TestHTTPAnUnparsableLocationIsNotShown: net/http quotes a Location it cannot parse in
// its error; such a Location may carry a signed URL's credentials, and cannot be
// redacted parameter by parameter, so it is not shown at all.
func TestHTTPAnUnparsableLocationIsNotShown(t *testing.T) {
	c := newCloud(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Location", "https://[::1%zz/x?sig=S3CR3T-SIG")
		w.WriteHeader(http.StatusFound)
	})
	for _, spec := range []func(*finalizev1alpha1.HTTPProvider){nil, func(s *finalizev1alpha1.HTTPProvider) { s.Redirects = finalizev1alpha1.RedirectsSameHost }} {
		s := c.spec("/v1/{.status.instanceID}")
		if spec != nil {
			spec(s)
		}
		a := ask(t, s, Options{})
		if a.Verdict != finalizev1alpha1.VerdictUnknown || strings.Contains(a.Evidence, "S3CR3T") {
			t.Errorf("got %s: %s", a.Verdict, a.Evidence)
		}
	}
}

func init() {
	examples["http"] = &finalizev1alpha1.Verify{HTTP: &finalizev1alpha1.HTTPProvider{
		URL:    "https://api.example.com/v1/instances/{.status.id}?region={.spec.region}",
		Method: "POST",
		Body:   `{"id": "{.status.id}"}`,
		Headers: []finalizev1alpha1.Header{{Name: "X-Tenant", Value: "{.metadata.namespace}"},
			{Name: "Authorization", ValueFrom: &finalizev1alpha1.ValueSource{Env: "API_TOKEN", Prefix: "Bearer "}}},
		Query: []finalizev1alpha1.QueryParameter{{Name: "view", Value: "{.spec.view}"}},
	}}
}
