package provider

import (
	"net/url"
	"strings"
	"testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// FuzzURLTemplate renders hostile annotation values into a URL's path and query: the
// host never changes; a value in the path is sent as it is or refused, never escaped (an
// escaped value names something else: "i-123 " is not i-123), and stays one segment,
// not "." or ".."; a value declared a path (pathValues) spans segments as it is, none
// empty, "." or ".."; the query value reads back as exactly the value.
func FuzzURLTemplate(f *testing.F) {
	for _, v := range []string{"orders-prod", "a/../b?c=d#e%2Fx\nSet-Cookie: y", "..", ".", "", "@evil.example.com", "%2e%2e", "a b+c", "\x00",
		"i-123 ", "arn:aws:rds:eu-west-1:123456789012:db:orders", "projects/p-1/instances/db-1", "a//b", "/a", "a/./b", "café", "a;b"} {
		f.Add(v)
	}
	u, err := parseURLTemplate("https://api.example.com/v1/instances/{.metadata.annotations.x}?name={.metadata.annotations.x}")
	if err != nil {
		f.Fatal(err)
	}
	paths, err := parseURLTemplate("https://api.example.com/v1/{.metadata.annotations.x}/status?name={.metadata.annotations.x}")
	if err != nil {
		f.Fatal(err)
	}
	if err := paths.DeclarePaths([]string{"{.metadata.annotations.x}"}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, value string) {
		obj := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"x": value}}}
		check := func(u *urlTemplate) *url.URL {
			out, err := u.Render(obj, nil)
			if err != nil {
				return nil // refused, which is safe
			}
			parsed, err := url.Parse(out)
			if err != nil {
				t.Fatalf("%q rendered %q, which does not parse: %v", value, out, err)
			}
			if parsed.Scheme != "https" || parsed.Host != "api.example.com" || parsed.User != nil || parsed.Fragment != "" {
				t.Fatalf("%q moved the request: %q", value, out)
			}
			if got := parsed.Query()["name"]; len(got) != 1 || got[0] != value {
				t.Fatalf("%q became query %q", value, got)
			}
			return parsed
		}
		if parsed := check(u); parsed != nil {
			segments := strings.Split(parsed.EscapedPath(), "/")
			if len(segments) != 4 || segments[1] != "v1" || segments[2] != "instances" {
				t.Fatalf("%q changed the path's shape: %q", value, parsed.EscapedPath())
			}
			if segments[3] != value || value == "." || value == ".." {
				t.Fatalf("%q became path segment %q: a value is sent as it is, or refused", value, segments[3])
			}
		}
		if parsed := check(paths); parsed != nil {
			p := parsed.EscapedPath()
			inner, okPrefix := strings.CutPrefix(p, "/v1/")
			inner, okSuffix := strings.CutSuffix(inner, "/status")
			if !okPrefix || !okSuffix || inner != value {
				t.Fatalf("%q became path %q: a declared path is sent as it is, or refused", value, p)
			}
			for _, seg := range strings.Split(inner, "/") {
				if seg == "" || seg == "." || seg == ".." {
					t.Fatalf("%q became path %q, with segment %q", value, p, seg)
				}
			}
		}
	})
}

// FuzzExecDecode feeds arbitrary stdout to the exec provider's decoder: it never panics,
// and whatever it accepts is one valid verdict about exactly the object asked about.
func FuzzExecDecode(f *testing.F) {
	req := finalizev1alpha1.VerifyRequest{Rule: "r", Finalizer: "db.example.com/finalizer", UID: "uid-1", ResourceVersion: "7"}
	ok := `{"apiVersion":"` + finalizev1alpha1.SchemeGroupVersion.String() + `","kind":"` + kindVerifyResponse + `","uid":"uid-1","resourceVersion":"7","finalizer":"db.example.com/finalizer","verdict":"Gone","evidence":"404"}`
	for _, s := range []string{ok, ok + ok, ok + "\n", strings.Replace(ok, "Gone", "gone", 1), strings.Replace(ok, "uid-1", "uid-2", 1),
		strings.Replace(ok, `"evidence"`, `"extra":1,"evidence"`, 1), "", "null", "[]", `{"verdict":"Gone"}`, "<html>"} {
		f.Add([]byte(s))
	}
	c := &execCall{request: req}
	f.Fuzz(func(t *testing.T, out []byte) {
		resp, err := c.decode(out)
		if err != nil {
			return
		}
		if resp.UID != req.UID || resp.ResourceVersion != req.ResourceVersion || resp.Finalizer != req.Finalizer {
			t.Fatalf("accepted an answer about another object: %+v", resp)
		}
		switch resp.Verdict {
		case finalizev1alpha1.VerdictGone, finalizev1alpha1.VerdictPresent, finalizev1alpha1.VerdictUnknown, finalizev1alpha1.VerdictRetained:
		default:
			t.Fatalf("accepted verdict %q", resp.Verdict)
		}
	})
}

// FuzzRedactURL shows arbitrary queries as evidence would: the value of every
// credential-like parameter reads back as REDACTED, and a secret never shows.
func FuzzRedactURL(f *testing.F) {
	for _, q := range []string{"api_key=abc", "region=eu&API_KEY=abc&x", "X-Amz-Signature=a%2Fb&X-Amz-Credential=c", "token", "a=b;token=c",
		"%zz=1&sig=2", "sig=\x00", "next=/login?api_key=abc", "&&=&", "Token=a&token=b"} {
		f.Add(q, "s3cret-value")
	}
	f.Fuzz(func(t *testing.T, query, secret string) {
		raw := "https://api.example.com/v1/x?" + query + "&api_key=" + url.QueryEscape(secret)
		// The secret is scrubbed wherever it shows, unless it is part of the word that
		// replaces it.
		if out := redactURL(raw, nil, []string{secret}); len(secret) >= minScrubbed && !strings.Contains(redacted, secret) && strings.Contains(out, secret) {
			t.Fatalf("%q shows the secret %q", out, secret)
		}
		// Parameter by parameter, before any scrubbing.
		out := redactURL(raw, nil, nil)
		u, err := url.Parse(out)
		if err != nil {
			t.Fatalf("%q: the redacted URL does not parse: %v", out, err)
		}
		for _, kv := range strings.Split(u.RawQuery, "&") {
			k, v, ok := strings.Cut(kv, "=")
			name, err := url.QueryUnescape(k)
			if err != nil {
				name = k
			}
			if ok && credentialQueryParameter(name) && v != redacted {
				t.Fatalf("%q: %s=%s is shown", out, name, v)
			}
		}
	})
}
