package client

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
)

// TestTheKubeconfigsCredentialsAreRegistered: the token, the token file's token and the
// password of a kubeconfig are registered with the redactor when the client is made; a
// token only a request carries (as an exec credential plugin returns it) when the request
// is sent, client-go's auth wrappers having set it before ours reads it. A token too short
// to be one is refused.
func TestTheKubeconfigsCredentialsAreRegistered(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("unit-kubeconfig-file-t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	send := func(cfg *rest.Config) {
		t.Helper()
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	for _, cfg := range []*rest.Config{{Host: srv.URL, BearerToken: "unit-kubeconfig-t0ken"}, {Host: srv.URL, BearerTokenFile: file},
		{Host: srv.URL, Username: "admin", Password: "unit-kubeconfig-passw0rd"}} {
		if err := RegisterCredentials(cfg); err != nil {
			t.Fatal(err)
		}
		send(cfg)
	}
	// A token an exec plugin returns: its wrapper, added when the transport is made,
	// runs before ours.
	plugin := &rest.Config{Host: srv.URL}
	if err := RegisterCredentials(plugin); err != nil {
		t.Fatal(err)
	}
	plugin.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer unit-plugin-t0ken")
			return rt.RoundTrip(r)
		})
	})
	send(plugin)
	if len(got) != 4 {
		t.Fatalf("requests %q", got)
	}
	for _, secret := range []string{"unit-kubeconfig-t0ken", "unit-kubeconfig-file-t0ken", "unit-kubeconfig-passw0rd", "unit-plugin-t0ken"} {
		if shown := redact.String("x " + secret + " y"); shown != "x REDACTED y" {
			t.Errorf("%s is not registered: %s", secret, shown)
		}
	}
	if err := RegisterCredentials(&rest.Config{Host: srv.URL, BearerToken: "t0ken"}); err == nil || !strings.HasPrefix(err.Error(), "the kubeconfig's token is shorter than 8 bytes") {
		t.Errorf("a short token: %v", err)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
