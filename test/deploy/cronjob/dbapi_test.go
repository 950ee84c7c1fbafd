package cronjob

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/pki"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// What docs/deploy/base/policy.yaml names, and where the test serves it.
const (
	// dbAPIHost is the host of the shipped rule's URL,
	// https://dbapi.internal.example.com/v1/instances/{.status.instanceID}: port 443.
	dbAPIHost = "dbapi.internal.example.com"
	// dbAPIAddr is the loopback address the test's database API listens on, port 443.
	// Not 127.0.0.1, where the API server and the kubelet listen, nor 127.0.0.2, a
	// second node's address: nothing else binds it. The pod resolves dbAPIHost to it
	// through hostAliases.
	dbAPIAddr = "127.0.3.1"
	// dbAPICADir is where the overlay mounts the test CA, which SSL_CERT_FILE names.
	dbAPICADir = "/etc/dbapi-ca"
	// databaseFinalizer is the shipped rule's finalizer.
	databaseFinalizer = "db.example.com/finalizer"
)

// databaseCRD is the type the shipped rule names, databases.db.example.com, with a
// status subresource as an operator's type has: status.instanceID is the operator's.
var databaseCRD = seed.CRD{Group: "db.example.com", Kind: "Database", Plural: "databases", Singular: "database", Versions: []string{"v1"}}

// databases installs databaseCRD (once per control plane) and waits until it is served.
func databases(t *testing.T) schema.GroupVersionResource {
	t.Helper()
	s, err := seed.New(cp.Config, "cronjob")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureCRD(t.Context(), databaseCRD); err != nil {
		t.Fatal(err)
	}
	return databaseCRD.GVR()
}

// database creates Database ns/name with the shipped rule's finalizer, its
// status.instanceID set through the status subresource as the operator sets it. A stuck
// one is then deleted, and aged: see age.
func database(t *testing.T, ns, name, instanceID string, stuck bool) {
	t.Helper()
	gvr := databaseCRD.GVR()
	c := fixture.Resource(dynamic.NewForConfigOrDie(cp.Config), gvr, ns)
	c.Manager = "db-operator"
	created := fixture.Held(t, c, fixture.Custom(gvr, databaseCRD.Kind, ns, name, databaseFinalizer))
	if err := unstructured.SetNestedField(created.Object, instanceID, "status", "instanceID"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateStatus(t.Context(), created, metav1.UpdateOptions{FieldManager: "db-operator"}); err != nil {
		t.Fatal(err)
	}
	if stuck {
		fixture.Delete(t, c, name)
		age(t, gvr, ns, name, terminatingFor)
	}
}

// terminatingFor is how long age makes a stuck Database look deleted: past the shipped
// policy's minAge (15m).
const terminatingFor = 20 * time.Minute

// age makes the terminating object gvr ns/name look deleted by ago ago: its
// deletionTimestamp, creationTimestamp and managedFields times are moved back by ago.
//
// The shipped policy has minAge: 15m, and a pass measures an object's age from its
// deletionTimestamp, which the API server stamps with its own clock and no client may
// change. Waiting 15 minutes is beyond a test's budget, and editing the policy would
// no longer run the shipped one. So the object is rewritten where the API server keeps
// it: in the test control plane's etcd (on loopback), through etcd's JSON gateway, in a
// transaction that compares the key's mod revision, so that no write in between is
// lost. Custom resources are stored as JSON; only the three timestamps change (uid,
// finalizers, status as they were), and the API server reads the change through its
// etcd watch as it reads any write. The object is then what a Database deleted 20
// minutes ago and still held is: nothing in the pass or the policy is changed.
func age(t *testing.T, gvr schema.GroupVersionResource, ns, name string, ago time.Duration) {
	t.Helper()
	url := etcdURL(t)
	key := []byte(path.Join("/registry", gvr.Group, gvr.Resource, ns, name))
	var got struct {
		Kvs []struct {
			Value       []byte `json:"value"`
			ModRevision string `json:"mod_revision"`
		} `json:"kvs"`
	}
	etcdCall(t, url, "/v3/kv/range", map[string]any{"key": key}, &got)
	if len(got.Kvs) != 1 {
		t.Fatalf("etcd holds no %s", key)
	}
	stored := got.Kvs[0].Value
	if !bytes.HasPrefix(bytes.TrimSpace(stored), []byte("{")) {
		t.Fatalf("%s is not stored as JSON: %q...", key, stored[:min(len(stored), 16)])
	}
	dec := json.NewDecoder(bytes.NewReader(stored))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		t.Fatal(err)
	}
	back := func(m map[string]any, field string) {
		s, ok := m[field].(string)
		if !ok {
			t.Fatalf("%s has no %s", key, field)
		}
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		m[field] = ts.Add(-ago).UTC().Format(time.RFC3339)
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil || meta["deletionTimestamp"] == nil {
		t.Fatalf("%s is not being deleted: %s", key, stored)
	}
	back(meta, "deletionTimestamp")
	back(meta, "creationTimestamp")
	fields, _ := meta["managedFields"].([]any)
	for _, f := range fields {
		if m, ok := f.(map[string]any); ok && m["time"] != nil {
			back(m, "time")
		}
	}
	value, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var txn struct {
		Succeeded bool `json:"succeeded"`
	}
	etcdCall(t, url, "/v3/kv/txn", map[string]any{
		"compare": []map[string]any{{"result": "EQUAL", "target": "MOD", "key": key, "mod_revision": got.Kvs[0].ModRevision}},
		"success": []map[string]any{{"request_put": map[string]any{"key": key, "value": value}}},
	}, &txn)
	if !txn.Succeeded {
		t.Fatalf("%s changed while it was aged", key)
	}
	// The API server serves it once its watch has the write.
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		dt := u.GetDeletionTimestamp()
		return dt != nil && time.Since(dt.Time) > ago-time.Minute, nil
	})
	if err != nil {
		t.Fatalf("%s/%s -n %s does not look deleted %s ago: %v", gvr.Resource, name, ns, ago, err)
	}
}

// etcdURL is the client URL of the control plane's etcd, on loopback: the first line
// of its log is the command line test/controlplane started it with.
func etcdURL(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join(cp.Dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		t.Fatalf("etcd.log: %v", err)
	}
	for _, arg := range strings.Fields(line) {
		if u, ok := strings.CutPrefix(arg, "--listen-client-urls="); ok && strings.HasPrefix(u, "http://127.0.0.1:") && !strings.Contains(u, ",") {
			return u
		}
	}
	t.Fatalf("etcd.log does not start with etcd's command line and one loopback client URL: %q", line)
	return ""
}

// etcdCall posts req to etcd's JSON gateway and decodes the answer into resp.
func etcdCall(t *testing.T, url, api string, req, resp any) {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+api, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("etcd %s: %v", api, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("etcd %s: %s", api, res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(resp); err != nil {
		t.Fatalf("etcd %s: %v", api, err)
	}
}

// dbAPI plays the database API of the shipped rule on dbAPIAddr:443 over HTTPS, with a
// certificate for dbAPIHost from a CA of its own. Like a real API it wants
// "Authorization: Bearer TOKEN" and answers 401 to any other request. With the token,
// GET /v1/instances/ID answers 200 for the IDs it holds and 404 for any other.
type dbAPI struct {
	token string
	// caPEM is the certificate of its CA.
	caPEM []byte

	mu        sync.Mutex
	instances map[string]bool
	asked     []string
	refused   []string
	wrong     []string
}

// startDBAPI serves a dbAPI holding instances, until the test ends.
func startDBAPI(t *testing.T, token string, instances ...string) *dbAPI {
	t.Helper()
	d := &dbAPI{token: token, instances: map[string]bool{}}
	for _, id := range instances {
		d.instances[id] = true
	}
	cert, caPEM := dbAPICertificate(t)
	d.caPEM = caPEM
	lis, err := net.Listen("tcp", net.JoinHostPort(dbAPIAddr, "443"))
	if err != nil {
		t.Fatalf("the database API on %s:443 (port 443 is in the shipped URL; binding it needs root, as the node does): %v", dbAPIAddr, err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(d.serve),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.ServeTLS(lis, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	// The guard works: a request without the token is answered 401 (this one is not
	// counted).
	client := d.client()
	res, err := client.Get("https://" + dbAPIHost + "/v1/instances/" + instances[0])
	if err != nil {
		t.Fatalf("the database API: %v", err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the database API answered %s to a request without a token, want 401", res.Status)
	}
	d.mu.Lock()
	d.refused = nil
	d.mu.Unlock()
	return d
}

// client is an HTTPS client that trusts the dbAPI's CA and reaches dbAPIHost on
// dbAPIAddr, as the pod does through its /etc/hosts.
func (d *dbAPI) client() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(d.caPEM)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(dbAPIAddr, "443"))
		},
	}}
}

func (d *dbAPI) serve(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	// The pod dialled the shipped URL's name: SNI and Host say which name it used.
	if r.TLS == nil || r.TLS.ServerName != dbAPIHost || r.Host != dbAPIHost {
		d.wrong = append(d.wrong, fmt.Sprintf("%s %s (Host %q)", r.Method, r.URL, r.Host))
	}
	if r.Header.Get("Authorization") != "Bearer "+d.token {
		scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		d.refused = append(d.refused, fmt.Sprintf("%s %s (Authorization scheme %q)", r.Method, r.URL.Path, scheme))
		w.Header().Set("WWW-Authenticate", `Bearer realm="dbapi"`)
		http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	id, ok := strings.CutPrefix(r.URL.Path, "/v1/instances/")
	if !ok || r.Method != http.MethodGet || id == "" || strings.Contains(id, "/") {
		http.Error(w, `{"error":"no such endpoint"}`, http.StatusNotFound)
		return
	}
	d.asked = append(d.asked, id)
	w.Header().Set("Content-Type", "application/json")
	if !d.instances[id] {
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintf(w, `{"error":"instance %s not found"}`, id)
		return
	}
	_, _ = fmt.Fprintf(w, `{"id":%q,"state":"available"}`, id)
}

// record is what the dbAPI saw: the instance IDs asked with the token, the requests it
// refused (401), and the requests that did not name dbAPIHost.
func (d *dbAPI) record() (asked, refused, wrong []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.asked), slices.Clone(d.refused), slices.Clone(d.wrong)
}

// dbAPICertificate is a serving certificate for dbAPIHost, and the PEM of the CA that
// signed it.
func dbAPICertificate(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	ca := pki.NewCA("dbapi test CA")
	return ca.Serving(dbAPIHost, dbAPIHost).TLS(), ca.PEM
}

// dbAPIOverlay is the overlay's part for the shipped policy's provider, the least the
// node needs to reach the test's database API in place of the real one:
//
//   - hostAliases: dbAPIHost is dbAPIAddr. The kubelet writes the pod's /etc/hosts from
//     the node's own plus the pod's hostAliases, hostNetwork or not (hostsFile checks
//     it), and the image's nsswitch.conf reads files first.
//   - dnsPolicy None with a nameserver on dbAPIAddr, where nothing serves DNS: the
//     node's resolv.conf names a nameserver at a private address, and a name the hosts
//     file did not answer would be asked there; this way any such lookup fails on
//     loopback instead (the network rule).
//   - SSL_CERT_FILE: the image sets it to its CA bundle; the overlay points it at the
//     test CA, mounted from a ConfigMap (the shipped rule has no tls.caFile: it trusts
//     the system's CAs, as a public API's certificate would be).
//
// The shipped Secret volume is untouched: the test creates the Secret it names.
func dbAPIOverlay(d *dbAPI) scenario {
	return scenario{
		files: map[string]string{"dbapi-ca.pem": string(d.caPEM)},
		generators: `configMapGenerator:
- name: dbapi-ca
  namespace: kubectl-finalize
  files:
  - ca.pem=dbapi-ca.pem
`,
		pod: func(spec *corev1.PodSpec) {
			spec.HostAliases = []corev1.HostAlias{{IP: dbAPIAddr, Hostnames: []string{dbAPIHost}}}
			spec.DNSPolicy = corev1.DNSNone
			spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{dbAPIAddr}}
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "dbapi-ca", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "dbapi-ca"}},
			}})
			c := &spec.Containers[0]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "dbapi-ca", MountPath: dbAPICADir, ReadOnly: true})
			c.Env = append(c.Env, corev1.EnvVar{Name: "SSL_CERT_FILE", Value: dbAPICADir + "/ca.pem"})
		},
	}
}

// hostsFile is the /etc/hosts the kubelet wrote for the pod: the node's kubelet keeps
// it in its root folder, pods/UID/etc-hosts.
func hostsFile(t *testing.T, pod corev1.Pod) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cp.Node.Dir, "kubelet", "pods", string(pod.UID), "etc-hosts"))
	if err != nil {
		t.Fatalf("the /etc/hosts of pod %s: %v", pod.Name, err)
	}
	return string(b)
}

// tokenSecret runs docs/reconcile.md's command that creates the Secret dbapi-token,
// with a token file holding token and a line break (as an editor leaves it), and
// deletes the Secret when the test ends.
func tokenSecret(t *testing.T, token string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "dbapi-token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(repoPath(t, "docs", "reconcile.md"))
	if err != nil {
		t.Fatal(err)
	}
	const documented = "--from-file=token=./dbapi-token"
	var args []string
	for line := range strings.SplitSeq(string(doc), "\n") {
		if strings.HasPrefix(line, "kubectl ") && strings.Contains(line, " secret generic dbapi-token ") {
			args = strings.Fields(line)[1:]
		}
	}
	if i := slices.Index(args, documented); i < 0 {
		t.Fatalf("docs/reconcile.md shows no `kubectl ... create secret generic dbapi-token ... %s`", documented)
	} else {
		args[i] = "--from-file=token=" + file
	}
	kubectl(t, "", args...)
	t.Cleanup(func() { noTokenSecret(t) })
}

// noTokenSecret deletes the Secret dbapi-token if it exists.
func noTokenSecret(t *testing.T) {
	t.Helper()
	err := cp.Kube(t).CoreV1().Secrets(namespace).Delete(context.Background(), "dbapi-token", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}
