package policies

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/pki"
)

// clientCN is the common name of the client certificate the pass presents.
const clientCN = "kubectl-finalize"

// mtlsAPI is an HTTPS server on loopback that requires a client certificate its own CA
// issued (tls.RequireAndVerifyClientCert): a client without one, or with another,
// never reaches the handler. Behind that, it answers only the common name clientCN:
// GET /v1/instances/ID is 404 for deleted* IDs and 200 for any other; a certificate of
// another name gets 403.
type mtlsAPI struct {
	*httptest.Server
	// serverCA, clientCert and clientKey are PEM: the server's certificate (the CA the
	// pass trusts), and the certificate and key the pass presents.
	serverCA, clientCert, clientKey []byte

	mu       sync.Mutex
	answered []string
	refused  []string
}

func newMTLSAPI(t *testing.T) *mtlsAPI {
	t.Helper()
	ca := pki.NewCA("dbapi client CA")
	api := &mtlsAPI{}
	client := ca.Client(clientCN)
	api.clientCert, api.clientKey = client.CertPEM, client.KeyPEM
	api.Server = httptest.NewUnstartedServer(http.HandlerFunc(api.serve))
	api.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	api.StartTLS()
	t.Cleanup(api.Close)
	if !strings.HasPrefix(api.URL, "https://127.0.0.1:") {
		t.Fatalf("the API listens on %s, not loopback", api.URL)
	}
	api.serverCA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	return api
}

func (api *mtlsAPI) serve(w http.ResponseWriter, r *http.Request) {
	cn := ""
	if len(r.TLS.VerifiedChains) > 0 {
		cn = r.TLS.VerifiedChains[0][0].Subject.CommonName
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if cn != clientCN {
		api.refused = append(api.refused, fmt.Sprintf("%s %s as %q", r.Method, r.URL.Path, cn))
		w.WriteHeader(http.StatusForbidden)
		return
	}
	api.answered = append(api.answered, r.URL.Path)
	id, ok := strings.CutPrefix(r.URL.Path, "/v1/instances/")
	// It answers like a cloud API: JSON, a JSON error body with its 404.
	w.Header().Set("Content-Type", "application/json")
	switch {
	case !ok:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"no such endpoint"}`))
	case strings.HasPrefix(id, "deleted"):
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"instance ` + id + ` not found"}`))
	default:
		_, _ = w.Write([]byte(`{"state":"available"}`))
	}
}

// refusesWithoutACertificate checks that the API refuses a client that trusts it but
// presents no certificate: a pass that answers through it presented one.
func (api *mtlsAPI) refusesWithoutACertificate(t *testing.T) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(api.serverCA)
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport, Timeout: 10 * time.Second}).Get(api.URL + "/v1/instances/live")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("the API answered a client without a certificate: %s", resp.Status)
	}
	if len(api.requests()) != 0 {
		t.Fatalf("a request without a certificate reached the handler: %v", api.requests())
	}
}

func (api *mtlsAPI) requests() []string {
	api.mu.Lock()
	defer api.mu.Unlock()
	return append(append([]string(nil), api.answered...), api.refused...)
}

// mutualTLS is docs/providers.md's http provider with a client certificate: tls.caFile,
// certFile and keyFile at the docs' paths, mounted from a Secret. The API accepts no
// connection without the certificate, so every verdict, the control's Present included,
// came through it.
func mutualTLS(t *testing.T, w *world) (string, string) {
	api := newMTLSAPI(t)
	api.refusesWithoutACertificate(t)
	fin := controlplane.FinalizerOf(t)
	w.configMaps(t, cp.Namespace(t), fin, nil, []string{"live", "live-kept"})
	w.pod = append(w.pod, func(t *testing.T, a account, pod *corev1.Pod) {
		if _, err := cp.Kube(t).CoreV1().Secrets(a.namespace).Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "dbapi-tls"},
			Data:       map[string][]byte{"ca.crt": api.serverCA, "client.crt": api.clientCert, "client.key": api.clientKey},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		mount(pod, corev1.Volume{Name: "dbapi-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "dbapi-tls"}}}, "/etc/dbapi")
	})
	w.after = append(w.after, func(t *testing.T) {
		api.mu.Lock()
		defer api.mu.Unlock()
		// The control, the gone and the kept instance, each asked at least once.
		for _, id := range []string{"live", "deleted-1", "live-kept"} {
			if !strings.Contains(strings.Join(api.answered, " ")+" ", "/v1/instances/"+id+" ") {
				t.Errorf("the API answered no request about %s over mutual TLS: %v", id, api.answered)
			}
		}
		if len(api.refused) > 0 {
			t.Errorf("the API refused certificates: %v", api.refused)
		}
	})
	return "", fmt.Sprintf(`- name: managed-databases
  finalizers: ["%s"]
  resources: ["configmaps"]
  verify:
    http:
      url: "%s/v1/instances/{.metadata.annotations.instance}"
      tls:
        caFile: /etc/dbapi/ca.crt
        certFile: /etc/dbapi/client.crt
        keyFile: /etc/dbapi/client.key
`, fin, api.URL)
}

// secretData is docs/providers.md's secretData: true. Secrets that stand for cloud
// accounts carry a finalizer; the program reads the account's access key ID from the
// Secret it is asked about (check-account, cloudcli), which it gets only when the rule
// sends the Secret's values: without them it would read REDACTED and fail. Every pass
// warns that the program reads every matched Secret's values.
func secretData(t *testing.T, w *world) (string, string) {
	fin := controlplane.FinalizerOf(t)
	secrets := cp.Kube(t).CoreV1().Secrets(cp.Namespace(t))
	for _, o := range []external{{"control", "AKIAEXAMPLELIVE00001", true, false}, {"gone", "AKIAEXAMPLECLOSED002", false, true}, {"kept", "AKIAEXAMPLEOPEN00003", true, true}} {
		fixture.Create(t, secrets, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: o.name, Finalizers: []string{fin}},
			Data:       map[string][]byte{"accessKeyID": []byte(o.id), "secretAccessKey": []byte("never-shown-" + o.name)},
		}, o.stuck)
		w.ask("check-account", nil, o.exists, o.id)
		// The verdicts, which the program gets by the key ID it read from the Secret, show
		// it was sent the values; the ID itself, a value of a Secret, is never shown
		// (docs/security.md: the one redactor).
		w.expect(o, "check-account REDACTED")
	}
	w.logSays = append(w.logSays, "secretData is true: the program reads the values of every Secret the rule matches")
	return "", fmt.Sprintf(`- name: cloud-accounts
  finalizers: ["%s"]
  resources: ["secrets"]
  verify:
    exec:
      command: ["/usr/local/bin/check-account"]
      secretData: true
`, fin)
}
