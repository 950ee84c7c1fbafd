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
		},
	},
	"spec":   map[string]any{"replicas": int64(3), "tags": []any{"a", "b"}, "nested": map[string]any{"x": "y"}},
	"status": map[string]any{"instanceID": "i-123"},
}

func TestTemplates(t *testing.T) {
	tests := []struct {
		name     string
		template string
		escape   Escape
		want     string
		wantErr  string
	}{
		{"plain text", "no values here", PathSegment, "no values here", ""},
		{"one value", "/v1/instances/{.status.instanceID}", PathSegment, "/v1/instances/i-123", ""},
		{"annotation with dots", "{.metadata.annotations['crossplane\\.io/external-name']}", PathSegment, "orders-prod", ""},
		{"a number", "{.spec.replicas}", PathSegment, "3", ""},
		{"identity", "{identity.arn}", PathSegment, "arn:aws:rds:db", ""},
		{"json braces are text", `{"id": "{.status.instanceID}"}`, JSONString, `{"id": "i-123"}`, ""},
		{"hostile path segment", "{.metadata.annotations.hostile}", PathSegment, "a%2F..%2Fb%3Fc=d%23e%252Fx%0ASet-Cookie:%20y", ""},
		{"hostile query value", "{.metadata.annotations.hostile}", QueryValue, "a%2F..%2Fb%3Fc%3Dd%23e%252Fx%0ASet-Cookie%3A+y", ""},
		{"hostile argument stays whole", "{.metadata.annotations.hostile}", Argument, "a/../b?c=d#e%2Fx\nSet-Cookie: y", ""},
		{"hostile header", "{.metadata.annotations.hostile}", HeaderValue, "", "line break"},
		{"hostile json", "{.metadata.annotations.hostile}", JSONString, `a/../b?c=d#e%2Fx\nSet-Cookie: y`, ""},
		{"dot dot segment", "{.metadata.annotations.dots}", PathSegment, "", `refusing ".." as a URL path segment`},
		{"missing", "{.status.missing}", PathSegment, "", "resolves to nothing"},
		{"empty", "{.metadata.annotations.empty}", PathSegment, "", "resolves to an empty value"},
		{"a list", "{.spec.tags[*]}", PathSegment, "", "resolves to 2 values, not one"},
		{"a map", "{.spec.nested}", PathSegment, "", "not a single value"},
		{"missing identity", "{identity.region}", PathSegment, "", "no such identity value"},
		{"None", "{.metadata.annotations.none}", PathSegment, "", `{.metadata.annotations.none}: resolves to "None", a placeholder, not a value`},
		{"<nil> in a header", "{.metadata.annotations.nil}", HeaderValue, "", `resolves to "<nil>", a placeholder`},
		{"N/A in a query", "{.metadata.annotations.na}", QueryValue, "", `resolves to "N/A", a placeholder`},
		{"blank", "{.metadata.annotations.blank}", Argument, "", `resolves to "  ", a placeholder`},
		{"a placeholder identity", "{identity.pending}", ObjectName, "", `{identity.pending}: resolves to "PENDING", a placeholder`},
		{"a value that only starts like one", "{.metadata.annotations.nonesuch}", PathSegment, "none-1", ""},
		{"object name", "{.metadata.annotations.hostile}", ObjectName, "", "cannot name an object"},
		{"label value", "{.metadata.annotations.hostile}", LabelValue, "", "is not a label value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, err := ParseTemplate(tt.template)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tpl.RenderAll(object, map[string]string{"arn": "arn:aws:rds:db", "pending": "PENDING"}, tt.escape)
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
		_, err := ParseURLTemplate(tt.url)
		if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: %v, want %q", tt.url, err, tt.wantErr)
		}
	}
	u, _ := ParseURLTemplate("https://api.example.com/v1/{.metadata.annotations.hostile}/x?id={.metadata.annotations.hostile}&n={.metadata.name}")
	got, err := u.Render(object, nil)
	want := "https://api.example.com/v1/a%2F..%2Fb%3Fc=d%23e%252Fx%0ASet-Cookie:%20y/x?id=a%2F..%2Fb%3Fc%3Dd%23e%252Fx%0ASet-Cookie%3A+y&n=db-1"
	if err != nil || got != want {
		t.Errorf("render\n got %s %v\nwant %s", got, err, want)
	}
}
