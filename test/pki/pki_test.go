package pki

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestACAsCertificatesAreTrustedByItsPoolAlone: a server and a client with certificates
// of one CA verify each other through it (the client's CN and groups reach the server),
// and a client that trusts another CA refuses the server.
func TestACAsCertificatesAreTrustedByItsPoolAlone(t *testing.T) {
	ca := NewCA("test CA")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		subject := r.TLS.VerifiedChains[0][0].Subject
		_, _ = io.WriteString(w, subject.CommonName+" "+subject.Organization[0])
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{ca.Serving("server", "127.0.0.1").TLS()},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool(), MinVersion: tls.VersionTLS12,
	}
	srv.StartTLS()
	defer srv.Close()

	client := func(roots *x509.CertPool) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, Certificates: []tls.Certificate{ca.Client("alice", "developers").TLS()}, MinVersion: tls.VersionTLS12,
		}}}
	}
	resp, err := client(ca.Pool()).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(b) != "alice developers" {
		t.Fatalf("the server saw %q, want the client's CN and group", b)
	}
	if resp, err := client(NewCA("another CA").Pool()).Get(srv.URL); err == nil {
		_ = resp.Body.Close()
		t.Fatal("a client that trusts another CA accepted the server")
	}
}

// TestAServingCertificateNamesItsHosts: IP addresses and DNS names go where a client
// verifying them looks, and nothing else is named.
func TestAServingCertificateNamesItsHosts(t *testing.T) {
	ca := NewCA("test CA")
	leaf, err := x509.ParseCertificate(ca.Serving("api", "127.0.0.1", "localhost").TLS().Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	opts := x509.VerifyOptions{Roots: ca.Pool()}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		opts.DNSName = host
		if _, err := leaf.Verify(opts); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	opts.DNSName = "127.0.0.2"
	if _, err := leaf.Verify(opts); err == nil {
		t.Error("the certificate verifies for a host it does not name")
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("extended key usage %v, want server auth only", leaf.ExtKeyUsage)
	}
}

func TestAKeyPairIsWrittenForItsOwnerAlone(t *testing.T) {
	dir := t.TempDir()
	pair := NewCA("test CA").Client("bob")
	certFile, keyFile := filepath.Join(dir, "bob.crt"), filepath.Join(dir, "bob.key")
	if err := pair.Write(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{certFile, keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want 0600", f, fi.Mode())
		}
	}
}
