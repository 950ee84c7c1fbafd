// Package fakecloud is an HTTPS server with a CA of its own that plays a cloud API for
// the tests of providers: GET /instances/ID answers as the ID says.
package fakecloud

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cloud answers for /instances/ID:
//
//   - deleted*, changing*, replaced*: 404;  archived: 410
//   - error: 500;  throttled: 429 with Retry-After: 1, then 404
//   - hang: no answer;  redirect: a redirect to another host
//   - moved*: a redirect to the login page on the same host, /login?next=PATH, which
//     answers 404 to anything: it does not know the instance
//   - renamed-X: a redirect on the same host to /instances/deleted-X
//   - a placeholder (None, null, undefined, N/A, -, <nil>, blank): 404, as no instance
//     has that ID
//   - garbage: a body that is not JSON;  huge: a 50 MB body
//   - slow*: {"state":"deleted"} after Delay
//   - anything else: 200 {"state":"available"}
//
// /private/instances/ID answers the same to a caller with "Authorization: Bearer
// TOKEN" (Token); to anyone else it answers like many APIs answer an anonymous caller:
// 200 for public* IDs and 404 for every other, as if it did not exist. Every
// Authorization header it got is remembered. To the caller with the token, echo* IDs
// answer 500 with a body that repeats the Authorization header it got: a server may echo
// a credential in an error.
//
// /keyed/instances/ID wants the query parameter api_key=APIKey (401 without it), then
// answers as /instances/ID, except that echo* IDs answer {"state": "THE QUERY"} and
// moved* IDs redirect to /login with the same query: a server may echo a credential.
//
// Every path asked is remembered.
type Cloud struct {
	*httptest.Server
	// CAFile holds the certificate of the server's CA.
	CAFile string
	// Delay is how long slow* IDs take.
	Delay time.Duration
	// Token is what /private wants after "Bearer ".
	Token string
	// APIKey is what /keyed wants in api_key.
	APIKey string

	mu    sync.Mutex
	paths []string
	auth  []string
	hits  map[string]int
	on    func(id string)
	gone  map[string]bool
}

// New starts a Cloud for the test.
func New(t testing.TB) *Cloud {
	t.Helper()
	c := &Cloud{hits: map[string]int{}, gone: map[string]bool{}}
	c.Server, c.CAFile = TLSServer(t, http.HandlerFunc(c.serve))
	return c
}

// TLSServer starts an HTTPS server of handler for t, with a CA of its own, and writes
// that CA's certificate into a file of t's: the file a policy's tls.caFile names.
func TLSServer(t testing.TB, handler http.Handler) (srv *httptest.Server, caFile string) {
	t.Helper()
	srv = httptest.NewTLSServer(handler)
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, caFile
}

// OnRequest runs f before each answer, with the ID asked about.
func (c *Cloud) OnRequest(f func(id string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = f
}

// Delete makes an ID answer 404 from now on.
func (c *Cloud) Delete(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gone[id] = true
}

// Asked are the paths asked so far.
func (c *Cloud) Asked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...)
}

// Authorizations are the Authorization headers /private got, in order ("" for none).
func (c *Cloud) Authorizations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.auth...)
}

// Hits counts the requests about an ID.
func (c *Cloud) Hits(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits[id]
}

// placeholders are IDs no instance has.
var placeholders = map[string]bool{"none": true, "null": true, "undefined": true, "n/a": true, "-": true, "<nil>": true, "": true}

func (c *Cloud) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	c.mu.Lock()
	c.paths = append(c.paths, path)
	if strings.HasPrefix(path, "/private/") {
		c.auth = append(c.auth, r.Header.Get("Authorization"))
	}
	c.mu.Unlock()
	switch {
	case strings.HasPrefix(path, "/private/"):
		id := strings.TrimPrefix(path, "/private/instances/")
		authorized := c.Token != "" && r.Header.Get("Authorization") == "Bearer "+c.Token
		switch {
		case authorized && strings.HasPrefix(id, "echo"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			b, _ := json.Marshal(map[string]string{"error": "internal error serving the request with Authorization: " + r.Header.Get("Authorization")})
			_, _ = w.Write(b)
		case authorized:
			c.instance(w, r, id)
		case strings.HasPrefix(id, "public"):
			_, _ = w.Write([]byte(`{"state":"available"}`))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	case strings.HasPrefix(path, "/keyed/"):
		id := strings.TrimPrefix(path, "/keyed/instances/")
		switch {
		case c.APIKey == "" || r.URL.Query().Get("api_key") != c.APIKey:
			w.WriteHeader(http.StatusUnauthorized)
		case strings.HasPrefix(id, "echo"):
			b, _ := json.Marshal(map[string]string{"state": r.URL.RawQuery})
			_, _ = w.Write(b)
		case strings.HasPrefix(id, "moved"):
			http.Redirect(w, r, "/login?"+r.URL.RawQuery, http.StatusFound)
		default:
			c.instance(w, r, id)
		}
	case path == "/login":
		w.WriteHeader(http.StatusNotFound)
	default:
		c.instance(w, r, strings.TrimPrefix(path, "/instances/"))
	}
}

// instance answers about one instance.
func (c *Cloud) instance(w http.ResponseWriter, r *http.Request, id string) {
	c.mu.Lock()
	c.hits[id]++
	n, on, gone := c.hits[id], c.on, c.gone[id]
	c.mu.Unlock()
	if on != nil {
		on(id)
	}
	unescaped, _ := url.PathUnescape(id)
	switch {
	case gone, strings.HasPrefix(id, "deleted"), strings.HasPrefix(id, "changing"), strings.HasPrefix(id, "replaced"),
		placeholders[strings.ToLower(strings.TrimSpace(unescaped))]:
		w.WriteHeader(http.StatusNotFound)
	case strings.HasPrefix(id, "moved"):
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.EscapedPath()), http.StatusFound)
	case strings.HasPrefix(id, "renamed-"):
		http.Redirect(w, r, "/instances/deleted-"+strings.TrimPrefix(id, "renamed-"), http.StatusMovedPermanently)
	case id == "archived":
		w.WriteHeader(http.StatusGone)
	case id == "error":
		w.WriteHeader(http.StatusInternalServerError)
	case id == "throttled" && n == 1:
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	case id == "throttled":
		w.WriteHeader(http.StatusNotFound)
	case id == "hang":
		<-r.Context().Done()
	case id == "redirect":
		http.Redirect(w, r, "https://example.invalid/instances/deleted", http.StatusFound)
	case id == "garbage":
		_, _ = w.Write([]byte("<html>maintenance</html>"))
	case id == "huge":
		chunk := []byte(strings.Repeat(" ", 1<<20))
		for range 50 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	case strings.HasPrefix(id, "slow"):
		select {
		case <-time.After(c.Delay):
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write([]byte(`{"state":"deleted"}`))
	default:
		_, _ = w.Write([]byte(`{"state":"available"}`))
	}
}

// Rule is a policy rule that asks the Cloud about the instance an object's "instance"
// annotation names, for finalizer; extra is appended as more fields of the rule.
func (c *Cloud) Rule(name, finalizer, extra string) string {
	return fmt.Sprintf(`- name: %s
  finalizers: [%s]
  resources: [configmaps]
  verify:
    http:
      url: "%s/instances/{.metadata.annotations.instance}"
      tls: {caFile: %q}
      timeout: 3s
      response: {jsonPath: "{.state}", gone: [deleted]}
%s`, name, finalizer, c.URL, c.CAFile, extra)
}
