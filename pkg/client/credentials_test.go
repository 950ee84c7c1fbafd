package client

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
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

// TestTheValuesOfEverySecretReadAreRegistered: a Secret read as JSON (the dynamic client)
// or protobuf (the typed one), alone or in a list, has its values registered before the
// caller sees the answer; a short value is no credential, and a ConfigMap's values are
// not secrets.
func TestTheValuesOfEverySecretReadAreRegistered(t *testing.T) {
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "prod"},
		Data: map[string][]byte{"password": []byte("unit-secret-json-value"), "port": []byte("5432")}}
	list := &corev1.SecretList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "SecretList"},
		Items: []corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Data: map[string][]byte{"token": []byte("unit-secret-protobuf-value")}}}}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, Data: map[string]string{"k": "unit-configmap-value"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var obj runtime.Object
		switch r.URL.Path {
		case "/api/v1/namespaces/prod/secrets/db":
			obj = secret
		case "/api/v1/namespaces/prod/secrets":
			obj = list
		default:
			obj = cm
		}
		mediaType := "application/json"
		if strings.Contains(r.Header.Get("Accept"), "protobuf") {
			mediaType = "application/vnd.kubernetes.protobuf"
		}
		info, _ := runtime.SerializerInfoForMediaType(kubescheme.Codecs.SupportedMediaTypes(), mediaType)
		w.Header().Set("Content-Type", mediaType)
		_ = kubescheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(obj, w)
	}))
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL}
	if err := RegisterCredentials(cfg); err != nil {
		t.Fatal(err)
	}
	jsonClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	proto := rest.CopyConfig(cfg)
	proto.ContentType = "application/vnd.kubernetes.protobuf"
	protoClient, err := kubernetes.NewForConfig(proto)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jsonClient.CoreV1().Secrets("prod").Get(t.Context(), "db", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := protoClient.CoreV1().Secrets("prod").List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := jsonClient.CoreV1().ConfigMaps("prod").Get(t.Context(), "x", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	for value, registered := range map[string]bool{"unit-secret-json-value": true, "unit-secret-protobuf-value": true, "5432": false, "unit-configmap-value": false} {
		if got := redact.String(value) == redact.Replacement; got != registered {
			t.Errorf("%s: registered %v, want %v", value, got, registered)
		}
	}
}
