package provider

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
)

// urlTemplate is an http provider's URL: its scheme, host and port are literal, and
// values land in its path (as whole or partial segments) or its query.
type urlTemplate struct {
	*Template
	// queryAt is the offset of the "?" that starts the query, or len(raw).
	queryAt int
	// paths are the offsets of the expressions whose values are paths (DeclarePaths).
	paths map[int]bool
}

// parseURLTemplate parses and checks a URL template: http or https, no credentials, no
// fragment, and no value before the path begins, so a value can never change the host.
func parseURLTemplate(s string) (*urlTemplate, error) {
	t, err := ParseTemplate(s)
	if err != nil {
		return nil, err
	}
	u := &urlTemplate{Template: t, queryAt: len(s)}
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
func (u *urlTemplate) QueryNames() []string {
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
func (u *urlTemplate) DeclarePaths(expressions []string) error {
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
func (u *urlTemplate) Render(obj map[string]any, identity map[string]string) (string, error) {
	return u.render(obj, identity, func(offset int) escapeFunc {
		switch {
		case offset > u.queryAt:
			return queryValue
		case u.paths[offset]:
			return pathValue
		}
		return pathSegment
	})
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
