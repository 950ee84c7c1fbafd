package client

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
)

// RegisterCredentials registers with the redactor the credentials of a client
// configuration read from a kubeconfig, so that they are shown nowhere: its bearer token,
// the token in its token file, its password and its client key. A token an exec
// credential plugin or an auth provider returns is only known when a request carries it,
// and a token file may be rotated: cfg's transport is wrapped so that the credential of
// every request's Authorization header is registered before the request is sent. client-go
// applies WrapTransport inside the wrappers that set that header (bearer and basic auth,
// exec plugins, auth providers), so the header is there when it is read. A credential
// shorter than redact.MinLength is refused: no credential is that short.
func RegisterCredentials(cfg *rest.Config) error {
	for _, c := range []struct{ what, value string }{{"token", cfg.BearerToken}, {"password", cfg.Password}} {
		if c.value == "" {
			continue
		}
		if err := redact.Register(c.value); err != nil {
			return fmt.Errorf("the kubeconfig's %s %w", c.what, err)
		}
	}
	// client-go says itself when the file cannot be read.
	if b, err := readIf(cfg.BearerTokenFile); err == nil && strings.TrimSpace(string(b)) != "" {
		if err := redact.Register(strings.TrimSpace(string(b))); err != nil {
			return fmt.Errorf("the kubeconfig's token file %s %w", cfg.BearerTokenFile, err)
		}
	}
	key := cfg.KeyData
	if b, err := readIf(cfg.KeyFile); err == nil {
		key = b
	}
	if k := strings.TrimSpace(string(key)); redact.Long(k) {
		_ = redact.Register(k) // long enough: it cannot fail
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &registerAuthorization{next: rt} })
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &registerSecrets{next: rt} })
	return nil
}

// secretsPath matches the paths of Secrets: a list, of a namespace or of all, and one.
var secretsPath = regexp.MustCompile(`^/api/v1/(namespaces/[^/]+/)?secrets(/[^/]+)?$`)

// registerSecrets registers with the redactor the values of every Secret a response
// carries (one read, a list, the answer of a patch) before the response is handed on:
// client-go logs response bodies at -v=8 and up after this transport, and reports,
// audit lines, Events and backups see them later still. A value shorter than
// redact.MinLength is no credential, and is not registered. Watches stream, and are
// left alone (nothing here watches Secrets).
type registerSecrets struct {
	next http.RoundTripper
}

func (r *registerSecrets) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil || !secretsPath.MatchString(req.URL.Path) || req.URL.Query().Get("watch") != "" {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the answer about Secrets: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	// JSON or protobuf, an object or a list; anything else (a Status, metadata only,
	// what does not decode) holds no value.
	var secrets []corev1.Secret
	if obj, _, err := kubescheme.Codecs.UniversalDeserializer().Decode(body, nil, nil); err == nil {
		switch o := obj.(type) {
		case *corev1.Secret:
			secrets = append(secrets, *o)
		case *corev1.SecretList:
			secrets = o.Items
		}
	}
	for _, s := range secrets {
		for _, v := range s.Data {
			if redact.Long(string(v)) {
				_ = redact.Register(string(v)) // long enough: it cannot fail
			}
		}
		for _, v := range s.StringData {
			if redact.Long(v) {
				_ = redact.Register(v)
			}
		}
	}
	return resp, nil
}

// readIf reads the file at path, if path names one.
func readIf(path string) ([]byte, error) {
	if path == "" {
		return nil, os.ErrNotExist
	}
	return os.ReadFile(path) //nolint:gosec // the kubeconfig names the file
}

// registerAuthorization registers the credential of each request's Authorization header
// (after its scheme), and for basic auth the password, before sending the request.
type registerAuthorization struct {
	next http.RoundTripper
}

func (r *registerAuthorization) RoundTrip(req *http.Request) (*http.Response, error) {
	if h := req.Header.Get("Authorization"); h != "" {
		scheme, credential, ok := strings.Cut(h, " ")
		if !ok {
			scheme, credential = "", h
		}
		credential = strings.TrimSpace(credential)
		if err := redact.Register(credential); err != nil {
			return nil, fmt.Errorf("the credential the kubeconfig gives (Authorization: %s ...) %w", scheme, err)
		}
		if strings.EqualFold(scheme, "Basic") {
			if b, err := base64.StdEncoding.DecodeString(credential); err == nil {
				if _, password, ok := strings.Cut(string(b), ":"); ok && redact.Long(password) {
					_ = redact.Register(password) // long enough: it cannot fail
				}
			}
		}
	}
	return r.next.RoundTrip(req)
}
