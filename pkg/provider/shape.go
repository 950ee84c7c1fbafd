package provider

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// Shape is what an http response looked like: evidence of who answered. A 404 counts as
// the API's Gone only in the shape of the API's own answers: a proxy's HTML page, an
// empty body where the API answers JSON, or a 404 from another server is nobody's answer
// about the resource.
type Shape struct {
	// MediaType is the response's Content-Type without parameters, in lower case (RFC
	// 9110 compares media types case-insensitively); "" when it had none.
	MediaType string
	// Server is its Server header, where HasServer says it had one: an absent Server is a
	// value of its own.
	Server    string
	HasServer bool
	// body is what its body was, where it was read.
	body body
	// Declared: the rule's goneResponse says what its Gone answers look like, and this
	// one does: its media type and body are not compared with the controls' answers.
	Declared bool
}

// body is what a response's body was.
type body int

// What a body was.
const (
	// bodyUnread: a Present answer whose body the rule does not read.
	bodyUnread body = iota
	// bodyNone: the answer to a HEAD request, which has none.
	bodyNone
	bodyEmpty
	// bodyJSON parsed as one JSON value (at most MaxResponseBytes of it).
	bodyJSON
	// bodyOther is neither empty nor JSON.
	bodyOther
)

// shapeOf reads the shape of resp from its headers; the body is read, if at all, later.
func shapeOf(resp *http.Response, method string) Shape {
	s := Shape{MediaType: mediaType(resp.Header.Get("Content-Type"))}
	if v := resp.Header.Values("Server"); len(v) > 0 {
		s.Server, s.HasServer = strings.Join(v, ", "), true
	}
	if method == http.MethodHead {
		s.body = bodyNone
	}
	return s
}

// mediaType is a Content-Type's media type, without parameters, in lower case.
func mediaType(contentType string) string {
	if contentType == "" {
		return ""
	}
	if mt, _, err := mime.ParseMediaType(contentType); mt != "" && err == nil {
		return mt
	}
	// Not a well-formed media type: compared as written, so it matches only itself.
	before, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(before))
}

// classify says what a body that was read is.
func classify(b []byte) body {
	switch {
	case len(b) == 0:
		return bodyEmpty
	case json.Valid(b):
		return bodyJSON
	}
	return bodyOther
}

// isJSONMediaType reports whether mt (without parameters, in lower case) is JSON:
// application/json, or a type with the +json structured syntax suffix (RFC 6839).
func isJSONMediaType(mt string) bool {
	return mt == "application/json" || (strings.HasSuffix(mt, "+json") && strings.Contains(mt, "/"))
}

// IsJSON reports whether the response was JSON: a JSON media type, and a body that
// parsed as JSON where there was one to read. A JSON media type with an empty or
// unparsable body is not JSON.
func (s Shape) IsJSON() bool {
	return isJSONMediaType(s.MediaType) && (s.body == bodyJSON || s.body == bodyUnread || s.body == bodyNone)
}

// family is what a Gone must share with the controls' Present answers besides the
// Server: JSON, or the media type itself.
func (s Shape) family() string {
	switch {
	case s.IsJSON():
		return "JSON"
	case isJSONMediaType(s.MediaType):
		return s.MediaType + " that is not JSON"
	}
	return s.MediaType
}

// String says what the response looked like: `application/json from Server "api"`,
// `an empty body without a Content-Type, without a Server header`.
func (s Shape) String() string {
	var what string
	switch {
	case s.body == bodyEmpty && s.MediaType == "":
		what = "an empty body without a Content-Type"
	case s.body == bodyEmpty:
		what = "an empty " + s.MediaType + " body"
	case s.MediaType == "" && (s.body == bodyJSON || s.body == bodyOther):
		what = "a body without a Content-Type"
	case s.MediaType == "":
		what = "no Content-Type"
	case s.body == bodyOther && isJSONMediaType(s.MediaType):
		what = s.MediaType + " that is not JSON"
	default:
		what = s.MediaType
	}
	if !s.HasServer {
		return what + ", without a Server header"
	}
	return fmt.Sprintf("%s from Server %q", what, s.Server)
}

// sameServer reports whether two answers came from the same Server, an absent one
// being a value of its own.
func (s Shape) sameServer(o Shape) bool { return s.HasServer == o.HasServer && s.Server == o.Server }

// GoneShapeMismatch says why a Gone in shape gone is not the API's own answer, or "".
// present are the shapes of the Present answers the rule's controls of the same
// resource type gave. A Gone must come:
//
//   - from their Server (an absent Server being a value), whenever they established one;
//   - in their media type family (JSON, or the same media type), unless the rule's
//     goneResponse declared what its Gone answers look like (gone.Declared);
//   - where no control's Present answer established a shape, as JSON (a JSON media type
//     and a body that parses), unless the rule declared its Gone answers.
//
// Controls that answered Present in different shapes establish none: every Gone is
// refused until they agree.
func GoneShapeMismatch(gone Shape, present []Shape) string {
	var distinct []Shape
	for _, p := range present {
		if !slices.ContainsFunc(distinct, func(d Shape) bool { return d.family() == p.family() && d.sameServer(p) }) {
			distinct = append(distinct, p)
		}
	}
	switch {
	case len(distinct) > 1:
		shown := make([]string, len(distinct))
		for i, d := range distinct {
			shown[i] = d.String()
		}
		return fmt.Sprintf("%s, while its controls' Present answers came in %d shapes (%s), so none is established", gone, len(distinct), strings.Join(shown, "; "))
	case len(distinct) == 1:
		p := distinct[0]
		if !gone.sameServer(p) || (!gone.Declared && gone.family() != p.family()) {
			return fmt.Sprintf("%s, while its controls' Present answers were %s", gone, p)
		}
		return ""
	case gone.Declared, gone.IsJSON() && gone.body != bodyUnread:
		return ""
	}
	return fmt.Sprintf("%s, and no control's Present answer established another shape: a Gone needs a JSON body with a JSON media type, or a goneResponse in the rule that says what the API's Gone answers look like", gone)
}

// goneResponseMismatch says why shape s is not what the rule's goneResponse declares,
// or "".
func goneResponseMismatch(g *finalizev1alpha1.HTTPGoneResponse, s Shape) string {
	declared := "a body"
	switch {
	case g.EmptyBody && g.MediaType != "":
		declared = "an empty " + strings.ToLower(g.MediaType) + " body"
	case g.EmptyBody:
		declared = "an empty body"
	case g.MediaType != "":
		declared = "a " + strings.ToLower(g.MediaType) + " body"
	}
	bad := false
	switch {
	case g.MediaType != "" && !strings.EqualFold(g.MediaType, s.MediaType):
		bad = true
	case s.body == bodyNone:
	case g.EmptyBody:
		bad = s.body != bodyEmpty
	case s.body == bodyEmpty:
		bad = true
	case isJSONMediaType(s.MediaType) && s.body != bodyJSON:
		bad = true
	}
	if !bad {
		return ""
	}
	return fmt.Sprintf("the rule's goneResponse says %s, and this answer is %s", declared, s)
}
