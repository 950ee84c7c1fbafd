// Package pki makes the certificates of the tests and the demo: a certificate authority
// of their own, and the serving and client certificates it signs for the servers they
// start (kube-apiserver, a kubelet, a provider's API, a webhook, the demo cloud) and the
// clients they hand them to (a user of the control plane, a pass with a client
// certificate). Every key is ECDSA P-256, every certificate valid from an hour ago for a
// year: long enough for a demo left running, and the clocks of a test never disagree by
// more than the hour.
//
// Nothing here returns an error: generating a P-256 key and signing one of these
// templates fails only if crypto/rand or this package is broken, and then it panics, as
// net/http/httptest does when it cannot serve.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// validity is how long every certificate is valid after it was made.
const validity = 365 * 24 * time.Hour

// CA is a certificate authority of a test's (or the demo's) own.
type CA struct {
	// Cert is the CA's certificate, PEM its PEM: what a client trusts (a policy's
	// tls.caFile, a pod's CA file, a webhook's caBundle, kube-apiserver's client CA).
	Cert *x509.Certificate
	PEM  []byte

	key *ecdsa.PrivateKey
}

// KeyPair is a certificate and its private key, in PEM (PKCS #8 for the key).
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

// NewCA makes a CA named cn.
func NewCA(cn string) *CA {
	key := newKey()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der := must(x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key))
	return &CA{Cert: must(x509.ParseCertificate(der)), PEM: pemBlock("CERTIFICATE", der), key: key}
}

// Pool is a pool holding the CA alone: a server's ClientCAs, a client's RootCAs.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

// Serving issues a serving certificate for cn, valid for hosts (DNS names or IP
// addresses).
func (ca *CA) Serving(cn string, hosts ...string) KeyPair {
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: cn}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.issue(tmpl)
}

// Client issues a client certificate for cn; to kube-apiserver, the user cn in groups.
func (ca *CA) Client(cn string, groups ...string) KeyPair {
	return ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: cn, Organization: groups}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

func (ca *CA) issue(tmpl *x509.Certificate) KeyPair {
	key := newKey()
	now := time.Now()
	tmpl.SerialNumber = serial()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(validity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der := must(x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key))
	return KeyPair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(key)))}
}

// TLS is the pair as a server's or a client's tls.Certificate.
func (p KeyPair) TLS() tls.Certificate {
	return must(tls.X509KeyPair(p.CertPEM, p.KeyPEM))
}

// Write writes the certificate into certFile and the key into keyFile, each readable by
// its owner alone.
func (p KeyPair) Write(certFile, keyFile string) error {
	if err := os.WriteFile(certFile, p.CertPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyFile, p.KeyPEM, 0o600)
}

func newKey() *ecdsa.PrivateKey {
	return must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
}

// serial is a random serial number: two CAs of one test never issue the same.
func serial() *big.Int {
	return must(rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62)))
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("pki: %v", err))
	}
	return v
}
