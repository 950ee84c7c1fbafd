// Package apiproxy puts a counting proxy in front of a test API server: the benchmarks
// count requests and bytes through it the same way for every command, and tests check
// what a command sent (every list in pages). Tests also make it fail as a busy or dying
// API server does (Fail, Cut, Down), or answer with the Date of a server whose clock is
// off (ShiftDate).
package apiproxy

import (
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Proxy forwards plain HTTP to the API server with the admin's credentials, and counts
// requests and response bytes as they cross the wire (compressed when the client asked).
type Proxy struct {
	URL      string
	requests atomic.Int64
	bytes    atomic.Int64
	lists    atomic.Int64
	unpaged  atomic.Int64
	server   *http.Server
	handler  http.Handler
	addr     string

	mu           sync.Mutex
	unpagedPaths map[string]int
	limits       []int64  // the limit of every list, in order
	listPaths    []string // the path of every list, in order

	throttleEvery int             // 0: none; n: the first attempt of every nth distinct request
	failCode      int             // what those requests are answered: 429, or a 5xx
	retryAfter    string          // and the Retry-After they carry, "" for none
	seen          map[string]bool // requests answered failCode once already
	distinct      int
	throttled     atomic.Int64

	cut func(r *http.Request, answered bool) bool
	// answer, if set, answers a request in the API server's place (Answer).
	answer func(r *http.Request) (Answer, bool)

	dateShift atomic.Int64 // what ShiftDate adds to the Date of every answer, in nanoseconds
}

// Counts is what crossed the proxy between two readings.
type Counts struct {
	Requests, Bytes int64
	// Lists counts collection GETs; Unpaged those without a limit.
	Lists, Unpaged int64
}

// Start starts a proxy in front of the cluster of cfg.
func Start(cfg *rest.Config) (*Proxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	p := &Proxy{unpagedPaths: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1 // watches and streamed lists pass through as they come
	rp.ModifyResponse = func(resp *http.Response) error {
		if p.cutNow(resp.Request, true) {
			return errCut
		}
		if shift := time.Duration(p.dateShift.Load()); shift != 0 {
			if date, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
				resp.Header.Set("Date", date.Add(shift).UTC().Format(http.TimeFormat))
			}
		}
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &p.bytes}
		return nil
	}
	// A server that is gone, or an answer cut: the client's connection closes with no
	// answer, as it does when the API server dies.
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		hangUp(w)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.URL = "http://" + l.Addr().String()
	p.addr = l.Addr().String()
	p.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if code, retryAfter, ok := p.throttle(r); ok {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(failures[code]))
			return
		}
		if p.cutNow(r, false) {
			hangUp(w)
			return
		}
		p.mu.Lock()
		answer := p.answer
		p.mu.Unlock()
		if answer != nil {
			if a, ok := answer(r); ok {
				if a.ContentType != "" {
					w.Header().Set("Content-Type", a.ContentType)
				}
				w.WriteHeader(a.Code)
				_, _ = w.Write([]byte(a.Body))
				return
			}
		}
		if r.Method == http.MethodGet && isList(r.URL) {
			limit, _ := strconv.ParseInt(r.URL.Query().Get("limit"), 10, 64)
			p.mu.Lock()
			p.lists.Add(1)
			p.limits = append(p.limits, limit)
			p.listPaths = append(p.listPaths, r.URL.Path)
			if limit == 0 {
				p.unpaged.Add(1)
				p.unpagedPaths[r.URL.Path]++
			}
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	})
	p.server = &http.Server{Handler: p.handler}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

// isList says whether a GET is a list of a collection: /api/v1/configmaps,
// /apis/g/v/namespaces/ns/widgets, but not discovery nor a single object.
func isList(u *url.URL) bool {
	q := u.Query()
	if q.Get("watch") == "true" {
		return false
	}
	parts := splitPath(u.Path)
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:] // api/v1
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:] // apis/g/v
	default:
		return false
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		parts = parts[2:] // namespaces/ns/...
	}
	return len(parts) == 1
}

func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
}

// Counts returns the counts so far.
func (p *Proxy) Counts() Counts {
	return Counts{Requests: p.requests.Load(), Bytes: p.bytes.Load(), Lists: p.lists.Load(), Unpaged: p.unpaged.Load()}
}

// Sub is c minus an earlier reading.
func (c Counts) Sub(before Counts) Counts {
	return Counts{Requests: c.Requests - before.Requests, Bytes: c.Bytes - before.Bytes, Lists: c.Lists - before.Lists, Unpaged: c.Unpaged - before.Unpaged}
}

// UnpagedPaths returns the paths listed without a limit so far, and how often.
func (p *Proxy) UnpagedPaths() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.unpagedPaths)
}

// LimitsSince returns the distinct limits of the lists sent since an earlier reading,
// 0 for none.
func (p *Proxy) LimitsSince(before Counts) []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int64
	for _, l := range p.limits[before.Lists:] {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// The bodies of what the API server answers when it is busy or failing.
var failures = map[int]string{
	http.StatusTooManyRequests:     `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}`,
	http.StatusInternalServerError: `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"etcdserver: leader changed","reason":"InternalError","code":500}`,
	http.StatusServiceUnavailable:  `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server is currently unable to handle the request","reason":"ServiceUnavailable","code":503}`,
	http.StatusGatewayTimeout:      `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","code":504}`,
}

// Fail makes the proxy answer code (429, 500, 503 or 504) with retryAfter ("" for none)
// to the first attempt of every nth distinct request (method and URL), without
// forwarding it, as API Priority and Fairness does under load (429, Retry-After: 1);
// the retry passes. 0 stops it.
func (p *Proxy) Fail(every, code int, retryAfter string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.throttleEvery, p.failCode, p.retryAfter, p.seen, p.distinct = every, code, retryAfter, map[string]bool{}, 0
	p.throttled.Store(0)
}

// Throttled counts the requests answered by Fail since it was last called.
func (p *Proxy) Throttled() int64 { return p.throttled.Load() }

func (p *Proxy) throttle(r *http.Request) (int, string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.throttleEvery == 0 {
		return 0, "", false
	}
	key := r.Method + " " + r.URL.String()
	if _, ok := p.seen[key]; ok {
		return 0, "", false
	}
	p.distinct++
	hit := p.distinct%p.throttleEvery == 0
	p.seen[key] = hit
	if hit {
		p.throttled.Add(1)
	}
	return p.failCode, p.retryAfter, hit
}

// Cut sets a function asked about every request before it is forwarded (answered is
// false) and once the API server has answered it (answered true). When it says true, the
// client's connection is closed with no answer, as when the API server dies; after the
// API server answered, the request has taken effect. nil stops it.
func (p *Proxy) Cut(f func(r *http.Request, answered bool) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = f
}

var errCut = errors.New("cut by the test")

// Answer is what the proxy answers in the API server's place.
type Answer struct {
	Code        int
	ContentType string
	Body        string
}

// Answer sets a function asked about every request before it is forwarded: when it says
// ok, the proxy answers with what it returned and the API server never sees the request,
// as a gateway or an authorizing proxy in front of an API server answers the paths it
// does not pass on ("404 page not found"). nil stops it.
func (p *Proxy) Answer(f func(r *http.Request) (Answer, bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answer = f
}

// ShiftDate adds d to the Date header of every answer of the API server from now on, as
// an API server whose clock is d ahead of this machine's (behind, when d is negative)
// would send it; the bodies, and the times the API server wrote into them, pass as
// they are. 0 stops it.
func (p *Proxy) ShiftDate(d time.Duration) { p.dateShift.Store(int64(d)) }

func (p *Proxy) cutNow(r *http.Request, answered bool) bool {
	p.mu.Lock()
	cut := p.cut
	p.mu.Unlock()
	return cut != nil && cut(r, answered)
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// ListsSince returns how often each path was listed since an earlier reading: the
// number of pages of each collection.
func (p *Proxy) ListsSince(before Counts) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for _, path := range p.listPaths[before.Lists:] {
		out[path]++
	}
	return out
}

// Close stops the proxy.
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.server.Close()
}

// Down closes the proxy's listener and every connection through it: from then on the
// client's connections are refused, as they are by an address nothing listens on.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.server.Close()
}

// Up listens again on the address Down closed.
func (p *Proxy) Up() error {
	l, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.server = &http.Server{Handler: p.handler}
	go func(srv *http.Server) { _ = srv.Serve(l) }(p.server)
	return nil
}

// WriteKubeconfig writes a kubeconfig that reaches the cluster through the proxy.
func (p *Proxy) WriteKubeconfig(dir string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: p.URL}
	cfg.AuthInfos["bench"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench"}
	cfg.CurrentContext = "bench"
	path := filepath.Join(dir, "bench.kubeconfig")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return path, clientcmd.WriteToFile(*cfg, path)
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// ForTest starts a proxy in front of the cluster of cfg for t, closed when t ends, and
// returns it with a kubeconfig that reaches the cluster through it.
func ForTest(t testing.TB, cfg *rest.Config) (*Proxy, string) {
	t.Helper()
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	kubeconfig, err := p.WriteKubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p, kubeconfig
}
