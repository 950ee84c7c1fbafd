package glob

import "testing"

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"db.example.com/finalizer", "db.example.com/finalizer", true},
		{"db.example.com/finalizer", "db.example.com/finalizer2", false},
		{"*.example.com/*", "db.example.com/finalizer", true},
		{"*.example.com/*", "example.com/finalizer", false},
		{"example.com*", "example.com/cleanup", true},
		{"*", "", true},
		{"*", "kubernetes", true},
		{"kubernetes.io/*-protection", "kubernetes.io/pvc-protection", true},
		{"kubernetes.io/*-protection", "kubernetes.io/pvc-protection-x", false},
		{"finalizers.*.services.k8s.aws/*", "finalizers.s3.services.k8s.aws/Bucket", true},
		{"external-attacher/*", "external-attacher/ebs-csi-aws-com", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a?c", "aéc", true},
		{"**a", "bba", true},
		{"prod-*", "prod-eu", true},
		{"prod-*", "staging", false},
	}
	for _, tt := range tests {
		if got := MustCompile(tt.pattern).Match(tt.s); got != tt.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestSet(t *testing.T) {
	if !(Set{}).Match("anything") {
		t.Error("an empty set matches everything")
	}
	s, err := CompileSet([]string{"a/*", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Match("a/x") || !s.Match("b") || s.Match("c") {
		t.Error("set matching is wrong")
	}
	if _, err := CompileSet([]string{"ok", ""}); err == nil || err.Error() != `pattern "": empty pattern` {
		t.Errorf("got %v, want the empty pattern named", err)
	}
}
