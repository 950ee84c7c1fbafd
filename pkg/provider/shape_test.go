package provider

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// answer writes a response of a media type, a Server and a body.
func answer(code int, contentType, server, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		if server != "" {
			w.Header().Set("Server", server)
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

// TestHTTPAGoneIsTheAPIsOwnAnswer: a status in gone counts only from an answer of the
// shape the rule establishes: JSON where it reads a field (and a field that does not say
// live), what its goneResponse declares. Every Gone carries its shape, for the verifier
// to compare with the controls' Present answers.
func TestHTTPAGoneIsTheAPIsOwnAnswer(t *testing.T) {
	const html = `<html><body><h1>404 Not Found</h1><hr>nginx</body></html>`
	response := func(s *finalizev1alpha1.HTTPProvider) {
		s.Response = &finalizev1alpha1.HTTPResponse{JSONPath: "{.state}", Gone: []string{"deleted"}}
	}
	declared := func(g finalizev1alpha1.HTTPGoneResponse) func(*finalizev1alpha1.HTTPProvider) {
		return func(s *finalizev1alpha1.HTTPProvider) { response(s); s.GoneResponse = &g }
	}
	gone, unknown := finalizev1alpha1.VerdictGone, finalizev1alpha1.VerdictUnknown
	tests := []struct {
		name    string
		handler http.HandlerFunc
		spec    func(*finalizev1alpha1.HTTPProvider)
		want    finalizev1alpha1.Verdict
		says    string
		shape   string
	}{
		{"a JSON 404", answer(404, "application/json; charset=utf-8", "api", `{"error":{"code":"NotFound"}}`), response, gone, ": 404 Not Found", `application/json from Server "api"`},
		{"a problem+json 404", answer(404, "Application/Problem+JSON", "", `{"title":"Not Found"}`), response, gone, ": 404 Not Found", `application/problem+json, without a Server header`},
		{"a 404 whose field says gone", answer(404, "application/json", "api", `{"state":"deleted"}`), response, gone, ": 404 Not Found", ""},
		{"a proxy's HTML 404", answer(404, "text/html", "nginx", html), response, unknown,
			`404 Not Found: not the API's own answer: the rule reads {.state} of a JSON body, and this answer is text/html from Server "nginx"`, ""},
		{"an empty 404", answer(404, "", "api", ""), response, unknown, "this answer is an empty body without a Content-Type", ""},
		{"an empty 404 that says JSON", answer(404, "application/json", "api", ""), response, unknown, "this answer is an empty application/json body", ""},
		{"a 404 that says JSON and is not", answer(404, "application/json", "api", html), response, unknown, "this answer is application/json that is not JSON", ""},
		{"JSON said to be text", answer(404, "text/plain", "api", `{"error":"not found"}`), response, unknown, "this answer is text/plain", ""},
		{"a 404 whose field says live", answer(404, "application/json", "api", `{"state":"available"}`), response, unknown,
			`404 Not Found, but {.state} = "available", which is not one of response.gone: the answer contradicts itself`, ""},
		{"a 410 whose field says live", answer(410, "application/json", "api", `{"state":"available"}`), response, unknown, "contradicts itself", ""},
		{"a declared empty 404", answer(404, "", "api", ""), declared(finalizev1alpha1.HTTPGoneResponse{EmptyBody: true}), gone, ": 404 Not Found", ""},
		{"a declared empty 404 with a page", answer(404, "text/html", "nginx", html), declared(finalizev1alpha1.HTTPGoneResponse{EmptyBody: true}), unknown,
			`not the API's own answer: the rule's goneResponse says an empty body, and this answer is text/html from Server "nginx"`, ""},
		{"a declared text 404", answer(404, "text/plain; charset=utf-8", "api", "instance not found"), declared(finalizev1alpha1.HTTPGoneResponse{MediaType: "Text/Plain"}), gone, ": 404 Not Found", ""},
		{"a declared text 404, empty", answer(404, "text/plain", "api", ""), declared(finalizev1alpha1.HTTPGoneResponse{MediaType: "text/plain"}), unknown,
			"the rule's goneResponse says a text/plain body, and this answer is an empty text/plain body", ""},
		{"a declared text 404, HTML", answer(404, "text/html", "api", html), declared(finalizev1alpha1.HTTPGoneResponse{MediaType: "text/plain"}), unknown,
			"the rule's goneResponse says a text/plain body, and this answer is text/html", ""},
		{"without a field, an HTML 404 is left to the controls", answer(404, "text/html", "nginx", html), nil, gone, ": 404 Not Found", `text/html from Server "nginx"`},
		{"a Present carries its shape", answer(200, "application/json", "api", `{"state":"available"}`), response, finalizev1alpha1.VerdictPresent, `"available"`, `application/json from Server "api"`},
		{"a Gone by field carries its shape", answer(200, "application/json", "api", `{"state":"deleted"}`), response, gone, `"deleted"`, `application/json from Server "api"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCloud(t, tt.handler)
			spec := c.spec("/v1/instances/{.status.instanceID}")
			if tt.spec != nil {
				tt.spec(spec)
			}
			a := ask(t, spec, Options{})
			if a.Verdict != tt.want || !strings.Contains(a.Evidence, tt.says) {
				t.Errorf("got %s: %s; want %s saying %q", a.Verdict, a.Evidence, tt.want, tt.says)
			}
			if a.Verdict != finalizev1alpha1.VerdictUnknown && (a.Shape == nil || !strings.Contains(a.Shape.String(), tt.shape)) {
				t.Errorf("shape %v, want %q", a.Shape, tt.shape)
			}
		})
	}
}

// TestGoneShapeMismatch: a Gone counts only in the shape of the controls' Present
// answers (media type family and Server), or, with none, as JSON; a goneResponse the
// rule declares replaces the media type, never the Server.
func TestGoneShapeMismatch(t *testing.T) {
	apiJSON := Shape{MediaType: "application/json", Server: "api", HasServer: true, body: bodyUnread}
	gone := func(mt, server string, body body) Shape {
		return Shape{MediaType: mt, Server: server, HasServer: server != "", body: body}
	}
	declared := func(s Shape) Shape { s.Declared = true; return s }
	for _, tt := range []struct {
		name    string
		gone    Shape
		present []Shape
		want    string
	}{
		{"the API's JSON 404", gone("application/json", "api", bodyJSON), []Shape{apiJSON, apiJSON}, ""},
		{"problem+json is JSON too", gone("application/problem+json", "api", bodyJSON), []Shape{apiJSON}, ""},
		{"a proxy's page", gone("text/html", "nginx", bodyOther), []Shape{apiJSON},
			`text/html from Server "nginx", while its controls' Present answers were application/json from Server "api"`},
		{"an empty 404", gone("", "api", bodyEmpty), []Shape{apiJSON}, `an empty body without a Content-Type from Server "api", while`},
		{"JSON that is not", gone("application/json", "api", bodyEmpty), []Shape{apiJSON}, "an empty application/json body"},
		{"another Server", gone("application/json", "envoy", bodyJSON), []Shape{apiJSON}, `application/json from Server "envoy", while`},
		{"no Server where the controls had one", gone("application/json", "", bodyJSON), []Shape{apiJSON}, "application/json, without a Server header, while"},
		{"a Server where the controls had none", gone("application/json", "api", bodyJSON), []Shape{gone("application/json", "", bodyUnread)}, "while its controls' Present answers were application/json, without a Server header"},
		{"the same text API", gone("text/plain", "api", bodyOther), []Shape{gone("text/plain", "api", bodyUnread)}, ""},
		{"declared: the media type is the rule's", declared(gone("", "api", bodyEmpty)), []Shape{apiJSON}, ""},
		{"declared: the Server still counts", declared(gone("", "nginx", bodyEmpty)), []Shape{apiJSON}, `from Server "nginx", while`},
		{"controls that disagree establish nothing", gone("application/json", "api", bodyJSON), []Shape{apiJSON, gone("text/html", "nginx", bodyUnread)},
			"its controls' Present answers came in 2 shapes"},
		{"no control: JSON", gone("application/json", "api", bodyJSON), nil, ""},
		{"no control: a HEAD answer of a JSON API", gone("application/json", "api", bodyNone), nil, ""},
		{"no control: anything else", gone("text/plain", "api", bodyOther), nil,
			"no control's Present answer established another shape: a Gone needs a JSON body with a JSON media type, or a goneResponse"},
		{"no control: declared", declared(gone("text/plain", "api", bodyOther)), nil, ""},
	} {
		got := GoneShapeMismatch(tt.gone, tt.present)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestHTTPAnEchoedCredentialIsNotCutIntoTheEvidence: an API that echoes the request's
// token in the field the rule reads, in a 404 that therefore contradicts itself, has
// that field quoted in the evidence, cut to 64 bytes. The token is redacted before the
// cut: cut first, its first 64 bytes were no longer the registered value, and showed.
func TestHTTPAnEchoedCredentialIsNotCutIntoTheEvidence(t *testing.T) {
	token := "eyJhbGciOiJSUzI1NiJ9." + strings.Repeat("c2VjcmV0LXBheWxvYWQ", 5) + ".sig"
	t.Setenv("KF_TEST_ECHOED_TOKEN", token)
	c := newCloud(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]string{"state": strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")})
	})
	spec := c.spec("/v1/instances/{.status.instanceID}")
	spec.Response = &finalizev1alpha1.HTTPResponse{JSONPath: "{.state}", Gone: []string{"deleted"}}
	spec.Headers = []finalizev1alpha1.Header{{Name: "Authorization", ValueFrom: &finalizev1alpha1.ValueSource{Env: "KF_TEST_ECHOED_TOKEN", Prefix: "Bearer "}}}
	a := ask(t, spec, Options{})
	if a.Verdict != finalizev1alpha1.VerdictUnknown || !strings.Contains(a.Evidence, "contradicts itself") {
		t.Fatalf("got %s: %s", a.Verdict, a.Evidence)
	}
	if strings.Contains(a.Evidence, token[:32]) {
		t.Errorf("the token's start is in the evidence: %s", a.Evidence)
	}
}
