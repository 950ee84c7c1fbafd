package owner

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b  string
		limit int
		want  int
	}{
		{"abc", "abc", 2, 0},
		{"abc", "abd", 2, 1},
		{"abc", "acb", 2, 1}, // a swap is one edit
		{"abc", "ab", 2, 1},
		{"abc", "xyz", 2, 3}, // past the limit: limit+1
		{"abcdef", "a", 2, 3},
		{"resource-finalizer.argocd.argoproj.io", "resources-finalizer.argocd.argoproj.io", 2, 1},
	} {
		if got := editDistance(tt.a, tt.b, tt.limit); got != tt.want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.limit, got, tt.want)
		}
	}
}

// TestAFinalizerNobodyRemovesResemblesTheOneItMisspells: a name a catalogued finalizer of
// the same project is one or two edits from is said to resemble it; a catalogued name, a
// name of another project, a short name, or one too far resembles nothing.
func TestAFinalizerNobodyRemovesResemblesTheOneItMisspells(t *testing.T) {
	c := Builtin()
	for _, tt := range []struct {
		finalizer, want string
	}{
		{"resource-finalizer.argocd.argoproj.io", "resources-finalizer.argocd.argoproj.io"},
		{"resources-finaliser.argocd.argoproj.io", "resources-finalizer.argocd.argoproj.io"},
		{"resources-finalizer.argocd.argoproj.io", ""},            // catalogued
		{"resources-finalizer.argocd.argoproj.io/background", ""}, // a glob of the catalogue knows it
		{"resource-finalizer.argocd.example.com", ""},             // another project
		{"resources-finalizer.fluxcd.argoproj.io", ""},            // four edits
		{"kubernetes", ""}, // no domain
	} {
		e, d := c.Resembling(tt.finalizer)
		got := ""
		if e != nil {
			got = e.Finalizer
		}
		if got != tt.want || (e != nil) != (d > 0) {
			t.Errorf("Resembling(%q) = %q, %d; want %q", tt.finalizer, got, d, tt.want)
		}
	}
}
