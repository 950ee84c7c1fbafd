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
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cloud answers like a real cloud API: every answer carries "Server: fakecloud", an
// instance is JSON (application/json), and an error is a JSON error body
// ({"error": {"code": ..., "message": ...}}, application/json), a 404 included. For
// /instances/ID:
//
//   - deleted*, changing*, replaced*: 404;  archived: 410
//   - error: 500;  throttled: 429 with Retry-After: 1, then 404
//   - hang: no answer;  redirect: a redirect to another host
//   - moved*: a redirect to the login page on the same host, /login?next=PATH, an HTML
//     page that answers 404 to anything: it does not know the instance
//   - renamed-X: a redirect on the same host to /instances/deleted-X
//   - a placeholder (None, null, undefined, N/A, -, <nil>, blank), or an ID with a
//     character no instance ID has (anything but letters, digits, '-', '_', '.' and
//     '~': a space, a '/'): 404, as no instance has that ID
//   - garbage: a body that is not JSON (an HTML maintenance page);  huge: a 50 MB body
//   - slow*: {"state":"deleted"} after Delay
//   - proxied*: what a proxy in front of the API answers for a route it does not know:
//     404, an nginx HTML page (text/html, "Server: nginx")
//   - empty*: 404 with an empty body and no Content-Type
//   - elsewhere*: a JSON 404 from another server ("Server: envoy"): a gateway's own
//   - undead*: a JSON 404 whose body says the instance is live: {"state":"available"}
//   - anything else: 200 {"id": ID, "state": "available"}
//
// A Cloud made by Listing knows its instances instead: the IDs its list holds answer 200,
// every other ID 404, whatever its prefix.
//
// An ARN (arn:aws:rds:REGION:ACCOUNT:db:ID) names the instance its last part names.
//
// /load-balancers?stack=STACK finds a load balancer by its stack tag (NAMESPACE/NAME, or
// an ingress group's name): it answers as /instances/ID about the stack's last part.
//
// /private/instances/ID answers the same to a caller with "Authorization: Bearer
// TOKEN" (Token); to anyone else it answers like many APIs answer an anonymous caller:
// 200 for public* IDs and a JSON 404 for every other, as if it did not exist. Every
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
	// listed, when set, lists the instances that exist (Listing).
	listed func() ([]string, error)
}

// New starts a Cloud for the test.
func New(t testing.TB) *Cloud {
	t.Helper()
	c := &Cloud{hits: map[string]int{}, gone: map[string]bool{}}
	c.Server, c.CAFile = TLSServer(t, c)
	return c
}

// Listing is a Cloud, not started, whose instances are those instances lists, asked at
// each request: the demo's cloud, which serves it from a process of its own and lists
// the lines of a file, so that a line deleted is an instance deleted.
func Listing(instances func() ([]string, error)) *Cloud {
	return &Cloud{hits: map[string]int{}, gone: map[string]bool{}, listed: instances}
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

// instanceID is what an instance ID may hold; an ID with anything else names none.
var instanceID = regexp.MustCompile(`^[A-Za-z0-9._~-]+$`)

// Server is the Server header of the Cloud's answers.
const Server = "fakecloud"

// writeJSON answers code with v as a JSON body, as the API does.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError answers code with the API's JSON error body.
func apiError(w http.ResponseWriter, code int, errCode, message string) {
	writeJSON(w, code, map[string]any{"error": map[string]string{"code": errCode, "message": message}})
}

// notFound is the API's own 404 about an instance.
func notFound(w http.ResponseWriter, id string) {
	apiError(w, http.StatusNotFound, "InstanceNotFound", fmt.Sprintf("instance %s not found", id))
}

// available is the API's answer about a live instance.
func available(w http.ResponseWriter, id string) {
	writeJSON(w, http.StatusOK, map[string]string{"id": id, "state": "available"})
}

// nginxNotFound is the page nginx answers 404 with.
const nginxNotFound = "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"

// ServeHTTP answers as the cloud API.
func (c *Cloud) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	c.mu.Lock()
	c.paths = append(c.paths, path)
	if strings.HasPrefix(path, "/private/") {
		c.auth = append(c.auth, r.Header.Get("Authorization"))
	}
	c.mu.Unlock()
	w.Header().Set("Server", Server)
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
			available(w, id)
		default:
			notFound(w, id)
		}
	case strings.HasPrefix(path, "/keyed/"):
		id := strings.TrimPrefix(path, "/keyed/instances/")
		switch {
		case c.APIKey == "" || r.URL.Query().Get("api_key") != c.APIKey:
			apiError(w, http.StatusUnauthorized, "Unauthorized", "api_key is missing or wrong")
		case strings.HasPrefix(id, "echo"):
			writeJSON(w, http.StatusOK, map[string]string{"state": r.URL.RawQuery})
		case strings.HasPrefix(id, "moved"):
			http.Redirect(w, r, "/login?"+r.URL.RawQuery, http.StatusFound)
		default:
			c.instance(w, r, id)
		}
	case path == "/load-balancers":
		stack := r.URL.Query().Get("stack")
		c.instance(w, r, url.PathEscape(stack[strings.LastIndex(stack, "/")+1:]))
	case path == "/login":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("<html><body><h1>Sign in</h1><p>That page does not exist.</p></body></html>"))
	default:
		c.instance(w, r, strings.TrimPrefix(path, "/instances/"))
	}
}

// instance answers about one instance.
func (c *Cloud) instance(w http.ResponseWriter, r *http.Request, id string) {
	if arn, err := url.PathUnescape(id); err == nil && strings.HasPrefix(arn, "arn:") {
		id = arn[strings.LastIndex(arn, ":")+1:]
	}
	c.mu.Lock()
	c.hits[id]++
	n, on, gone := c.hits[id], c.on, c.gone[id]
	c.mu.Unlock()
	if on != nil {
		on(id)
	}
	unescaped, _ := url.PathUnescape(id)
	if c.listed != nil {
		c.listedInstance(w, unescaped)
		return
	}
	switch {
	case gone, strings.HasPrefix(id, "deleted"), strings.HasPrefix(id, "changing"), strings.HasPrefix(id, "replaced"),
		placeholders[strings.ToLower(strings.TrimSpace(unescaped))], !instanceID.MatchString(unescaped):
		notFound(w, unescaped)
	case strings.HasPrefix(id, "moved"):
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.EscapedPath()), http.StatusFound)
	case strings.HasPrefix(id, "renamed-"):
		http.Redirect(w, r, "/instances/deleted-"+strings.TrimPrefix(id, "renamed-"), http.StatusMovedPermanently)
	case id == "archived":
		apiError(w, http.StatusGone, "InstanceArchived", "instance archived was deleted")
	case id == "error":
		apiError(w, http.StatusInternalServerError, "InternalError", "something went wrong")
	case id == "throttled" && n == 1:
		w.Header().Set("Retry-After", "1")
		apiError(w, http.StatusTooManyRequests, "Throttled", "slow down")
	case id == "throttled":
		notFound(w, id)
	case strings.HasPrefix(id, "proxied"):
		w.Header().Set("Server", "nginx")
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(nginxNotFound))
	case strings.HasPrefix(id, "empty"):
		w.WriteHeader(http.StatusNotFound)
	case strings.HasPrefix(id, "elsewhere"):
		w.Header().Set("Server", "envoy")
		apiError(w, http.StatusNotFound, "RouteNotFound", "no route")
	case strings.HasPrefix(id, "undead"):
		writeJSON(w, http.StatusNotFound, map[string]string{"state": "available"})
	case id == "hang":
		<-r.Context().Done()
	case id == "redirect":
		http.Redirect(w, r, "https://example.invalid/instances/deleted", http.StatusFound)
	case id == "garbage":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<html>maintenance</html>"))
	case id == "huge":
		w.Header().Set("Content-Type", "application/json")
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
		writeJSON(w, http.StatusOK, map[string]string{"state": "deleted"})
	default:
		available(w, unescaped)
	}
}

// listedInstance answers about an instance of a Listing cloud.
func (c *Cloud) listedInstance(w http.ResponseWriter, id string) {
	instances, err := c.listed()
	switch {
	case err != nil:
		apiError(w, http.StatusInternalServerError, "InternalError", err.Error())
	case slices.Contains(instances, id):
		available(w, id)
	default:
		notFound(w, id)
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
