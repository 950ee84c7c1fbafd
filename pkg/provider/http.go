package provider

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

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

// httpValue is a header, or a parameter the rule adds to the URL's query: a template, or
// a secret.
type httpValue struct {
	name   string
	value  *Template
	secret *secretSource
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
