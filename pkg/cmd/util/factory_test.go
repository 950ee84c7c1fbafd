package util

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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

// TestContexts: --context more than once, --all-contexts and --context-selector choose
// the clusters; ForContext reads another one with the same flags; a second --context is
// refused by anything that builds one cluster's clients.
func TestContexts(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	cfg := clientcmdapi.NewConfig()
	for i, name := range []string{"a", "b", "prod-x"} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: fmt.Sprintf("https://127.0.0.%d:6443", i+1)}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "unit-contexts-token"} // a credential: at least redact.MinLength bytes
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	cfg.CurrentContext = "a"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) *ConfigFactory {
		f := NewFactory()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		f.AddFlags(fs)
		if err := fs.Parse(append([]string{"--kubeconfig", kubeconfig}, args...)); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tt := range []struct {
		args     []string
		all      bool
		selector string
		want     []string
		wantErr  string
	}{
		{args: nil, want: nil},
		{args: []string{"--context", "b"}, want: []string{"b"}},
		{args: []string{"--context", "b", "--context", "a", "--context", "b"}, want: []string{"b", "a"}},
		{all: true, want: []string{"a", "b", "prod-x"}},
		{selector: "prod-*", want: []string{"prod-x"}},
		{selector: "nope-*", wantErr: `no context of the kubeconfig matches --context-selector "nope-*"`},
		{args: []string{"--context", "a", "--context", "zz"}, wantErr: `context "zz" is not in the kubeconfig`},
		{args: []string{"--context", "a"}, all: true, wantErr: "--context and --all-contexts/--context-selector cannot be used together"},
		{args: []string{"--server", "https://x"}, all: true, wantErr: "--server overrides one context"},
	} {
		got, err := parse(tt.args...).Contexts(tt.all, tt.selector)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v all=%v selector=%q: %v, want %q", tt.args, tt.all, tt.selector, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("%v all=%v selector=%q: %v %v, want %v", tt.args, tt.all, tt.selector, got, err, tt.want)
		}
	}
	f := parse("--context", "a", "--context", "b")
	if _, err := f.RESTConfig(); err == nil || !strings.Contains(err.Error(), "--context was given 2 times") {
		t.Errorf("one cluster's clients with two contexts: %v", err)
	}
	rc, err := f.ForContext("prod-x").(*ConfigFactory).RESTConfig()
	if err != nil || rc.Host != "https://127.0.0.3:6443" || rc.QPS != defaultQPS {
		t.Errorf("ForContext: %+v %v", rc, err)
	}
	if rc, err := parse("--context", "b").RESTConfig(); err != nil || rc.Host != "https://127.0.0.2:6443" {
		t.Errorf("one --context: %v", err)
	}
}
