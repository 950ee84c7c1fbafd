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
	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
)

// Limits of the http provider.
const (
	defaultHTTPTimeout = 10 * time.Second
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
	// paths are the offsets of the expressions whose values are paths (DeclarePaths).
	paths map[int]bool
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
	// A password that breaks the parsing (a '/' in it ends the host early; after a
	// scheme with one slash it reads as the path) is in the parser's error, or in part
	// (an "invalid port"): such a URL is refused without the error.
	atBeforePath := redact.UnparsedURL(sample) != sample
	switch {
	case err != nil && atBeforePath:
		return nil, errors.New("not a URL, and an '@' stands before its path: credentials do not belong in the URL: send them in a header with valueFrom")
	case err != nil:
		return nil, fmt.Errorf("not a URL: %w", err)
	case parsed.Scheme != "http" && parsed.Scheme != "https":
		return nil, fmt.Errorf("the scheme must be https or http, not %q", parsed.Scheme)
	case parsed.Host == "" && atBeforePath:
		return nil, errors.New("the URL names no host, and an '@' stands before its path: credentials do not belong in the URL: send them in a header with valueFrom")
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

// QueryNames are the names of the parameters the URL's query has, in order; a templated
// name reads as "x".
func (u *URLTemplate) QueryNames() []string {
	parsed, err := url.Parse(placeholders(u.Template))
	if err != nil || parsed.RawQuery == "" {
		return nil
	}
	var names []string
	for _, kv := range strings.Split(parsed.RawQuery, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if name, err := url.QueryUnescape(k); err == nil {
			k = name
		}
		if k != "" {
			names = append(names, k)
		}
	}
	return names
}

// DeclarePaths lets the values of expressions (as written in the URL: "{.status.path}")
// span path segments: each must be an expression of the URL's path. Every other value in
// the path stays within one segment.
func (u *URLTemplate) DeclarePaths(expressions []string) error {
	for _, e := range expressions {
		inPath, inQuery := false, false
		for _, p := range u.parts {
			switch {
			case p.source == "" || p.source != e:
			case p.offset > u.queryAt:
				inQuery = true
			default:
				if u.paths == nil {
					u.paths = map[int]bool{}
				}
				u.paths[p.offset], inPath = true, true
			}
		}
		switch {
		case inPath:
		case inQuery:
			return fmt.Errorf("%s is in the URL's query, not its path", e)
		default:
			return fmt.Errorf("%s is not an expression of the URL", e)
		}
	}
	return nil
}

// Render fills the URL in: a value in the path is checked, as it is, to be a segment (or
// a path, where DeclarePaths declared it); one in the query is escaped.
func (u *URLTemplate) Render(obj map[string]any, identity map[string]string) (string, error) {
	return u.Template.Render(obj, identity, func(offset int) Escape {
		switch {
		case offset > u.queryAt:
			return QueryValue
		case u.paths[offset]:
			return PathValue
		}
		return PathSegment
	})
}

// httpValue is a header, or a parameter the rule adds to the URL's query: a template, or
// a secret.
type httpValue struct {
	name   string
	value  *Template
	secret *secretSource
}

// secretSource is a credential from valueFrom: an environment variable read when the
// provider is built, or a file read at every request.
type secretSource struct {
	// what names where the value goes, for errors: "header Authorization".
	what string
	src  *finalizev1alpha1.ValueSource
	env  string
}

// newSecretSource checks a credential source once: an environment variable that is
// unset or empty, a file that cannot be read or is empty, fail the provider's build.
func newSecretSource(what string, src *finalizev1alpha1.ValueSource, opts Options) (*secretSource, error) {
	s := &secretSource{what: what, src: src}
	if src.Env != "" {
		v, ok := opts.lookupEnv(src.Env)
		if !ok {
			return nil, fmt.Errorf("%s: environment variable %s is not set", what, src.Env)
		}
		if err := checkSecret(v); err != nil {
			return nil, fmt.Errorf("%s: environment variable %s %w", what, src.Env, err)
		}
		s.env = v
		return s, nil
	}
	if _, err := s.read(); err != nil {
		return nil, err
	}
	return s, nil
}

// read is the credential, without its prefix. A file is read each time, so a rotated
// token is picked up; a trailing line break is not part of it.
func (s *secretSource) read() (string, error) {
	if s.src.Env != "" {
		return s.env, nil
	}
	b, err := os.ReadFile(s.src.File)
	if err != nil {
		return "", fmt.Errorf("%s: the file cannot be read: %w", s.what, err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if err := checkSecret(v); err != nil {
		return "", fmt.Errorf("%s: file %s %w", s.what, s.src.File, err)
	}
	return v, nil
}

// checkSecret refuses a credential that cannot be one, and registers the one that can
// with the redactor, so that it is shown nowhere. An empty value would send
// "Authorization: Bearer ", which some APIs answer like an anonymous caller, with 404; a
// value shorter than redact.MinLength is no credential, and could not be redacted.
func checkSecret(v string) error {
	switch {
	case strings.TrimSpace(v) == "":
		return errors.New("is empty")
	case strings.ContainsAny(v, "\r\n\x00"):
		return errors.New("holds a line break or a NUL byte")
	}
	return redact.Register(v)
}

type httpProvider struct {
	url     *URLTemplate
	method  string
	headers []httpValue
	query   []httpValue
	// secretNames are the names of the query parameters from valueFrom.
	secretNames map[string]bool
	body        *Template
	gone        []int32
	present     []int32
	response    *finalizev1alpha1.HTTPResponse
	jsonPath    *jsonpath.JSONPath
	// goneResponse, if set, is what the API's own Gone answers look like.
	goneResponse *finalizev1alpha1.HTTPGoneResponse
	client       *http.Client
	// sameHost: the rule follows redirects on the same host.
	sameHost bool
	timeout  time.Duration
	// backoff spaces the retries of 429 and 5xx answers.
	backoff wait.Backoff
}

func newHTTP(spec *finalizev1alpha1.HTTPProvider, opts Options) (*httpProvider, error) {
	u, err := ParseURLTemplate(spec.URL)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if err := u.DeclarePaths(spec.PathValues); err != nil {
		return nil, fmt.Errorf("pathValues: %w", err)
	}
	p := &httpProvider{url: u, method: http.MethodGet, gone: defaultGone, present: spec.Present, response: spec.Response, goneResponse: spec.GoneResponse,
		timeout: defaultHTTPTimeout, backoff: wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 4, Cap: 2 * time.Second}}
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
		hh := httpValue{name: h.Name}
		if h.ValueFrom != nil {
			if hh.secret, err = newSecretSource("header "+h.Name, h.ValueFrom, opts); err != nil {
				return nil, err
			}
		} else if hh.value, err = ParseTemplate(h.Value); err != nil {
			return nil, fmt.Errorf("header %s: %w", h.Name, err)
		}
		p.headers = append(p.headers, hh)
	}
	for _, q := range spec.Query {
		qq := httpValue{name: q.Name}
		if q.ValueFrom != nil {
			if qq.secret, err = newSecretSource("query parameter "+q.Name, q.ValueFrom, opts); err != nil {
				return nil, err
			}
			if p.secretNames == nil {
				p.secretNames = map[string]bool{}
			}
			p.secretNames[q.Name] = true
		} else if qq.value, err = ParseTemplate(q.Value); err != nil {
			return nil, fmt.Errorf("query parameter %s: %w", q.Name, err)
		}
		p.query = append(p.query, qq)
	}
	tlsConfig, err := tlsConfigFor(spec.TLS)
	if err != nil {
		return nil, err
	}
	p.client = &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsConfig, MaxIdleConnsPerHost: 16,
			TLSHandshakeTimeout: 10 * time.Second, MaxResponseHeaderBytes: MaxResponseHeaderBytes},
		CheckRedirect: refuseRedirects,
	}
	if spec.Redirects == finalizev1alpha1.RedirectsSameHost {
		p.sameHost, p.client.CheckRedirect = true, followSameHost
	}
	return p, nil
}

// hopsKey carries a request's hops in its context, for followSameHost.
type hopsKey struct{}

// hops are the redirects one request went through, and why the next one was not
// followed.
type hops struct {
	shown   []string
	refused string
	// secretNames are the rule's query parameters from valueFrom, redacted in each hop.
	secretNames map[string]bool
}

// refuseRedirects hands the 3xx back: a redirect is never followed for a verdict, as the
// page it leads to (a login page, another resource) says nothing about what was asked.
func refuseRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// followSameHost follows a redirect on the first URL's scheme, host and port only, at
// most maxRedirects times, and records each hop; otherwise it hands the 3xx back.
func followSameHost(req *http.Request, via []*http.Request) error {
	h, _ := req.Context().Value(hopsKey{}).(*hops)
	first := via[0].URL
	switch {
	case len(via) > maxRedirects:
		h.refuse(fmt.Sprintf("stopped after %d redirects", maxRedirects))
	case req.URL.Host != first.Host:
		h.refuse(fmt.Sprintf("a redirect to another host (%s) is not followed", req.URL.Host))
	case req.URL.Scheme != first.Scheme:
		h.refuse(fmt.Sprintf("a redirect from %s to %s is not followed", first.Scheme, req.URL.Scheme))
	default:
		if h != nil {
			h.shown = append(h.shown, req.Method+" "+redactURL(req.URL.String(), h.secretNames, nil))
		}
		return nil
	}
	return http.ErrUseLastResponse
}

func (h *hops) refuse(why string) {
	if h != nil {
		h.refused = why
	}
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

func (p *httpProvider) String() string {
	u := p.url.String()
	for _, q := range p.query {
		v := redacted
		if q.value != nil {
			v = q.value.String()
		}
		u = appendQuery(u, url.QueryEscape(q.name)+"="+v)
	}
	return fmt.Sprintf("http %s %s", p.method, u)
}

type httpCall struct {
	p *httpProvider
	// url is the rendered URL; params are the rule's query parameters, added to it when
	// the request is sent: each "name=value", escaped, or "" where the value is a secret.
	url     string
	params  []string
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
	shown := c.url
	for _, q := range p.query {
		name := url.QueryEscape(q.name)
		if q.secret != nil {
			c.params = append(c.params, "")
			shown = appendQuery(shown, name+"="+redacted)
			continue
		}
		v, err := q.value.RenderAll(obj, req.Identity, QueryValue)
		if err != nil {
			return nil, fmt.Errorf("query parameter %s: %w", q.name, err)
		}
		c.params = append(c.params, name+"="+v)
		shown = appendQuery(shown, name+"="+v)
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
	c.shown = p.method + " " + redactURL(shown, p.secretNames, nil)
	return c, nil
}

// appendQuery adds one name=value, already escaped, to a URL's query.
func appendQuery(u, param string) string {
	switch {
	case !strings.Contains(u, "?"):
		return u + "?" + param
	case strings.HasSuffix(u, "?"), strings.HasSuffix(u, "&"):
		return u + param
	}
	return u + "&" + param
}

// RedactURL is a URL written in a policy, fit to show in a message: the value of every
// credential-like query parameter, a password and a fragment are REDACTED.
func RedactURL(raw string) string { return redactURL(raw, nil, nil) }

// redacted stands for a secret wherever a URL is shown.
const redacted = "REDACTED"

// redactURL is a URL fit to show: a password in it, its fragment, the value of every
// query parameter whose name is credential-like (CredentialQueryParameter) or one of
// secretNames (the rule's parameters from valueFrom), and each of secrets wherever it
// appears are REDACTED. A URL comes back redacted this way from every place it is
// shown: a rendered request, a redirect's Location, an error.
func redactURL(raw string, secretNames map[string]bool, secrets []string) string {
	shown := raw
	u, err := url.Parse(raw)
	if err != nil {
		// What cannot be parsed cannot be redacted parameter by parameter: its query is
		// left out.
		if before, _, ok := strings.Cut(raw, "?"); ok {
			shown = before + "?" + redacted
		}
		// Nor can its user and password be told apart from the rest.
		shown = redact.UnparsedURL(shown)
	} else {
		if u.User != nil {
			u.User = url.UserPassword(redacted, redacted)
		}
		if u.Fragment != "" {
			// A Location may carry a token in its fragment (OAuth's implicit flow).
			u.Fragment, u.RawFragment = redacted, ""
		}
		if u.RawQuery != "" {
			params := strings.Split(u.RawQuery, "&")
			for i, kv := range params {
				k, _, hasValue := strings.Cut(kv, "=")
				name, err := url.QueryUnescape(k)
				if err != nil {
					name = k
				}
				if hasValue && (CredentialQueryParameter(name) || secretNames[name]) {
					params[i] = k + "=" + redacted
				}
			}
			u.RawQuery = strings.Join(params, "&")
		}
		shown = u.String()
		if u.Host == "" {
			// Parsed, but not as a URL with a host: a user and password may be in the
			// path (a scheme with one slash).
			shown = redact.UnparsedURL(shown)
		}
	}
	return scrub(shown, secrets)
}

// minScrubbed is the shortest secret scrubbed from free text: a shorter one would match
// too much of it. Where a secret is placed by kubectl-finalize (a URL's query), it is
// redacted whatever its length.
const minScrubbed = 4

// scrub replaces each secret in s, as it is and escaped as in a URL, by REDACTED: a
// server may echo a credential in a Location or a body. So is every value registered
// with the redactor, this request's credentials among them (checkSecret), in every form.
func scrub(s string, secrets []string) string {
	for _, v := range secrets {
		if len(v) < minScrubbed {
			continue
		}
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
			s = strings.ReplaceAll(s, form, redacted)
		}
	}
	return redact.String(s)
}

// Key is the request without its secrets: the secrets are the same for every call.
func (c *httpCall) Key() string {
	h := sha256.New()
	fmt.Fprintf(h, "http\x00%s\x00%s\x00%s\x00%s\x00", c.p.method, c.url, strings.Join(c.params, "&"), c.body)
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

// Do asks, and scrubs the credentials it sent from the evidence, should the server have
// echoed one.
func (c *httpCall) Do(ctx context.Context) Answer {
	var secrets []string
	a := c.do(ctx, &secrets)
	a.Evidence = scrub(a.Evidence, secrets)
	return a
}

func (c *httpCall) do(ctx context.Context, secrets *[]string) Answer {
	ctx, cancel := context.WithTimeout(ctx, c.p.timeout)
	defer cancel()
	backoff := c.p.backoff
	for attempt := 1; ; attempt++ {
		status, answer, retryAfter := c.once(ctx, secrets)
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
// 5xx, a failed connection) and how long the server asked to wait. The credentials it
// sends are added to secrets.
func (c *httpCall) once(ctx context.Context, secrets *[]string) (string, *Answer, time.Duration) {
	// Credentials first: a provider that cannot read one sends nothing.
	target := c.url
	header := c.headers.Clone()
	for i, q := range c.p.query {
		if q.secret == nil {
			target = appendQuery(target, c.params[i])
			continue
		}
		v, err := q.secret.read()
		if err != nil {
			return "", c.cannotRun(err), 0
		}
		*secrets = append(*secrets, v)
		target = appendQuery(target, url.QueryEscape(q.name)+"="+url.QueryEscape(q.secret.src.Prefix+v))
	}
	for _, h := range c.p.headers {
		if h.secret == nil {
			continue
		}
		v, err := h.secret.read()
		if err != nil {
			return "", c.cannotRun(err), 0
		}
		*secrets = append(*secrets, v)
		header.Set(h.name, h.secret.src.Prefix+v)
	}
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	trail := &hops{secretNames: c.p.secretNames}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, hopsKey{}, trail), c.p.method, target, body)
	if err != nil {
		a := Unknown("%s: %v", c.shown, redactURLError(err))
		return "", &a, 0
	}
	req.Header = header
	resp, err := c.p.client.Do(req)
	if err != nil {
		var timeout interface{ Timeout() bool }
		if ctx.Err() != nil || (errors.As(err, &timeout) && timeout.Timeout()) {
			a := Unknown("%s: no answer within %s", c.shown, c.p.timeout)
			return "", &a, 0
		}
		// A refused connection, a certificate nobody signed: asking again would not
		// change the answer.
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
	// The evidence names every hop a followed redirect took, and the answer of the last.
	shown := c.shown
	for _, hop := range trail.shown {
		shown += ", redirected to " + hop
	}
	code := resp.StatusCode
	status := fmt.Sprintf("%d %s", code, http.StatusText(code))
	shape := shapeOf(resp, c.p.method)
	switch {
	case code >= 300 && code < 400:
		a := Unknown("%s: %s, %s", shown, status, c.redirect(resp, trail))
		return "", &a, 0
	case code == http.StatusTooManyRequests || code >= 500:
		return status, nil, retryAfter(resp.Header.Get("Retry-After"))
	case slices.Contains(c.p.gone, int32(code)):
		a := c.p.readGone(resp.Body, shown+": "+status, shape)
		return "", &a, 0
	case !c.p.isPresent(code):
		a := Unknown("%s: %s, which means neither gone nor present", shown, status)
		return "", &a, 0
	case c.p.response == nil:
		return "", &Answer{Verdict: finalizev1alpha1.VerdictPresent, Evidence: fmt.Sprintf("%s: %s", shown, status), Shape: &shape}, 0
	}
	a := c.p.readResponse(resp.Body, shown+": "+status, shape)
	return "", &a, 0
}

// cannotRun is the answer when a credential cannot be read: nothing was sent, and the
// rule cannot verify anything until its source is fixed.
func (c *httpCall) cannotRun(err error) *Answer {
	return &Answer{Verdict: finalizev1alpha1.VerdictUnknown, CannotRun: true,
		Evidence: fmt.Sprintf("%s: not sent: %v", c.shown, err)}
}

// maxLocationShown bounds how much of a redirect's Location the evidence shows.
const maxLocationShown = 256

// redirect says where a 3xx answer pointed, and why it was not followed.
func (c *httpCall) redirect(resp *http.Response, trail *hops) string {
	where := "a redirect without a Location"
	if loc, err := resp.Location(); err == nil {
		where = "a redirect to " + truncate(redactURL(loc.String(), c.p.secretNames, nil), maxLocationShown)
	} else if raw := resp.Header.Get("Location"); raw != "" {
		where = fmt.Sprintf("a redirect to %q", truncate(redactURL(raw, c.p.secretNames, nil), maxLocationShown))
	}
	switch {
	case trail.refused != "":
		return where + ": " + trail.refused
	case !c.p.sameHost:
		return where + ": redirects are not followed for a verdict (redirects: SameHost follows those on the same host)"
	}
	return where + ", which means neither gone nor present"
}

func (p *httpProvider) isPresent(code int) bool {
	if len(p.present) == 0 {
		return code >= 200 && code < 300
	}
	return slices.Contains(p.present, int32(code))
}

// readBody reads a body, at most MaxResponseBytes of it; what cannot be read in full is
// an Unknown.
func (p *httpProvider) readBody(body io.Reader, shown string) ([]byte, *Answer) {
	b, err := io.ReadAll(io.LimitReader(body, MaxResponseBytes+1))
	var a Answer
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		a = Unknown("%s: the body did not arrive in full within %s", shown, p.timeout)
	case err != nil:
		a = Unknown("%s: reading the body: %v", shown, err)
	case len(b) > MaxResponseBytes:
		a = Unknown("%s: the body is larger than %d bytes", shown, MaxResponseBytes)
	default:
		return b, nil
	}
	return nil, &a
}

// decodeJSON decodes a body, numbers kept as they were written.
func decodeJSON(b []byte) (any, error) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	err := dec.Decode(&doc)
	return doc, err
}

// readGone checks that an answer with a status in gone is the API's own: what the rule's
// goneResponse declares, or, where the rule reads a field of a JSON body, JSON; and a
// JSON body whose field the rule reads must not say the resource is anything but gone.
// The shape it returns is compared with the controls' Present answers by the verifier
// (GoneShapeMismatch).
func (p *httpProvider) readGone(body io.Reader, shown string, shape Shape) Answer {
	var b []byte
	if shape.Body != BodyNone {
		var fail *Answer
		if b, fail = p.readBody(body, shown); fail != nil {
			return *fail
		}
		shape.Body = classify(b)
	}
	notOwn := func(why string) Answer { return Unknown("%s: not the API's own answer: %s", shown, why) }
	switch {
	case p.goneResponse != nil:
		if why := goneResponseMismatch(p.goneResponse, shape); why != "" {
			return notOwn(why)
		}
		shape.Declared = true
	case p.jsonPath != nil && (!IsJSONMediaType(shape.MediaType) || shape.Body != BodyJSON):
		return notOwn(fmt.Sprintf("the rule reads %s of a JSON body, and this answer is %s", p.response.JSONPath, shape))
	}
	if p.jsonPath != nil && shape.Body == BodyJSON {
		// The field the rule reads, where the body has it, must say gone too.
		if doc, err := decodeJSON(b); err == nil {
			if results, err := p.jsonPath.FindResults(doc); err == nil {
				for _, r := range results {
					for _, v := range r {
						if value := fmt.Sprint(v.Interface()); !slices.Contains(p.response.Gone, value) {
							return Unknown("%s, but %s = %q, which is not one of response.gone: the answer contradicts itself", shown, p.response.JSONPath, truncate(value, 64))
						}
					}
				}
			}
		}
	}
	return Answer{Verdict: finalizev1alpha1.VerdictGone, Evidence: shown, Shape: &shape}
}

// readResponse reads a value of a JSON body, at most MaxResponseBytes of it.
func (p *httpProvider) readResponse(body io.Reader, shown string, shape Shape) Answer {
	b, fail := p.readBody(body, shown)
	if fail != nil {
		return *fail
	}
	doc, err := decodeJSON(b)
	if err != nil {
		return Unknown("%s: the body is not JSON: %v", shown, err)
	}
	shape.Body = classify(b)
	results, err := p.jsonPath.FindResults(doc)
	if err != nil || len(results) != 1 || len(results[0]) != 1 {
		return Unknown("%s: %s does not select one value of the body", shown, p.response.JSONPath)
	}
	value := fmt.Sprint(results[0][0].Interface())
	// Redacted before it is cut short, or the start of a secret would show.
	shown = fmt.Sprintf("%s, %s = %q", shown, p.response.JSONPath, truncate(redact.String(value), 64))
	switch {
	case slices.Contains(p.response.Gone, value):
		return Answer{Verdict: finalizev1alpha1.VerdictGone, Evidence: shown, Shape: &shape}
	case len(p.response.Present) == 0 || slices.Contains(p.response.Present, value):
		return Answer{Verdict: finalizev1alpha1.VerdictPresent, Evidence: shown, Shape: &shape}
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

// redactURLError keeps the reason of a failed request without the URL it already names:
// the URL sent carries the query's secrets.
// A redirect whose Location cannot be parsed is named without it: net/http quotes the
// raw header, and what cannot be parsed cannot be redacted.
func redactURLError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	if strings.HasPrefix(err.Error(), "failed to parse Location header") {
		return errors.New("a redirect whose Location header is not a URL (not shown: it may carry credentials)")
	}
	return err
}

// truncate cuts s to n bytes, redacted first: a registered value cut in two is no
// longer that value, and its start would show. Every cut of the package is made here.
func truncate(s string, n int) string {
	s = redact.String(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
