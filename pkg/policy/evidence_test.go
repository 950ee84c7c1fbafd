package policy

import (
	"strings"
	"testing"
)

// TestTheFieldsOfAnIdentitysEvidence: pathValues name expressions of the URL's path;
// goneResponse says something, with a media type without parameters; allowLeadingDash
// is warned about.
func TestTheFieldsOfAnIdentitysEvidence(t *testing.T) {
	rule := func(verify string) string {
		return header + "rules:\n- name: r\n  finalizers: [a.example.com/x]\n  resources: [configmaps]\n  verify:\n" + verify
	}
	for _, tt := range []struct {
		name, doc string
		want      []string // errors; none: valid
		warning   string
	}{
		{"valid", rule(`    http: {url: "https://x/v1/{.status.path}/status?id={.status.id}", pathValues: ["{.status.path}"], goneResponse: {mediaType: Application/Problem+JSON, emptyBody: true}}
`), nil, ""},
		{"a path value not in the URL", rule(`    http: {url: "https://x/v1/{.status.path}", pathValues: ["{.status.other}", "{.status.path}"]}
`), []string{`rules[0].verify.http.pathValues[0]: Invalid value: "{.status.other}": {.status.other} is not an expression of the URL: pathValues name expressions of the url's path, as written there`}, ""},
		{"a path value in the query", rule(`    http: {url: "https://x/v1?id={.status.id}", pathValues: ["{.status.id}"]}
`), []string{`pathValues[0]: Invalid value: "{.status.id}": {.status.id} is in the URL's query, not its path`}, ""},
		{"an empty goneResponse", rule(`    http: {url: "https://x/y", goneResponse: {}}
`), []string{"rules[0].verify.http.goneResponse: Required value: say what the API's Gone answers look like: mediaType, emptyBody: true, or both"}, ""},
		{"a media type with parameters", rule(`    http: {url: "https://x/y", goneResponse: {mediaType: "text/plain; charset=utf-8"}}
`), []string{`goneResponse.mediaType: Invalid value: "text/plain; charset=utf-8": a media type without parameters`}, ""},
		{"not a media type", rule(`    http: {url: "https://x/y", goneResponse: {mediaType: json}}
`), []string{`goneResponse.mediaType: Invalid value: "json"`}, ""},
		{"a leading dash allowed", rule(`    exec: {command: [x, "{.status.id}"], allowLeadingDash: true, allowControlCharacters: true}
`), nil, `rules[0].verify.exec.allowLeadingDash: allowLeadingDash is true: a value an object holds ("--rm") can become an option of the program`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec, errs := Decode([]byte(tt.doc))
			var warnings []string
			if spec != nil {
				_, more, w := Compile(spec)
				errs, warnings = append(errs, more...), w
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			joined := strings.Join(got, "\n")
			if len(tt.want) == 0 && joined != "" {
				t.Errorf("errors:\n%s", joined)
			}
			for _, w := range tt.want {
				if !strings.Contains(joined, w) {
					t.Errorf("errors:\n%s\nwant one with %q", joined, w)
				}
			}
			if tt.warning != "" && !strings.Contains(strings.Join(warnings, "\n"), tt.warning) {
				t.Errorf("warnings %q, want %q", warnings, tt.warning)
			}
		})
	}
}
