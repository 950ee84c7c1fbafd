package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/jsonpath"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// Limits of the http provider.
const (
	DefaultHTTPTimeout = 10 * time.Second
	// MaxResponseBytes bounds how much of a response body is read.
	MaxResponseBytes = 1 << 20
	// MaxResponseHeaderBytes bounds a response's status line and headers.
	MaxResponseHeaderBytes = 64 << 10
	maxRedirects           = 5
)

// Default statuses: 404 and 410 mean gone, every 2xx present.
var defaultGone = []int32{http.StatusNotFound, http.StatusGone}

// URLTemplate is an http provider's URL: its scheme, host and port are literal, and
// values land in its path (as whole or partial segments) or its query.
type URLTemplate struct {
	*Template
	// queryAt is the offset of the "?" that starts the query, or len(raw).
	queryAt int
}

// ParseURLTemplate parses and checks a URL template: http or https, no credentials, no
// fragment, and no value before the path begins, so a value can never change the host.
func ParseURLTemplate(s string) (*URLTemplate, error) {
	t, err := ParseTemplate(s)
	if err != nil {
		return nil, err
	}
	u := &URLTemplate{Template: t, queryAt: len(s)}
	for _, p := range t.parts {
		if p.source == "" {
			if i := strings.IndexByte(p.text, '?'); i >= 0 && p.offset+i < u.queryAt {
				u.queryAt = p.offset + i
			}
		}
	}
	if first, scheme := t.FirstExpression(), strings.Index(s, "://"); first >= 0 && scheme >= 0 {
		hostEnd := scheme + 3
		if slash := strings.IndexByte(s[hostEnd:], '/'); slash < 0 || first < hostEnd+slash {
			return nil, errors.New("values may only be templated in the path and the query: the scheme, host and port are fixed")
		}
	}
	// The URL with every value replaced by a placeholder must be well formed.
	sample := placeholders(t)
	parsed, err := url.Parse(sample)
	switch {
	case err != nil:
		return nil, fmt.Errorf("not a URL: %w", err)
	case parsed.Scheme != "http" && parsed.Scheme != "https":
		return nil, fmt.Errorf("the scheme must be https or http, not %q", parsed.Scheme)
	case parsed.Host == "":
		return nil, errors.New("the URL names no host")
	case parsed.User != nil:
		return nil, errors.New("credentials do not belong in the URL: send them in a header with valueFrom")
	case parsed.Fragment != "" || strings.Contains(sample, "#"):
		return nil, errors.New("the URL must not have a fragment")
	}
	return u, nil
}

func placeholders(t *Template) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.source == "" {
			b.WriteString(p.text)
		} else {
			b.WriteString("x")
		}
	}
	return b.String()
}

// Render fills the URL in, each value escaped for the path or the query.
func (u *URLTemplate) Render(obj map[string]any, identity map[string]string) (string, error) {
	return u.Template.Render(obj, identity, func(offset int) Escape {
		if offset < u.queryAt {
			return PathSegment
		}
		return QueryValue
	})
}

type httpHeader struct {
	name   string
	value  *Template
	secret *finalizev1alpha1.ValueSource
	env    string // the secret read from the environment, when it comes from there
}

type httpProvider struct {
	url      *URLTemplate
	method   string
	headers  []httpHeader
	body     *Template
	gone     []int32
	present  []int32
	response *finalizev1alpha1.HTTPResponse
	jsonPath *jsonpath.JSONPath
	client   *http.Client
	timeout  time.Duration
	// backoff spaces the retries of 429 and 5xx answers.
	backoff wait.Backoff
}

func newHTTP(spec *finalizev1alpha1.HTTPProvider, opts Options) (*httpProvider, error) {
	u, err := ParseURLTemplate(spec.URL)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	p := &httpProvider{url: u, method: http.MethodGet, gone: defaultGone, present: spec.Present, response: spec.Response,
		timeout: DefaultHTTPTimeout, backoff: wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 4, Cap: 2 * time.Second}}
	if spec.Method != "" {
		p.method = strings.ToUpper(spec.Method)
	}
	if len(spec.Gone) > 0 {
		p.gone = spec.Gone
	}
	if spec.Timeout != nil {
		p.timeout = spec.Timeout.Duration
	}
	if spec.Body != "" {
		if p.body, err = ParseTemplate(spec.Body); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
	}
	if spec.Response != nil {
		p.jsonPath = jsonpath.New("response")
		if err := p.jsonPath.Parse(spec.Response.JSONPath); err != nil {
			return nil, fmt.Errorf("response.jsonPath: %w", err)
		}
	}
	for _, h := range spec.Headers {
		hh := httpHeader{name: h.Name, secret: h.ValueFrom}
		switch {
		case h.ValueFrom != nil && h.ValueFrom.Env != "":
			v, ok := opts.lookupEnv(h.ValueFrom.Env)
			if !ok {
				return nil, fmt.Errorf("header %s: environment variable %s is not set", h.Name, h.ValueFrom.Env)
			}
			hh.env = v
		case h.ValueFrom != nil:
			if _, err := readSecretFile(h.ValueFrom.File); err != nil {
				return nil, fmt.Errorf("header %s: %w", h.Name, err)
			}
		default:
			if hh.value, err = ParseTemplate(h.Value); err != nil {
				return nil, fmt.Errorf("header %s: %w", h.Name, err)
			}
		}
		p.headers = append(p.headers, hh)
	}
	tlsConfig, err := tlsConfigFor(spec.TLS)
	if err != nil {
		return nil, err
	}
	p.client = &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsConfig, MaxIdleConnsPerHost: 16,
			TLSHandshakeTimeout: 10 * time.Second, MaxResponseHeaderBytes: MaxResponseHeaderBytes},
		CheckRedirect: checkRedirect,
	}
	return p, nil
}

// checkRedirect follows a redirect only to the same host, and never from https to http.
func checkRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	switch {
	case len(via) >= maxRedirects:
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	case req.URL.Host != first.Host:
		return fmt.Errorf("refusing a redirect to another host (%s)", req.URL.Host)
	case first.Scheme == "https" && req.URL.Scheme != "https":
		return errors.New("refusing a redirect from https to http")
	}
	return nil
}

func tlsConfigFor(spec *finalizev1alpha1.TLS) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if spec == nil {
		return cfg, nil
	}
	if spec.CAFile != "" {
		pem, err := os.ReadFile(spec.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.caFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.caFile: %s holds no PEM certificate", spec.CAFile)
		}
		cfg.RootCAs = pool
	}
	if spec.CertFile != "" || spec.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(spec.CertFile, spec.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.certFile and tls.keyFile: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// readSecretFile reads a secret (a mounted token) each time it is used, so a rotated
// token is picked up; a trailing line break is not part of it.
func readSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the value from a file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func (p *httpProvider) String() string { return fmt.Sprintf("http %s %s", p.method, p.url) }

type httpCall struct {
	p       *httpProvider
	url     string
	body    string
	headers http.Header
	// shown names the request in evidence, without secrets.
	shown string
}

func (p *httpProvider) Prepare(req *Request) (Call, error) {
	obj := req.Object.Object
	c := &httpCall{p: p, headers: http.Header{}}
	var err error
	if c.url, err = p.url.Render(obj, req.Identity); err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if p.body != nil {
		if c.body, err = p.body.RenderAll(obj, req.Identity, JSONString); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		c.headers.Set("Content-Type", "application/json")
	}
	c.headers.Set("Accept", "application/json")
	for _, h := range p.headers {
		if h.value == nil {
			continue // secrets are read when the request is sent, and never shown
		}
		v, err := h.value.RenderAll(obj, req.Identity, HeaderValue)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", h.name, err)
		}
		c.headers.Set(h.name, v)
	}
	shown := c.url
	if u, err := url.Parse(c.url); err == nil {
		shown = u.Redacted()
	}
	c.shown = p.method + " " + shown
	return c, nil
}

// Key is the request without its secrets: the secrets are the same for every call.
func (c *httpCall) Key() string {
	h := sha256.New()
	fmt.Fprintf(h, "http\x00%s\x00%s\x00%s\x00", c.p.method, c.url, c.body)
	keys := make([]string, 0, len(c.headers))
	for k := range c.headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\x00", k, strings.Join(c.headers[k], ","))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *httpCall) Do(ctx context.Context) Answer {
	ctx, cancel := context.WithTimeout(ctx, c.p.timeout)
	defer cancel()
	backoff := c.p.backoff
	for attempt := 1; ; attempt++ {
		status, answer, retryAfter := c.once(ctx)
		if answer != nil {
			return *answer
		}
		if backoff.Steps <= 1 {
			return Unknown("%s: %s, still after %d attempts", c.shown, status, attempt)
		}
		pause := backoff.Step()
		if retryAfter > pause {
			pause = retryAfter
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < pause {
			return Unknown("%s: %s after %d attempts; no time left to retry within %s", c.shown, status, attempt, c.p.timeout)
		}
		select {
		case <-ctx.Done():
			return Unknown("%s: %s, then timed out after %s", c.shown, status, c.p.timeout)
		case <-time.After(pause):
		}
	}
}

// once sends the request once. It returns an answer, or the status to retry on (429,
// 5xx, a failed connection) and how long the server asked to wait.
func (c *httpCall) once(ctx context.Context) (string, *Answer, time.Duration) {
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.p.method, c.url, body)
	if err != nil {
		a := Unknown("%s: %v", c.shown, err)
		return "", &a, 0
	}
	req.Header = c.headers.Clone()
	for _, h := range c.p.headers {
		if h.secret == nil {
			continue
		}
		v := h.env
		if h.secret.File != "" {
			if v, err = readSecretFile(h.secret.File); err != nil {
				a := Unknown("%s: header %s: %v", c.shown, h.name, err)
				return "", &a, 0
			}
		}
		req.Header.Set(h.name, h.secret.Prefix+v)
	}
	resp, err := c.p.client.Do(req)
	if err != nil {
		var timeout interface{ Timeout() bool }
		if ctx.Err() != nil || (errors.As(err, &timeout) && timeout.Timeout()) {
			a := Unknown("%s: no answer within %s", c.shown, c.p.timeout)
			return "", &a, 0
		}
		// A refused connection, a certificate nobody signed, a refused redirect: asking
		// again would not change the answer.
		a := Unknown("%s: %v", c.shown, redactURLError(err))
		return "", &a, 0
	}
	defer resp.Body.Close()
	if ctx.Err() != nil {
		// net/http hands back a response that raced the deadline rather than the
		// deadline's error, and a server whose lookup the disconnect aborted may answer
		// anything (an empty 200, a 404): a late answer is never used.
		a := Unknown("%s: no answer within %s", c.shown, c.p.timeout)
		return "", &a, 0
	}
	code := resp.StatusCode
	status := fmt.Sprintf("%d %s", code, http.StatusText(code))
	switch {
	case code == http.StatusTooManyRequests || code >= 500:
		return status, nil, retryAfter(resp.Header.Get("Retry-After"))
	case slices.Contains(c.p.gone, int32(code)):
		return "", &Answer{Verdict: finalizev1alpha1.VerdictGone, Evidence: fmt.Sprintf("%s: %s", c.shown, status)}, 0
	case !c.p.isPresent(code):
		a := Unknown("%s: %s, which means neither gone nor present", c.shown, status)
		return "", &a, 0
	case c.p.response == nil:
		return "", &Answer{Verdict: finalizev1alpha1.VerdictPresent, Evidence: fmt.Sprintf("%s: %s", c.shown, status)}, 0
	}
	a := c.p.readResponse(resp.Body, c.shown+": "+status)
	return "", &a, 0
}

func (p *httpProvider) isPresent(code int) bool {
	if len(p.present) == 0 {
		return code >= 200 && code < 300
	}
	return slices.Contains(p.present, int32(code))
}

// readResponse reads a value of a JSON body, at most MaxResponseBytes of it.
func (p *httpProvider) readResponse(body io.Reader, shown string) Answer {
	b, err := io.ReadAll(io.LimitReader(body, MaxResponseBytes+1))
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Unknown("%s: the body did not arrive in full within %s", shown, p.timeout)
	case err != nil:
		return Unknown("%s: reading the body: %v", shown, err)
	}
	if len(b) > MaxResponseBytes {
		return Unknown("%s: the body is larger than %d bytes", shown, MaxResponseBytes)
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return Unknown("%s: the body is not JSON: %v", shown, err)
	}
	results, err := p.jsonPath.FindResults(doc)
	if err != nil || len(results) != 1 || len(results[0]) != 1 {
		return Unknown("%s: %s does not select one value of the body", shown, p.response.JSONPath)
	}
	value := fmt.Sprint(results[0][0].Interface())
	shown = fmt.Sprintf("%s, %s = %q", shown, p.response.JSONPath, truncate(value, 64))
	switch {
	case slices.Contains(p.response.Gone, value):
		return Answer{Verdict: finalizev1alpha1.VerdictGone, Evidence: shown}
	case len(p.response.Present) == 0 || slices.Contains(p.response.Present, value):
		return Answer{Verdict: finalizev1alpha1.VerdictPresent, Evidence: shown}
	}
	return Unknown("%s, which means neither gone nor present", shown)
}

// retryAfter reads a Retry-After in seconds; dates and nonsense count as no wait.
func retryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// redactURLError keeps the reason of a failed request without the URL it already names.
func redactURLError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
