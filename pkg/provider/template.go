package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/jsonpath"
)

// identityPrefix starts an identity value in a template: "{identity.arn}".
const identityPrefix = "identity."

// Template is text with values of the object in braces: kubectl JSONPath expressions
// ("{.status.instanceID}", "{.metadata.annotations['crossplane\.io/external-name']}") and
// the identity values a preset found ("{identity.arn}"). Braces that do not start with
// "." or "identity." are text, so JSON bodies need no escaping.
type Template struct {
	raw   string
	parts []part
}

type part struct {
	text     string
	source   string // the expression as written, braces included
	expr     *jsonpath.JSONPath
	identity string
	offset   int
}

// ParseTemplate parses a template; every expression must be valid JSONPath.
func ParseTemplate(s string) (*Template, error) {
	t := &Template{raw: s}
	for i := 0; i < len(s); {
		start := nextExpression(s, i)
		if start < 0 {
			t.parts = append(t.parts, part{text: s[i:], offset: i})
			break
		}
		if start > i {
			t.parts = append(t.parts, part{text: s[i:start], offset: i})
		}
		end, err := closingBrace(s, start)
		if err != nil {
			return nil, err
		}
		p := part{source: s[start : end+1], offset: start}
		inner := s[start+1 : end]
		if key, ok := strings.CutPrefix(inner, identityPrefix); ok {
			if key == "" || strings.ContainsAny(key, " .[]{}") {
				return nil, fmt.Errorf("%s: an identity value is {identity.NAME}", p.source)
			}
			p.identity = key
		} else {
			jp := jsonpath.New("template")
			if err := jp.Parse(p.source); err != nil {
				return nil, fmt.Errorf("%s: %w", p.source, err)
			}
			p.expr = jp
		}
		t.parts = append(t.parts, p)
		i = end + 1
	}
	return t, nil
}

// nextExpression is the position of the next "{." or "{identity." from i, or -1.
func nextExpression(s string, i int) int {
	for {
		j := strings.IndexByte(s[i:], '{')
		if j < 0 {
			return -1
		}
		j += i
		rest := s[j+1:]
		if strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, identityPrefix) {
			return j
		}
		i = j + 1
	}
}

// closingBrace finds the brace that closes the expression opened at start, skipping
// brackets, parentheses and quoted strings.
func closingBrace(s string, start int) (int, error) {
	depth := 0
	var quote byte
	for i := start + 1; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[' || c == '(':
			depth++
		case c == ']' || c == ')':
			depth--
		case c == '}' && depth == 0:
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s: the expression is not closed with }", s[start:])
}

// String is the template as written.
func (t *Template) String() string { return t.raw }

// Expressions reports whether the template has any value to fill in.
func (t *Template) Expressions() bool {
	for _, p := range t.parts {
		if p.source != "" {
			return true
		}
	}
	return false
}

// IdentityRefs are the identity values the template uses ("arn" for {identity.arn}).
func (t *Template) IdentityRefs() []string {
	var out []string
	for _, p := range t.parts {
		if p.identity != "" {
			out = append(out, p.identity)
		}
	}
	return out
}

// FieldPaths are, for each JSONPath expression of the template, the object fields it
// reads: its leading field names up to the first that is not one (an index, a filter, a
// wildcard), which reads within that field. ["metadata", "annotations",
// "crossplane.io/external-name"] for {.metadata.annotations['crossplane\.io/external-name']}.
// An expression that starts otherwise reads no field path (nil).
func (t *Template) FieldPaths() map[string][]string {
	out := map[string][]string{}
	for _, p := range t.parts {
		if p.expr == nil {
			continue
		}
		parsed, err := jsonpath.Parse("template", p.source)
		if err != nil || parsed.Root == nil || len(parsed.Root.Nodes) == 0 {
			out[p.source] = nil
			continue
		}
		var fields []string
		if list, ok := parsed.Root.Nodes[0].(*jsonpath.ListNode); ok {
			for _, n := range list.Nodes {
				f, ok := n.(*jsonpath.FieldNode)
				if !ok {
					break
				}
				fields = append(fields, f.Value)
			}
		}
		out[p.source] = fields
	}
	return out
}

// FirstExpression is the offset of the first expression, or -1.
func (t *Template) FirstExpression() int {
	for _, p := range t.parts {
		if p.source != "" {
			return p.offset
		}
	}
	return -1
}

// escapeFunc turns one value into text fit for where it lands, or says why it cannot be.
type escapeFunc func(value string) (string, error)

// render fills in each value from obj and identity, escaped by escapeAt (given the offset
// of the expression in the template). A value that is missing, empty, not a scalar or
// more than one makes it fail: a verification never runs on a guess.
func (t *Template) render(obj map[string]any, identity map[string]string, escapeAt func(offset int) escapeFunc) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.source == "" {
			b.WriteString(p.text)
			continue
		}
		v, err := p.value(obj, identity)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p.source, err)
		}
		if v == "" {
			return "", fmt.Errorf("%s: resolves to an empty value", p.source)
		}
		if isPlaceholder(v) {
			return "", fmt.Errorf("%s: resolves to %q, a placeholder, not a value", p.source, v)
		}
		esc, err := escapeAt(p.offset)(v)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p.source, err)
		}
		b.WriteString(esc)
	}
	return b.String(), nil
}

// placeholderValues are what a field holds while its real value is not known yet, or what a
// program printed for a value it did not have: "None" from Python, "<nil>" from Go's
// fmt, "<no value>" from Go's templates, "<none>" from kubectl, "undefined" from
// JavaScript. Asked about, an API answers 404 for them, which would read as Gone.
var placeholderValues = map[string]bool{
	"none": true, "null": true, "nil": true, "<nil>": true, "<none>": true, "<null>": true, "<no value>": true,
	"undefined": true, "pending": true, "unknown": true, "n/a": true, "nan": true, "-": true, `""`: true, "''": true,
}

// isPlaceholder reports whether a value stands for a missing one: blank, or one of the
// placeholders above in any case. A template value or an identity value that is a
// placeholder is treated like a missing value: no request is made.
func isPlaceholder(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || placeholderValues[strings.ToLower(v)]
}

// renderAll renders with the same escape everywhere.
func (t *Template) renderAll(obj map[string]any, identity map[string]string, escape escapeFunc) (string, error) {
	return t.render(obj, identity, func(int) escapeFunc { return escape })
}

func (p *part) value(obj map[string]any, identity map[string]string) (string, error) {
	if p.identity != "" {
		v, ok := identity[p.identity]
		if !ok {
			return "", errors.New("the object has no such identity value")
		}
		return v, nil
	}
	results, err := p.expr.FindResults(obj)
	if err != nil {
		return "", fmt.Errorf("resolves to nothing: %w", err)
	}
	var values []reflect.Value
	for _, r := range results {
		values = append(values, r...)
	}
	switch len(values) {
	case 0:
		return "", errors.New("resolves to nothing")
	case 1:
	default:
		return "", fmt.Errorf("resolves to %d values, not one", len(values))
	}
	v := values[0]
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", errors.New("resolves to null")
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return fmt.Sprint(v.Interface()), nil
	}
	return "", fmt.Errorf("resolves to a %s, not a single value", v.Kind())
}

// Validators for where a value lands. Each is an allow-list: a value is checked as it is,
// never trimmed, lower-cased or otherwise normalized, against what may stand there; what
// it refuses makes the request impossible, and the verdict Unknown, with the reason. A
// value that would need escaping names something else than what it says: an instance
// "i-123 " sent as /instances/i-123%20 is answered 404, which reads as Gone while i-123
// exists. Where a value is escaped (a query value, a header, a body), escaping keeps it
// what it is.
var (
	// pathSegment accepts a value that is a URL path segment, or part of one, as it is:
	// nothing in it would need escaping (url.PathEscape leaves it as it is: ASCII letters,
	// digits and "-._~$&+:=@"), and it is not "." or "..", which climb the path.
	pathSegment escapeFunc = func(v string) (string, error) {
		if v == "." || v == ".." {
			return "", fmt.Errorf("%q cannot be a URL path segment as it is: it would climb the path", v)
		}
		if bad, ok := needsEscaping(v); ok {
			hint := ""
			if bad == '/' {
				hint = " (a value that is a path is declared in the rule's pathValues)"
			}
			return "", fmt.Errorf("%q cannot be a URL path segment as it is: it holds %s, which would need escaping%s", v, describe(bad), hint)
		}
		return v, nil
	}
	// pathValue accepts a value the rule declares a path (pathValues): segments separated
	// by '/', each a pathSegment, none empty, so the value never starts or ends with '/'
	// or holds "//".
	pathValue escapeFunc = func(v string) (string, error) {
		for _, seg := range strings.Split(v, "/") {
			switch seg {
			case "":
				return "", fmt.Errorf("%q cannot be a URL path as it is: it has an empty segment (a '/' at its start or end, or \"//\")", v)
			case ".", "..":
				return "", fmt.Errorf("%q cannot be a URL path as it is: segment %q climbs the path", v, seg)
			}
			if bad, ok := needsEscaping(seg); ok {
				return "", fmt.Errorf("%q cannot be a URL path as it is: it holds %s, which would need escaping", v, describe(bad))
			}
		}
		return v, nil
	}
	// queryValue escapes a value of a URL query; a control character is refused.
	queryValue escapeFunc = func(v string) (string, error) {
		if bad, ok := controlCharacter(v); ok {
			return "", fmt.Errorf("%q cannot be a query value: it holds %s", v, describe(bad))
		}
		return url.QueryEscape(v), nil
	}
	// headerValue refuses line breaks, which would start another header.
	headerValue escapeFunc = func(v string) (string, error) {
		if strings.ContainsAny(v, "\r\n\x00") {
			return "", errors.New("refusing a value with a line break as a header value")
		}
		return v, nil
	}
	// jsonString escapes a value as the content of a JSON string.
	jsonString escapeFunc = func(v string) (string, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		return string(b[1 : len(b)-1]), nil
	}
	// objectName accepts only what may stand in a request path as a Kubernetes object's
	// name, or a part of one; the whole name is checked against its type's rules
	// (nameRuleFor) when the type is known.
	objectName escapeFunc = func(v string) (string, error) {
		if msgs := content.IsPathSegmentName(v); len(msgs) > 0 {
			return "", fmt.Errorf("%q cannot name an object: %s", v, strings.Join(msgs, "; "))
		}
		return v, nil
	}
	// labelValue accepts only a valid label value, so a value cannot add terms to a
	// selector.
	labelValue escapeFunc = func(v string) (string, error) {
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			return "", fmt.Errorf("%q is not a label value: %s", v, strings.Join(msgs, "; "))
		}
		return v, nil
	}
)

// argument accepts a value of a program's argument: it stays one argument whatever it
// holds, as no shell reads it, but a value that starts the argument and begins with '-'
// would be read as an option ("--rm", "--delete-all"), not as the value, and a control
// character is nothing an identity holds. Both are refused unless allowed; a NUL byte
// cannot be passed at all.
func argument(startsArgument, allowLeadingDash, allowControl bool) escapeFunc {
	return func(v string) (string, error) {
		if strings.ContainsRune(v, 0) {
			return "", errors.New("refusing a value with a NUL byte as an argument")
		}
		if startsArgument && !allowLeadingDash && strings.HasPrefix(v, "-") {
			return "", fmt.Errorf("%q starts an argument with \"-\", which the program would read as an option "+
				"(write the option and the value in one argument, like --id={...}, or set allowLeadingDash)", v)
		}
		if bad, ok := controlCharacter(v); ok && !allowControl {
			return "", fmt.Errorf("%q holds %s, which an argument does not carry (allowControlCharacters allows it)", v, describe(bad))
		}
		return v, nil
	}
}

// needsEscaping returns the first character of v that a URL path segment cannot hold
// as it is.
func needsEscaping(v string) (rune, bool) {
	for _, r := range v {
		if s := string(r); url.PathEscape(s) != s {
			return r, true
		}
	}
	return 0, false
}

// controlCharacter returns the first control character of v (C0, DEL, C1), or
// utf8.RuneError for a byte that is not UTF-8.
func controlCharacter(v string) (rune, bool) {
	for i, r := range v {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(v[i:]); size == 1 {
				return r, true
			}
		}
		if unicode.IsControl(r) {
			return r, true
		}
	}
	return 0, false
}

// describe names a character for evidence.
func describe(r rune) string {
	switch {
	case r == ' ':
		return "a space"
	case r == utf8.RuneError:
		return "a byte that is not UTF-8"
	case unicode.IsControl(r):
		return fmt.Sprintf("a control character (U+%04X)", r)
	case unicode.IsSpace(r):
		return fmt.Sprintf("white space (U+%04X)", r)
	}
	return fmt.Sprintf("%q", r)
}
