package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"

	"github.com/kubectl-finalize/kubectl-finalize/test/pki"
)

// certs is the certificate authority of one control plane and the folder of its files.
// It signs the serving certificates of kube-apiserver and the kubelets, and client
// certificates for any user a test needs.
type certs struct {
	dir string
	ca  *pki.CA
}

func newCerts(dir string) (*certs, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c := &certs{dir: dir, ca: pki.NewCA("kubectl-finalize-test-ca")}
	if err := os.WriteFile(c.path("ca.crt"), c.ca.PEM, 0o600); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certs) path(name string) string { return filepath.Join(c.dir, name) }

// write writes pair as name.crt and name.key.
func (c *certs) write(name string, pair pki.KeyPair) (certFile, keyFile string, err error) {
	certFile, keyFile = c.path(name+".crt"), c.path(name+".key")
	return certFile, keyFile, pair.Write(certFile, keyFile)
}

// writeServing writes the serving certificate of kube-apiserver.
func (c *certs) writeServing() (certFile, keyFile string, err error) {
	// kubernetesServiceIP: the kubernetes Service's ClusterIP, where pods of a pod network
	// reach the API server, as a real cluster's certificate names it.
	return c.write("apiserver", c.ca.Serving("kube-apiserver", "127.0.0.1", kubernetesServiceIP, "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"))
}

// writeServiceAccountKeys writes the key pair that signs ServiceAccount tokens.
func (c *certs) writeServiceAccountKeys() (pubFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	pubFile, keyFile = c.path("sa.pub"), c.path("sa.key")
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600); err != nil {
		return "", "", err
	}
	return pubFile, keyFile, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}
