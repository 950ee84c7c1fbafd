package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Replacement stands for a secret wherever it would be shown.
const Replacement = "REDACTED"

// MinLength is the shortest value that may be registered, in bytes. A credential is
// longer (eight characters is the least any password rule asks for; API keys and tokens
// are far longer), and a value as short as "true" or "5432" would be replaced all over the
// output: in a JSON report, it would break the JSON.
const MinLength = 8

// ErrTooShort is the error of a value shorter than MinLength: it is not a credential.
var ErrTooShort = fmt.Errorf("is shorter than %d bytes: no credential is that short, and a value that short cannot be told apart from the rest of the output", MinLength)

// registry holds every value registered, and the state built from them.
var registry struct {
	mu     sync.RWMutex
	values map[string]bool
	// current is nil until a value is registered: then every output passes unchanged.
	current atomic.Pointer[state]
}

// state is what redacting needs, rebuilt at each new value and then only read.
type state struct {
	replacer *strings.Replacer
	// forms are every form of every value, sorted, to find a prefix of one.
	forms []string
	// first marks the bytes some form starts with.
	first [256]bool
	// longest is the length of the longest form.
	longest int
}

// Register adds a secret value: from now on it is redacted from every output. It is
// safe for concurrent use, and registering a value again does nothing. A value shorter
// than MinLength is refused with ErrTooShort: where it is read as a credential, it is
// refused as one.
func Register(value string) error {
	if len(value) < MinLength {
		return ErrTooShort
	}
	registry.mu.RLock()
	known := registry.values[value]
	registry.mu.RUnlock()
	if known {
		return nil
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.values[value] {
		return nil
	}
	if registry.values == nil {
		registry.values = map[string]bool{}
	}
	registry.values[value] = true
	registry.current.Store(build(registry.values))
	return nil
}

// Long reports whether value is long enough to register (see MinLength). A value read
// from a source that does not say it is a credential (an inherited environment variable
// with a credential-like name, a Secret's data) is registered only when it is: a shorter
// one is no credential.
func Long(value string) bool { return len(value) >= MinLength }

// reset forgets every value, for tests.
func reset() {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.values = nil
	registry.current.Store(nil)
}

// build makes the state of values.
func build(values map[string]bool) *state {
	set := map[string]bool{}
	for v := range values {
		for _, f := range forms(v) {
			set[f] = true
		}
		// A log or a tail may cut a value at a line break: each line is a secret too.
		if strings.ContainsAny(v, "\r\n") {
			for line := range strings.Lines(v) {
				if line = strings.TrimRight(line, "\r\n"); Long(line) {
					for _, f := range forms(line) {
						set[f] = true
					}
				}
			}
		}
	}
	st := &state{forms: make([]string, 0, len(set))}
	for f := range set {
		st.forms = append(st.forms, f)
		st.first[f[0]] = true
		st.longest = max(st.longest, len(f))
	}
	// The replacer prefers the pair given first where several match at one place: the
	// longest form wins, so a form that holds another is replaced whole.
	byLength := slices.Clone(st.forms)
	slices.SortFunc(byLength, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	pairs := make([]string, 0, 2*len(byLength))
	for _, f := range byLength {
		pairs = append(pairs, f, Replacement)
	}
	st.replacer = strings.NewReplacer(pairs...)
	slices.Sort(st.forms)
	return st
}

// forms are the ways v may be written in output.
func forms(v string) []string {
	out := []string{
		v,
		url.QueryEscape(v),
		url.PathEscape(v),
		inner(strconv.Quote(v)),
		inner(strconv.QuoteToASCII(v)),
		jsonString(v, true),
		jsonString(v, false),
		strings.ReplaceAll(v, "'", "''"),
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		out = append(out, enc.EncodeToString([]byte(v)))
	}
	// Inside a longer base64 text (the base64 of "user:password" in a basic auth header,
	// of a file that holds the value) v starts at any of three alignments: at each, the
	// characters made of v's bits alone are the same whatever surrounds it.
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for skip := range 3 {
			if core := base64Core(enc, v, skip); Long(core) {
				out = append(out, core)
			}
		}
	}
	return out
}

// base64Core is the part of the base64 of v, preceded by skip bytes, that v's bits alone
// make: a character is 6 bits, a byte 8, and a character that holds bits of what stands
// before or after v is left out.
func base64Core(enc *base64.Encoding, v string, skip int) string {
	encoded := enc.EncodeToString(append(make([]byte, skip), v...))
	// The first character whose bits are all v's, and the first after the last of them.
	first, end := (8*skip+5)/6, (8*skip+8*len(v))/6
	if first >= end {
		return ""
	}
	return encoded[first:end]
}

// inner is a quoted string without its quotes.
func inner(quoted string) string { return quoted[1 : len(quoted)-1] }

// jsonString is v as encoding/json writes it inside a string, with or without its
// escaping of <, > and &.
func jsonString(v string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(v)
	return inner(strings.TrimSuffix(b.String(), "\n"))
}

// String is s with every registered value, in each of its forms, REDACTED.
func String(s string) string {
	st := registry.current.Load()
	if st == nil {
		return s
	}
	return st.replacer.Replace(s)
}

// Bytes is String of b.
func Bytes(b []byte) []byte {
	if registry.current.Load() == nil {
		return b
	}
	return []byte(String(string(b)))
}

// JSON is a JSON document with every registered value REDACTED from its strings (keys
// and values), each unescaped, redacted and written again: the document stays valid,
// whatever escaping put the value there. A document that cannot be read is redacted as
// text.
func JSON(doc []byte) []byte {
	if registry.current.Load() == nil {
		return doc
	}
	var out []byte
	last := 0
	for i := 0; i < len(doc); i++ {
		if doc[i] != '"' {
			continue
		}
		end := i + 1
		for end < len(doc) && doc[end] != '"' {
			if doc[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(doc) {
			return Bytes(doc)
		}
		var s string
		if err := json.Unmarshal(doc[i:end+1], &s); err != nil {
			return Bytes(doc)
		}
		if r := String(s); r != s {
			quoted, err := json.Marshal(r)
			if err != nil {
				return Bytes(doc)
			}
			out = append(append(out, doc[last:i]...), quoted...)
			last = end + 1
		}
		i = end
	}
	if out == nil {
		return doc
	}
	return append(out, doc[last:]...)
}

// Object redacts every string of an object as client-go's unstructured holds it (maps,
// slices, strings), keys included, in place, before it is marshalled.
func Object(obj map[string]any) {
	if registry.current.Load() == nil {
		return
	}
	for k, v := range obj {
		v = value(v)
		if r := String(k); r != k {
			delete(obj, k)
			k = r
		}
		obj[k] = v
	}
}

func value(v any) any {
	switch v := v.(type) {
	case string:
		return String(v)
	case map[string]any:
		Object(v)
	case []any:
		for i := range v {
			v[i] = value(v[i])
		}
	}
	return v
}

// heldBack is how many bytes at the end of s could be the start of a registered value
// (of one of its forms), and so must wait for what comes next before they are shown.
func (st *state) heldBack(s string) int {
	for i := max(0, len(s)-st.longest+1); i < len(s); i++ {
		if !st.first[s[i]] {
			continue
		}
		tail := s[i:]
		j, _ := slices.BinarySearch(st.forms, tail)
		if j < len(st.forms) && strings.HasPrefix(st.forms[j], tail) {
			return len(s) - i
		}
	}
	return 0
}

// schemeRE is the scheme of a URL and the slashes after it.
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:/*`)

// UnparsedURL is a URL that did not parse as one with a host (a password holding a '/',
// a scheme with one slash, none at all), fit to show: whatever stands between its scheme
// and the last '@' before its query or fragment is REDACTED. Where the URL does not
// parse, its user and password cannot be told apart from the rest, and a password is
// never shown because a URL around it was mistyped.
func UnparsedURL(raw string) string {
	end := len(raw)
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		end = i
	}
	at := strings.LastIndex(raw[:end], "@")
	if at < 0 {
		return raw
	}
	start := len(schemeRE.FindString(raw[:at]))
	return raw[:start] + Replacement + raw[at:]
}
