package provider

import (
	"strings"
	"testing"
)

var object = map[string]any{
	"metadata": map[string]any{
		"name": "db-1", "namespace": "team-a",
		"annotations": map[string]any{
			"crossplane.io/external-name": "orders-prod",
			"hostile":                     "a/../b?c=d#e%2Fx\nSet-Cookie: y",
			"dots":                        "..",
			"empty":                       "",
			"none":                        "None",
			"nil":                         "<nil>",
			"na":                          "N/A",
			"blank":                       "  ",
			"nonesuch":                    "none-1",
			"spaced":                      "i-123 ",
			"dash":                        "--rm",
			"arn":                         "arn:aws:rds:eu-west-1:123456789012:db:orders",
			"path":                        "projects/p-1/instances/db-1",
			"climb":                       "projects/../admin",
			"tab":                         "a\tb",
			"unicode":                     "café",
			"percent":                     "i%2D1",
			"queryish":                    "a/../b?c=d#e%2Fx Set-Cookie: y&z=1",
		},
	},
	"spec":   map[string]any{"replicas": int64(3), "tags": []any{"a", "b"}, "nested": map[string]any{"x": "y"}},
	"status": map[string]any{"instanceID": "i-123"},
}

func TestTemplates(t *testing.T) {
	tests := []struct {
		name     string
		template string
		escape   escapeFunc
		want     string
		wantErr  string
	}{
		{"plain text", "no values here", pathSegment, "no values here", ""},
		{"one value", "/v1/instances/{.status.instanceID}", pathSegment, "/v1/instances/i-123", ""},
		{"annotation with dots", "{.metadata.annotations['crossplane\\.io/external-name']}", pathSegment, "orders-prod", ""},
		{"a number", "{.spec.replicas}", pathSegment, "3", ""},
		{"identity", "{identity.arn}", pathSegment, "arn:aws:rds:db", ""},
		{"json braces are text", `{"id": "{.status.instanceID}"}`, jsonString, `{"id": "i-123"}`, ""},
		{"hostile path segment", "{.metadata.annotations.hostile}", pathSegment, "", `"a/../b?c=d#e%2Fx\nSet-Cookie: y" cannot be a URL path segment as it is: it holds '/', which would need escaping (a value that is a path is declared in the rule's pathValues)`},
		{"a trailing space in a path segment", "/v1/{.metadata.annotations.spaced}", pathSegment, "", `"i-123 " cannot be a URL path segment as it is: it holds a space`},
		{"a percent in a path segment", "{.metadata.annotations.percent}", pathSegment, "", `it holds '%'`},
		{"not ASCII in a path segment", "{.metadata.annotations.unicode}", pathSegment, "", `"café" cannot be a URL path segment as it is: it holds 'é'`},
		{"an ARN is a path segment as it is", "/v1/{.metadata.annotations.arn}", pathSegment, "/v1/arn:aws:rds:eu-west-1:123456789012:db:orders", ""},
		{"a declared path", "{.metadata.annotations.path}", pathValue, "projects/p-1/instances/db-1", ""},
		{"a declared path that climbs", "{.metadata.annotations.climb}", pathValue, "", `"projects/../admin" cannot be a URL path as it is: segment ".." climbs the path`},
		{"a declared path with a space", "{.metadata.annotations.spaced}", pathValue, "", `it holds a space`},
		{"a declared path of one segment", "{.status.instanceID}", pathValue, "i-123", ""},
		{"hostile query value", "{.metadata.annotations.hostile}", queryValue, "", `cannot be a query value: it holds a control character (U+000A)`},
		{"query value", "{.metadata.annotations.unicode} {.metadata.annotations.spaced}", queryValue, "caf%C3%A9 i-123+", ""},
		{"hostile argument", "{.metadata.annotations.hostile}", argument(true, false, false), "", `holds a control character (U+000A), which an argument does not carry`},
		{"hostile argument allowed stays whole", "{.metadata.annotations.hostile}", argument(true, false, true), "a/../b?c=d#e%2Fx\nSet-Cookie: y", ""},
		{"an option", "{.metadata.annotations.dash}", argument(true, false, false), "", `"--rm" starts an argument with "-", which the program would read as an option`},
		{"an option allowed", "{.metadata.annotations.dash}", argument(true, true, false), "--rm", ""},
		{"a dash after literal text", "--id={.metadata.annotations.dash}", argument(false, false, false), "--id=--rm", ""},
		{"a tab", "{.metadata.annotations.tab}", argument(false, false, false), "", "holds a control character (U+0009)"},
		{"hostile header", "{.metadata.annotations.hostile}", headerValue, "", "line break"},
		{"hostile json", "{.metadata.annotations.hostile}", jsonString, `a/../b?c=d#e%2Fx\nSet-Cookie: y`, ""},
		{"dot dot segment", "{.metadata.annotations.dots}", pathSegment, "", `".." cannot be a URL path segment as it is: it would climb the path`},
		{"missing", "{.status.missing}", pathSegment, "", "resolves to nothing"},
		{"empty", "{.metadata.annotations.empty}", pathSegment, "", "resolves to an empty value"},
		{"a list", "{.spec.tags[*]}", pathSegment, "", "resolves to 2 values, not one"},
		{"a map", "{.spec.nested}", pathSegment, "", "not a single value"},
		{"missing identity", "{identity.region}", pathSegment, "", "no such identity value"},
		{"None", "{.metadata.annotations.none}", pathSegment, "", `{.metadata.annotations.none}: resolves to "None", a placeholder, not a value`},
		{"<nil> in a header", "{.metadata.annotations.nil}", headerValue, "", `resolves to "<nil>", a placeholder`},
		{"N/A in a query", "{.metadata.annotations.na}", queryValue, "", `resolves to "N/A", a placeholder`},
		{"blank", "{.metadata.annotations.blank}", argument(true, false, false), "", `resolves to "  ", a placeholder`},
		{"a placeholder identity", "{identity.pending}", objectName, "", `{identity.pending}: resolves to "PENDING", a placeholder`},
		{"a value that only starts like one", "{.metadata.annotations.nonesuch}", pathSegment, "none-1", ""},
		{"object name", "{.metadata.annotations.hostile}", objectName, "", "cannot name an object"},
		{"label value", "{.metadata.annotations.hostile}", labelValue, "", "is not a label value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, err := ParseTemplate(tt.template)
			if err != nil {
				t.Fatal(err)
			}
			// An escape that depends on where the value lands (argument) is given as if the
			// template's first value started it.
			got, err := tpl.renderAll(object, map[string]string{"arn": "arn:aws:rds:db", "pending": "PENDING"}, tt.escape)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestPlaceholders(t *testing.T) {
	for _, v := range []string{"", " ", "\t", "None", "NONE", "null", "Null", "nil", "<nil>", "<none>", "<no value>", "undefined", "pending", "Unknown", "N/A", "n/a", "-", " - ", `""`, "NaN"} {
		if !isPlaceholder(v) {
			t.Errorf("%q: want a placeholder", v)
		}
	}
	for _, v := range []string{"i-123", "none-1", "nullable", "0", "--", "unknown-host", "pending-db"} {
		if isPlaceholder(v) {
			t.Errorf("%q is a value, not a placeholder", v)
		}
	}
}

func TestTemplateSyntax(t *testing.T) {
	for _, bad := range []string{"{.status.id", "{.items[?(@.x==\"}\")]", "{identity.}", "{identity.a.b}", "{.a[}"} {
		if _, err := ParseTemplate(bad); err == nil {
			t.Errorf("%q: want a syntax error", bad)
		}
	}
	if _, err := ParseTemplate(`{.items[?(@.name=="a}b")].x}`); err != nil {
		t.Errorf("a brace inside quotes: %v", err)
	}
}

func TestURLTemplates(t *testing.T) {
	tests := []struct {
		url, wantErr string
	}{
		{"https://api.example.com/v1/{.status.instanceID}?region={.metadata.namespace}", ""},
		{"http://api.example.com:8080/v1/{.status.instanceID}", ""},
		{"https://{.spec.host}/v1", "the scheme, host and port are fixed"},
		{"https://api.example.com{.spec.path}", "the scheme, host and port are fixed"},
		{"https://api.example.com:{.spec.port}/x", "the scheme, host and port are fixed"},
		{"https://user:pass@api.example.com/x", "credentials do not belong in the URL"},
		{"https://api.example.com/x#{.status.id}", "fragment"},
		{"ftp://api.example.com/x", "the scheme must be https or http"},
		{"/relative/{.status.id}", "the scheme must be https or http"},
	}
	for _, tt := range tests {
		_, err := parseURLTemplate(tt.url)
		if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: %v, want %q", tt.url, err, tt.wantErr)
		}
	}
	u, _ := parseURLTemplate("https://api.example.com/v1/{.metadata.annotations.hostile}/x?id={.metadata.annotations.hostile}&n={.metadata.name}")
	if got, err := u.Render(object, nil); err == nil || !strings.Contains(err.Error(), "cannot be a URL path segment as it is") {
		t.Errorf("a hostile value in the path: got %q, %v", got, err)
	}
	u, _ = parseURLTemplate("https://api.example.com/v1/{.metadata.annotations.path}/x-{.status.instanceID}?id={.metadata.annotations.unicode}&p={.metadata.annotations.path}")
	got, err := u.Render(object, nil)
	if err == nil || !strings.Contains(err.Error(), "it holds '/'") {
		t.Errorf("an undeclared path: got %q, %v", got, err)
	}
	for _, bad := range []string{"{.metadata.annotations.missing}", "{.metadata.annotations.path}x", "{.metadata.annotations.unicode}"} {
		if err := u.DeclarePaths([]string{bad}); err == nil {
			t.Errorf("declaring %s: want an error", bad)
		}
	}
	if err := u.DeclarePaths([]string{"{.metadata.annotations.path}"}); err != nil {
		t.Fatal(err)
	}
	want := "https://api.example.com/v1/projects/p-1/instances/db-1/x-i-123?id=caf%C3%A9&p=projects%2Fp-1%2Finstances%2Fdb-1"
	if got, err = u.Render(object, nil); err != nil || got != want {
		t.Errorf("render\n got %s %v\nwant %s", got, err, want)
	}
}
