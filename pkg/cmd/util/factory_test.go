package util

import (
	"strings"
	"testing"
)

// TestRateLimitFlags: 0 would silently mean client-go's 5 per second, so it is refused;
// a negative rate turns the client-side limiter off; a positive one needs a burst.
func TestRateLimitFlags(t *testing.T) {
	for _, tt := range []struct {
		qps     float32
		burst   int
		wantErr string
	}{
		{100, 200, ""},
		{-1, 0, ""},
		{0, 200, "--qps must not be 0"},
		{50, 0, "--burst must be at least 1 when --qps is positive"},
	} {
		f := NewFactory()
		server := "https://127.0.0.1:6443"
		f.ConfigFlags.APIServer = &server
		f.QPS, f.Burst = tt.qps, tt.burst
		cfg, err := f.RESTConfig()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || ExitCode(err) != ExitCode(UsageErrorf(nil, "x")) {
				t.Errorf("qps %v burst %d: %v, want a usage error %q", tt.qps, tt.burst, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("qps %v burst %d: %v", tt.qps, tt.burst, err)
		}
		if cfg.QPS != tt.qps || cfg.Burst != tt.burst {
			t.Errorf("config qps %v burst %d", cfg.QPS, cfg.Burst)
		}
	}
}
