package words

import "testing"

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 objects"}, {1, "1 object"}, {2, "2 objects"}} {
		if got := Count(tt.n, "object"); got != tt.want {
			t.Errorf("Count(%d): %q, want %q", tt.n, got, tt.want)
		}
	}
	if got := Noun(3, "problem"); got != "problems" {
		t.Errorf("Noun(3): %q", got)
	}
}
