package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

func register(t *testing.T, values ...string) {
	t.Helper()
	reset()
	t.Cleanup(reset)
	for _, v := range values {
		if err := Register(v); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEveryFormIsRedacted: a value is replaced as it is and in each form output gives
// it: JSON and Go strings, a URL's query and path, YAML's single quotes, base64.
func TestEveryFormIsRedacted(t *testing.T) {
	secret := `s3cr/t+"tok&en"<x> ü'`
	register(t, secret)
	marshalled, _ := json.Marshal(secret)
	forms := map[string]string{
		"as it is":      secret,
		"JSON":          string(marshalled),
		"Go %q":         strconv.Quote(secret),
		"ASCII %+q":     strconv.QuoteToASCII(secret),
		"query":         url.QueryEscape(secret),
		"path":          url.PathEscape(secret),
		"YAML quoted":   "'" + strings.ReplaceAll(secret, "'", "''") + "'",
		"base64":        base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64 url":    base64.URLEncoding.EncodeToString([]byte(secret)),
		"base64 no pad": base64.RawStdEncoding.EncodeToString([]byte(secret)),
	}
	for name, form := range forms {
		got := String("before " + form + " after")
		if strings.Contains(got, "tok") || !strings.Contains(got, Replacement) {
			t.Errorf("%s: %q", name, got)
		}
	}
	// A YAML document of a string that holds it.
	y, err := yaml.Marshal(map[string]string{"note": "the key: " + secret})
	if err != nil {
		t.Fatal(err)
	}
	if got := String(string(y)); strings.Contains(got, "tok") || !strings.Contains(got, Replacement) {
		t.Errorf("YAML: %q", got)
	}
}

// TestEachLineOfAValueIsRedacted: a log may cut a multi-line value (a key) at its line
// breaks; each line is a secret of its own, unless it is too short to be one.
func TestEachLineOfAValueIsRedacted(t *testing.T) {
	key := "-----BEGIN KEY-----\r\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nshort\n-----END KEY-----\n"
	register(t, key)
	got := String("line: MIIEvQIBADANBgkqhkiG9w0BAQEFAASC; whole: " + key)
	if strings.Contains(got, "MIIE") || strings.Contains(got, "BEGIN KEY") {
		t.Errorf("%q", got)
	}
	if !strings.Contains(String("a short line"), "short") {
		t.Error("a line shorter than MinLength was redacted")
	}
}

// TestAValueTooShortIsRefused: nothing shorter than MinLength is registered, and the
// refusal says why.
func TestAValueTooShortIsRefused(t *testing.T) {
	register(t)
	if err := Register("true"); !errors.Is(err, ErrTooShort) {
		t.Errorf("Register(true): %v", err)
	}
	if got := String("dryRun: true"); got != "dryRun: true" {
		t.Errorf("%q", got)
	}
	if Long("1234567") || !Long("12345678") {
		t.Error("Long")
	}
}

// TestNothingRegisteredChangesNothing: before any value is registered, every output
// passes as it is.
func TestNothingRegisteredChangesNothing(t *testing.T) {
	register(t)
	doc := []byte(`{"a":"b"}`)
	if got := JSON(doc); !bytes.Equal(got, doc) || String("x") != "x" {
		t.Errorf("%s", got)
	}
	var b bytes.Buffer
	w := NewWriter(&b)
	_, _ = w.Write([]byte("abc"))
	if b.String() != "abc" {
		t.Errorf("%q", b.String())
	}
}

// TestJSONStaysValid: a value redacted in a JSON document leaves valid JSON with the
// same fields, whatever escaping put the value there.
func TestJSONStaysValid(t *testing.T) {
	secret := `tok"en\with<escapes>`
	register(t, secret, "plain-secret-1")
	doc, err := json.Marshal(map[string]any{"evidence": "the API said " + secret, "nested": []any{map[string]string{secret: "key"}}, "n": 1})
	if err != nil {
		t.Fatal(err)
	}
	got := JSON(doc)
	var back map[string]any
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if strings.Contains(string(got), "tok") || back["evidence"] != "the API said REDACTED" || back["n"] != 1.0 {
		t.Errorf("%s", got)
	}
	if got := JSON([]byte(`{"cut": "plain-secret-1`)); string(got) != `{"cut": "REDACTED` {
		t.Errorf("a document that cannot be read: %s", got)
	}
}

// TestObjectRedactsEveryString: the strings of an unstructured object, at any depth,
// keys too.
func TestObjectRedactsEveryString(t *testing.T) {
	register(t, "tok-12345678")
	obj := map[string]any{"data": map[string]any{"token": "tok-12345678", "tok-12345678": "x"}, "list": []any{"a tok-12345678", int64(3)}}
	Object(obj)
	b, _ := json.Marshal(obj)
	if strings.Contains(string(b), "tok-") || !strings.Contains(string(b), `"list":["a REDACTED",3]`) {
		t.Errorf("%s", b)
	}
}

// TestASecretSplitAcrossWritesIsCaught: however a value is cut between writes, it never
// reaches the writer; what cannot be a value's start is written at once.
func TestASecretSplitAcrossWritesIsCaught(t *testing.T) {
	secret := "s3cr3t-t0ken-xyz"
	register(t, secret)
	text := "prefix s3 " + secret + " then \"" + url.QueryEscape(secret) + "\" end\n"
	for cut1 := 0; cut1 <= len(text); cut1++ {
		for cut2 := cut1; cut2 <= len(text); cut2 += 3 {
			var b bytes.Buffer
			w := NewWriter(&b)
			for _, part := range []string{text[:cut1], text[cut1:cut2], text[cut2:]} {
				if _, err := w.Write([]byte(part)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if want := "prefix s3 REDACTED then \"REDACTED\" end\n"; b.String() != want {
				t.Fatalf("cut at %d and %d: %q", cut1, cut2, b.String())
			}
		}
	}
	// A prompt is shown as it is written.
	var b bytes.Buffer
	w := NewWriter(&b)
	_, _ = w.Write([]byte("Remove 1 finalizer from 1 object? [y/N]: "))
	if b.String() != "Remove 1 finalizer from 1 object? [y/N]: " {
		t.Errorf("the prompt waits: %q", b.String())
	}
	// The start of a value cut off by the end of the output is redacted at Flush.
	b.Reset()
	_, _ = w.Write([]byte("token s3cr3t-t0ken"))
	if b.String() != "token " {
		t.Errorf("%q", b.String())
	}
	_ = w.Flush()
	if b.String() != "token REDACTED" {
		t.Errorf("%q", b.String())
	}
}

// TestRegisteringWhileWriting: values registered and outputs written from many
// goroutines at once (run with -race). A value split across two writes is caught when
// the two are consecutive, as one writer (klog, a printer) writes its lines: the pieces
// of messages that other goroutines interleave are no longer one value in the output,
// which no redactor can see (docs/security.md says so).
func TestRegisteringWhileWriting(t *testing.T) {
	register(t)
	var b syncBuffer
	w := NewWriter(&b)
	var wg sync.WaitGroup
	var message sync.Mutex
	for i := range 8 {
		wg.Go(func() {
			v := fmt.Sprintf("secret-value-%d-of-8", i)
			_ = Register(v)
			_ = Register(v)
			for range 50 {
				message.Lock()
				_, _ = w.Write([]byte("a " + v[:5]))
				_, _ = w.Write([]byte(v[5:] + " b\n"))
				_, _ = w.Write([]byte("c " + v + " d\n"))
				message.Unlock()
				_ = String(v)
			}
		})
	}
	wg.Wait()
	_ = w.Flush()
	if strings.Contains(b.String(), "value-") {
		t.Errorf("a secret was written:\n%s", b.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAURLThatDoesNotParseShowsNothingBeforeItsAt: a password that breaks a URL's
// parsing (a '/' in it, a scheme with one slash, none) is not shown with the URL.
func TestAURLThatDoesNotParseShowsNothingBeforeItsAt(t *testing.T) {
	for raw, want := range map[string]string{
		"https://svc:Zm9v/YmFy@api.example.com/x?a=b@c": "https://REDACTED@api.example.com/x?a=b@c",
		"https:/pusher:s3cret@127.0.0.1:9091":           "https:/REDACTED@127.0.0.1:9091",
		"https//pusher:s3cret@127.0.0.1:9091":           "REDACTED@127.0.0.1:9091",
		"pusher:s3cret@127.0.0.1:9091":                  "pusher:REDACTED@127.0.0.1:9091",
		"https://api.example.com/x#a@b":                 "https://api.example.com/x#a@b",
		"127.0.0.1:9091":                                "127.0.0.1:9091",
	} {
		if got := UnparsedURL(raw); got != want {
			t.Errorf("UnparsedURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestAValueInsideALongerBase64TextIsRedacted: the base64 of "user:password", of a file
// that holds the value, or of anything around it, holds the value at one of three
// alignments; none of them shows it, and the text around it stays.
func TestAValueInsideALongerBase64TextIsRedacted(t *testing.T) {
	t.Cleanup(reset)
	const secret = "basic-Pass-4d7e19c2ab"
	if err := Register(secret); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"", "s", "sv", "svc:", "user-name:", "x"} {
		for _, suffix := range []string{"", "\n", "@host", "ab"} {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
				text := enc.EncodeToString([]byte(prefix + secret + suffix))
				got := String("Authorization: Basic " + text)
				if strings.Contains(got, text) || !strings.Contains(got, Replacement) || !strings.HasPrefix(got, "Authorization: Basic ") {
					t.Errorf("%q%s%q: %s", prefix, "SECRET", suffix, got)
				}
			}
		}
	}
}
