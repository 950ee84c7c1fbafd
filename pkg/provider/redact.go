package provider

import (
	"errors"
	"net/url"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
)

// redactPolicyURL is a URL written in a policy, fit to show in a message: the value of every
// credential-like query parameter, a password and a fragment are REDACTED.
func redactPolicyURL(raw string) string { return redactURL(raw, nil, nil) }

// redacted stands for a secret wherever a URL is shown.
const redacted = "REDACTED"

// redactURL is a URL fit to show: a password in it, its fragment, the value of every
// query parameter whose name is credential-like (credentialQueryParameter) or one of
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
				if hasValue && (credentialQueryParameter(name) || secretNames[name]) {
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
