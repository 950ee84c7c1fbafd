package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

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
		v, err := q.value.renderAll(obj, req.Identity, queryValue)
		if err != nil {
			return nil, fmt.Errorf("query parameter %s: %w", q.name, err)
		}
		c.params = append(c.params, name+"="+v)
		shown = appendQuery(shown, name+"="+v)
	}
	if p.body != nil {
		if c.body, err = p.body.renderAll(obj, req.Identity, jsonString); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		c.headers.Set("Content-Type", "application/json")
	}
	c.headers.Set("Accept", "application/json")
	for _, h := range p.headers {
		if h.value == nil {
			continue // secrets are read when the request is sent, and never shown
		}
		v, err := h.value.renderAll(obj, req.Identity, headerValue)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", h.name, err)
		}
		c.headers.Set(h.name, v)
	}
	c.shown = p.method + " " + redactURL(shown, p.secretNames, nil)
	return c, nil
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
	defer func() {
		drain(resp.Body)
		_ = resp.Body.Close()
	}()
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
		return "", &Answer{Verdict: finalizev1alpha1.VerdictPresent, Evidence: fmt.Sprintf("%s: %s", shown, status), Shape: c.p.shape(shape)}, 0
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

// retryAfter reads a Retry-After in seconds; dates and nonsense count as no wait.
func retryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// drainLimit bounds what is read of a body the answer did not need, so that its
// connection is kept for the next request: a body closed unread closes its connection,
// and each verification of a rule that reads only the status would cost a new TLS
// handshake with the API. A longer body costs less to close than to read.
const drainLimit = 64 << 10

// drain reads what is left of body, up to drainLimit, before it is closed.
func drain(body io.Reader) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainLimit))
}
