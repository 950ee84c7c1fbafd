package provider

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/jsonpath"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// Limits of the http provider.
const (
	defaultHTTPTimeout = 10 * time.Second
	// MaxResponseBytes bounds how much of a response body is read.
	MaxResponseBytes = 1 << 20
	// MaxResponseHeaderBytes bounds a response's status line and headers.
	MaxResponseHeaderBytes = 64 << 10
)

// Default statuses: 404 and 410 mean gone, every 2xx present.
var defaultGone = []int32{http.StatusNotFound, http.StatusGone}

func init() {
	register(&kind[finalizev1alpha1.HTTPProvider]{
		name:      "http",
		spec:      func(v *finalizev1alpha1.Verify) *finalizev1alpha1.HTTPProvider { return v.HTTP },
		check:     checkHTTP,
		templates: httpTemplates,
		build:     newHTTP,
	})
}

// httpTemplates: the URL, the body, and the values of headers and query parameters.
func httpTemplates(h *finalizev1alpha1.HTTPProvider) []string {
	templates := []string{h.URL, h.Body}
	for _, hd := range h.Headers {
		templates = append(templates, hd.Value)
	}
	for _, q := range h.Query {
		templates = append(templates, q.Value)
	}
	return templates
}

var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func checkHTTP(c Checks, path *field.Path, h *finalizev1alpha1.HTTPProvider) {
	if h.URL == "" {
		c.Add(field.Required(path.Child("url"), ""))
	} else if u, err := parseURLTemplate(h.URL); err != nil {
		c.Add(field.Invalid(path.Child("url"), redactPolicyURL(h.URL), err.Error()))
	} else {
		c.URL(path.Child("url"), h.URL, u.Template)
		if strings.HasPrefix(u.String(), "http://") {
			c.Warn(fmt.Sprintf("%s: %s is plain http: its answers and headers travel unencrypted", path.Child("url"), redactPolicyURL(h.URL)))
		}
		for i, e := range h.PathValues {
			if err := u.DeclarePaths([]string{e}); err != nil {
				c.Add(field.Invalid(path.Child("pathValues").Index(i), e, err.Error()+": pathValues name expressions of the url's path, as written there"))
			}
		}
		for _, name := range u.QueryNames() {
			if credentialQueryParameter(name) {
				// The URL is shown in evidence, reports, Events and audit lines: the value
				// is left out of the error too.
				c.Add(field.Forbidden(path.Child("url"), fmt.Sprintf("query parameter %s carries credentials, and a URL is shown in evidence, reports, Events and audit lines: "+
					"remove it from the url and add it under query with valueFrom (an environment variable or a file), which is sent but shown as %s=REDACTED", name, name)))
			}
		}
	}
	for i, q := range h.Query {
		qp := path.Child("query").Index(i)
		switch {
		case q.Name == "":
			c.Add(field.Required(qp.Child("name"), "the parameter's name"))
		case strings.ContainsAny(q.Name, "&=#") || strings.TrimSpace(q.Name) != q.Name:
			c.Add(field.Invalid(qp.Child("name"), q.Name, "a query parameter's name holds no '&', '=', '#' or surrounding spaces"))
		}
		checkSecretOrValue(c, qp, "query parameter", q.Name, q.Value, q.ValueFrom, credentialQueryParameter(q.Name))
	}
	switch h.Redirects {
	case "", finalizev1alpha1.RedirectsRefuse, finalizev1alpha1.RedirectsSameHost:
	default:
		c.Add(field.NotSupported(path.Child("redirects"), h.Redirects, []finalizev1alpha1.HTTPRedirects{finalizev1alpha1.RedirectsRefuse, finalizev1alpha1.RedirectsSameHost}))
	}
	switch strings.ToUpper(h.Method) {
	case "", http.MethodGet, http.MethodHead, http.MethodPost:
	default:
		c.Add(field.NotSupported(path.Child("method"), h.Method, []string{http.MethodGet, http.MethodHead, http.MethodPost}))
	}
	if h.Body != "" {
		c.Template(path.Child("body"), h.Body)
		if m := strings.ToUpper(h.Method); m != http.MethodPost {
			c.Add(field.Invalid(path.Child("body"), field.OmitValueType{}, "a body is sent with method POST only"))
		}
	}
	for i, hd := range h.Headers {
		hp := path.Child("headers").Index(i)
		if !headerNameRE.MatchString(hd.Name) {
			c.Add(field.Invalid(hp.Child("name"), hd.Name, "not an HTTP header name"))
		}
		checkSecretOrValue(c, hp, "header", hd.Name, hd.Value, hd.ValueFrom, credentialHeader(hd.Name))
	}
	checkStatuses(c, path.Child("gone"), h.Gone)
	checkStatuses(c, path.Child("present"), h.Present)
	for _, s := range h.Gone {
		if slices.Contains(h.Present, s) {
			c.Add(field.Invalid(path.Child("present"), s, "a status cannot mean both gone and present"))
		}
	}
	if r := h.Response; r != nil {
		rp := path.Child("response")
		if r.JSONPath == "" {
			c.Add(field.Required(rp.Child("jsonPath"), "the JSONPath of the value to read, like {.status}"))
		} else if err := jsonpath.New("response").Parse(r.JSONPath); err != nil {
			c.Add(field.Invalid(rp.Child("jsonPath"), r.JSONPath, err.Error()))
		}
		if len(r.Gone) == 0 {
			c.Add(field.Required(rp.Child("gone"), "the values that mean the resource is gone"))
		}
	}
	if g := h.GoneResponse; g != nil {
		gp := path.Child("goneResponse")
		if g.MediaType == "" && !g.EmptyBody {
			c.Add(field.Required(gp, "say what the API's Gone answers look like: mediaType, emptyBody: true, or both"))
		}
		if g.MediaType != "" {
			if mt, params, err := mime.ParseMediaType(g.MediaType); err != nil || len(params) > 0 || !strings.Contains(mt, "/") {
				c.Add(field.Invalid(gp.Child("mediaType"), g.MediaType, "a media type without parameters, like text/plain or application/problem+json"))
			}
		}
	}
	if t := h.TLS; t != nil && (t.CertFile == "") != (t.KeyFile == "") {
		c.Add(field.Invalid(path.Child("tls"), field.OmitValueType{}, "a client certificate needs both certFile and keyFile"))
	}
	checkTimeout(c, path.Child("timeout"), h.Timeout)
}

func checkStatuses(c Checks, path *field.Path, codes []int32) {
	for i, s := range codes {
		if s < 100 || s > 599 {
			c.Add(field.Invalid(path.Index(i), s, "not an HTTP status"))
		}
		if s >= 300 && s < 400 {
			c.Add(field.Invalid(path.Index(i), s, "a 3xx is a redirect, which is never a verdict: it is Unknown (redirects: SameHost follows those on the same host)"))
		}
		if s == http.StatusTooManyRequests || s >= 500 {
			c.Add(field.Invalid(path.Index(i), s, "429 and 5xx are retried, then mean Unknown"))
		}
	}
}

// httpValue is a header, or a parameter the rule adds to the URL's query: a template, or
// a secret.
type httpValue struct {
	name   string
	value  *Template
	secret *secretSource
}

type httpProvider struct {
	url     *urlTemplate
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
	// shapes holds one copy of each shape the API's answers had: an API answers in a few,
	// and a pass keeps ten thousand answers (#36).
	shapes sync.Map // Shape → *Shape
}

// shape is the one copy of s. Answers share it, and none changes it.
func (p *httpProvider) shape(s Shape) *Shape {
	if v, ok := p.shapes.Load(s); ok {
		return v.(*Shape)
	}
	v, _ := p.shapes.LoadOrStore(s, &s)
	return v.(*Shape)
}

func newHTTP(spec *finalizev1alpha1.HTTPProvider, opts Options) (Provider, error) {
	u, err := parseURLTemplate(spec.URL)
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
