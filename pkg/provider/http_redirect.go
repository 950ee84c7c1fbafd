package provider

import (
	"fmt"
	"net/http"
)

// maxRedirects is how many redirects on the same host are followed.
const maxRedirects = 5

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
