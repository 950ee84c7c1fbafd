// Package controlplane starts a real etcd, kube-apiserver and, when asked,
// kube-controller-manager on 127.0.0.1, for integration tests and the demo.
//
// The binaries come from test/infra/k8s-bins (built from the Go module proxy); their folder is
// taken from $KUBEBUILDER_ASSETS, or build.sh is run to find or build them. The API server
// serves TLS with RBAC authorization; the admin is in system:masters, and any other user or
// ServiceAccount can be given a client configuration of its own.
package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DefaultControllers are the kube-controller-manager controllers the tests and the demo
// rely on. Each can be left out to make its absence the scenario under test.
var DefaultControllers = []string{
	"namespace-controller",
	"garbage-collector-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
	"clusterrole-aggregation-controller",
}

// Options configure a control plane.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and kubectl.
	// Empty: $KUBEBUILDER_ASSETS, else the folder test/infra/k8s-bins/build.sh prints.
	BinDir string
	// Dir keeps the state, certificates, kubeconfigs and logs. Empty: a temporary folder,
	// removed by Stop.
	Dir string
	// Controllers, if not empty, starts kube-controller-manager with these controllers.
	Controllers []string
	// APIServerFlags are added to (or override) kube-apiserver's flags, e.g.
	// {"etcd-compaction-interval": "1s"}.
	APIServerFlags map[string]string
	// EtcdFlags are added to etcd's flags, e.g. {"quota-backend-bytes": "8589934592"}.
	EtcdFlags map[string]string
	// Node starts a node beside the control plane: containerd and runc (installed by
	// test/infra/node/install-runtime.sh when missing), a locally built pause image, a kubelet
	// registered as NodeName, kube-scheduler, and kube-controller-manager with
	// NodeControllers added to Controllers (or to DefaultControllers). Pods run with the
	// host's network only and must carry NetworkOverlay; the node refuses others.
	Node bool
	// Nodes is the number of nodes Node starts (0 means 1). Node i registers as
	// 127.0.0.(i+1), its address on loopback, with containerd and a kubelet of its own;
	// the first (NodeName) also runs kube-scheduler. Nodes > 1 implies Node.
	Nodes int
	// PodNetwork gives the nodes' pods a real network, all of it inside a network
	// namespace the control plane creates and deletes (podnetwork.go): every node's
	// containerd and kubelet run there, pods need no host network and reach the API
	// server at the kubernetes Service's ClusterIP, as in a real cluster. It implies Node.
	PodNetwork bool
	// Detached processes outlive this process; Stop is then the caller's job (StopDir).
	// A node cannot be detached.
	Detached bool
	// Log receives progress lines; nil means none.
	Log io.Writer
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Dir is the state folder; AdminKubeconfig is a kubeconfig file for the admin.
	Dir             string
	AdminKubeconfig string
	// BinDir holds the binaries, kubectl among them.
	BinDir string
	// Config is the admin's client configuration.
	Config *rest.Config
	// Node is the test node when Options.Node is set, else nil; with Options.Nodes it
	// is the first of Nodes.
	Node *Node
	// Nodes are every test node, Node first.
	Nodes []*Node

	opts      Options
	ownDir    bool
	certs     *certs
	apiURL    string
	apiArgs   []string
	etcd      *process
	etcdURL   string
	apiserver *process
	kcm       *process
	podNet    *podNetwork
}

// state is what a detached control plane leaves behind for StopDir.
type state struct {
	PIDs map[string]int `json:"pids"`
}

// Start starts etcd and kube-apiserver, and kube-controller-manager if
// opts.Controllers is set, and waits until the API server is ready.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	binDir, err := BinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if opts.Nodes > 1 || opts.PodNetwork {
		opts.Node = true
	}
	if opts.Node {
		if opts.Detached {
			return nil, errNodeDetached
		}
		if err := checkNodeBinaries(binDir); err != nil {
			return nil, err
		}
	}
	cp := &ControlPlane{BinDir: binDir, opts: opts, Dir: opts.Dir}
	if cp.Dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "kubectl-finalize-cp-"); err != nil {
			return nil, err
		}
		cp.ownDir = true
	} else if err := os.MkdirAll(cp.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := cp.start(ctx); err != nil {
		cp.Logs(os.Stderr, 40)
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) logf(format string, args ...any) {
	if cp.opts.Log != nil {
		fmt.Fprintf(cp.opts.Log, format+"\n", args...)
	}
}

func (cp *ControlPlane) start(ctx context.Context) error {
	began := time.Now()
	var err error
	if cp.certs, err = newCerts(filepath.Join(cp.Dir, "pki")); err != nil {
		return fmt.Errorf("creating certificates: %w", err)
	}
	if cp.opts.Node {
		for i := range max(cp.opts.Nodes, 1) {
			// The first node keeps the folder it always had.
			dir := filepath.Join(cp.Dir, "node")
			if i > 0 {
				dir += "-" + nodeName(i)
			}
			cp.Nodes = append(cp.Nodes, &Node{Name: nodeName(i), Dir: dir, cp: cp})
		}
		cp.Node = cp.Nodes[0]
	}
	// Ports are picked free; a rare clash with a parallel run is retried on new ports.
	for attempt := 1; ; attempt++ {
		err = cp.startEtcdAndAPIServer(ctx)
		if err == nil || attempt == 3 || !errors.Is(err, errPortInUse) {
			break
		}
		cp.logf("controlplane: port clash, retrying on new ports")
		cp.apiserver.stop(5 * time.Second)
		cp.etcd.stop(5 * time.Second)
	}
	if err != nil {
		return err
	}
	cp.logf("controlplane: kube-apiserver ready at %s after %s", cp.apiURL, time.Since(began).Round(time.Millisecond))
	if cp.opts.Node {
		controllers := cp.opts.Controllers
		if len(controllers) == 0 {
			controllers = DefaultControllers
		}
		for _, c := range NodeControllers {
			if !slices.Contains(controllers, c) {
				controllers = append(slices.Clip(controllers), c)
			}
		}
		if cp.opts.PodNetwork {
			controllers = append(slices.Clip(controllers), podNetworkControllers...)
		}
		cp.opts.Controllers = controllers
	}
	if len(cp.opts.Controllers) > 0 {
		if err := cp.StartControllerManager(ctx, cp.opts.Controllers...); err != nil {
			return err
		}
	}
	if cp.opts.PodNetwork {
		if err := cp.startPodNetwork(ctx); err != nil {
			return fmt.Errorf("the pod network: %w", err)
		}
	}
	if cp.Node != nil {
		if err := cp.startNodes(ctx); err != nil {
			return err
		}
	}
	return cp.saveState()
}

var errPortInUse = errors.New("address already in use")

// Client rate limits of the configurations the control plane hands out.
const (
	testQPS   = 1000
	testBurst = 2000
)

func (cp *ControlPlane) startEtcdAndAPIServer(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	cp.etcdURL = etcdURL
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	etcdDir := filepath.Join(cp.Dir, "etcd")
	_ = os.RemoveAll(etcdDir)
	etcdArgs := append([]string{
		"--name=kubectl-finalize",
		"--data-dir=" + etcdDir,
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=kubectl-finalize=" + peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}, flagList(cp.opts.EtcdFlags)...)
	cp.etcd, err = startProcess("etcd", filepath.Join(cp.BinDir, "etcd"), etcdArgs, cp.Dir, cp.opts.Detached)
	if err != nil {
		return err
	}
	if err := cp.waitReady(ctx, cp.etcd, func() bool { return etcdHealthy(etcdURL) }, 30*time.Second); err != nil {
		return err
	}

	certFile, keyFile, err := cp.certs.writeServing()
	if err != nil {
		return err
	}
	saPub, saKey, err := cp.certs.writeServiceAccountKeys()
	if err != nil {
		return err
	}
	flags := map[string]string{
		"etcd-servers":                     etcdURL,
		"bind-address":                     "127.0.0.1",
		"advertise-address":                "127.0.0.1",
		"secure-port":                      strconv.Itoa(ports[2]),
		"tls-cert-file":                    certFile,
		"tls-private-key-file":             keyFile,
		"client-ca-file":                   cp.certs.path("ca.crt"),
		"service-account-issuer":           "https://kubernetes.default.svc.cluster.local",
		"service-account-key-file":         saPub,
		"service-account-signing-key-file": saKey,
		"service-cluster-ip-range":         "10.0.0.0/24",
		"authorization-mode":               "RBAC",
		"allow-privileged":                 "true",
		// Without the serviceaccount controller no "default" ServiceAccount exists, and
		// the admission plugin would reject every pod.
		"disable-admission-plugins": "ServiceAccount",
		"cert-dir":                  filepath.Join(cp.Dir, "apiserver-certs"),
		// The endpoint reconciler refuses a loopback address for the kubernetes Service.
		"endpoint-reconciler-type": "none",
		"v":                        "1",
	}
	if cp.Node != nil {
		if err := cp.nodeAPIServerFlags(flags); err != nil {
			return err
		}
	}
	for k, v := range cp.opts.APIServerFlags {
		flags[k] = v
	}
	cp.apiURL = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	cp.apiArgs = flagList(flags)
	if cp.apiserver, err = startProcess("kube-apiserver", filepath.Join(cp.BinDir, "kube-apiserver"), cp.apiArgs, cp.Dir, cp.opts.Detached); err != nil {
		return err
	}

	if cp.Config, err = cp.clientCertConfig("kubectl-finalize-admin", "system:masters"); err != nil {
		return err
	}
	cp.AdminKubeconfig = filepath.Join(cp.Dir, "admin.kubeconfig")
	if err := WriteKubeconfig(cp.Config, cp.AdminKubeconfig); err != nil {
		return err
	}
	return cp.waitAPIServer(ctx)
}

// waitAPIServer waits until the API server is ready and has its default namespace.
func (cp *ControlPlane) waitAPIServer(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	return cp.waitReady(ctx, cp.apiserver, func() bool {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil || string(body) != "ok" {
			return false
		}
		// Tests write Events to "default": wait for the bootstrap controller to create it.
		_, err = client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return err == nil
	}, 60*time.Second)
}

// waitReady polls ready until it is true, p exits, or the timeout passes.
func (cp *ControlPlane) waitReady(ctx context.Context, p *process, ready func() bool, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if done, werr := p.exited(); done {
			if logHas(p.logPath, "address already in use") {
				return false, fmt.Errorf("%s exited: %w", p.name, errPortInUse)
			}
			return false, fmt.Errorf("%s exited before it was ready; its log is %s: %w", p.name, p.logPath, werr)
		}
		return ready(), nil
	})
	if err != nil && !errors.Is(err, errPortInUse) && !strings.Contains(err.Error(), "exited") {
		return fmt.Errorf("%s not ready after %s: %w; its log is %s", p.name, timeout, err, p.logPath)
	}
	return err
}

// StartControllerManager starts kube-controller-manager with the given controllers
// (when none are given: DefaultControllers, and with a node NodeControllers too). It is an error to start it twice.
func (cp *ControlPlane) StartControllerManager(ctx context.Context, controllers ...string) error {
	if cp.kcm != nil {
		if done, _ := cp.kcm.exited(); !done {
			return errors.New("kube-controller-manager is already running")
		}
	}
	if len(controllers) == 0 {
		controllers = DefaultControllers
		if cp.Node != nil {
			controllers = cp.opts.Controllers // the node's, set by start
		}
	}
	cfg, err := cp.clientCertConfig("system:kube-controller-manager", "system:masters")
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(cp.Dir, "kube-controller-manager.kubeconfig")
	if err := WriteKubeconfig(cfg, kubeconfig); err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	flags := map[string]string{
		"kubeconfig":                      kubeconfig,
		"authentication-kubeconfig":       kubeconfig,
		"authorization-kubeconfig":        kubeconfig,
		"controllers":                     strings.Join(controllers, ","),
		"leader-elect":                    "false",
		"use-service-account-credentials": "false",
		"bind-address":                    "127.0.0.1",
		"secure-port":                     strconv.Itoa(ports[0]),
		"cert-dir":                        filepath.Join(cp.Dir, "kcm-certs"),
		"concurrent-namespace-syncs":      "5",
		"concurrent-gc-syncs":             "5",
		"namespace-sync-period":           "1m",
		"v":                               "1",
	}
	if cp.Node != nil {
		// The token controller signs legacy tokens; the publisher writes kube-root-ca.crt,
		// the CA a pod's in-cluster client trusts.
		flags["service-account-private-key-file"] = cp.certs.path("sa.key")
		flags["root-ca-file"] = cp.certs.path("ca.crt")
	}
	cp.kcm, err = startProcess("kube-controller-manager", filepath.Join(cp.BinDir, "kube-controller-manager"), flagList(flags), cp.Dir, cp.opts.Detached)
	if err != nil {
		return err
	}
	if err := cp.waitHealthz(ctx, cp.kcm, ports[0]); err != nil {
		return err
	}
	cp.logf("controlplane: kube-controller-manager running %s", strings.Join(controllers, ","))
	return cp.saveState()
}

// StopControllerManager stops kube-controller-manager; a test can then show what happens
// when a controller is gone.
func (cp *ControlPlane) StopControllerManager() {
	cp.kcm.stop(10 * time.Second)
	cp.kcm = nil
	_ = cp.saveState()
}

// KillAPIServer kills kube-apiserver with SIGKILL, as the OOM killer or a node failure
// would: no graceful shutdown, requests in flight are cut. etcd keeps the state.
func (cp *ControlPlane) KillAPIServer() {
	if done, _ := cp.apiserver.exited(); done {
		return
	}
	_ = syscall.Kill(-cp.apiserver.cmd.Process.Pid, syscall.SIGKILL)
	<-cp.apiserver.done
}

// RestartAPIServer starts kube-apiserver again after KillAPIServer, on the same address
// with the same flags, and waits until it is ready.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	if done, _ := cp.apiserver.exited(); !done {
		return errors.New("kube-apiserver is still running")
	}
	var err error
	if cp.apiserver, err = startProcess("kube-apiserver", filepath.Join(cp.BinDir, "kube-apiserver"), cp.apiArgs, cp.Dir, cp.opts.Detached); err != nil {
		return err
	}
	if err := cp.waitAPIServer(ctx); err != nil {
		return err
	}
	return cp.saveState()
}

// Stop stops every component and removes the state folder if Start created it.
func (cp *ControlPlane) Stop() {
	// The first node last: its kube-scheduler serves them all.
	for i := len(cp.Nodes) - 1; i >= 0; i-- {
		cp.Nodes[i].stop()
	}
	cp.podNet.stop()
	cp.kcm.stop(10 * time.Second)
	cp.apiserver.stop(15 * time.Second)
	cp.etcd.stop(10 * time.Second)
	if cp.ownDir {
		_ = os.RemoveAll(cp.Dir)
	}
}

// Logs writes the last lines of every component's log to w.
func (cp *ControlPlane) Logs(w io.Writer, lines int) {
	ps := []*process{cp.etcd, cp.apiserver, cp.kcm}
	for _, n := range cp.Nodes {
		ps = append(ps, n.processes()...)
	}
	for _, p := range ps {
		if p != nil {
			p.tail(w, lines)
		}
	}
}

func (cp *ControlPlane) saveState() error {
	s := state{PIDs: map[string]int{}}
	for _, p := range []*process{cp.etcd, cp.apiserver, cp.kcm} {
		if p != nil {
			s.PIDs[p.name] = p.cmd.Process.Pid
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cp.Dir, "state.json"), b, 0o600)
}

// StopDir stops the detached control plane whose state is in dir.
func StopDir(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("reading %s: %w", filepath.Join(dir, "state.json"), err)
	}
	var errs []error
	for _, name := range []string{"kube-controller-manager", "kube-apiserver", "etcd"} {
		if err := stopPID(s.PIDs[name], 15*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// UserConfig returns a client configuration for user in groups, authenticated by a
// client certificate. RBAC decides what the user may do.
func (cp *ControlPlane) UserConfig(user string, groups ...string) (*rest.Config, error) {
	return cp.clientCertConfig(user, groups...)
}

// UserKubeconfig writes a kubeconfig for user in groups (UserConfig) into a temporary
// folder of t, and returns its path.
func (cp *ControlPlane) UserKubeconfig(t testing.TB, user string, groups ...string) string {
	t.Helper()
	cfg, err := cp.UserConfig(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := WriteKubeconfig(cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// ClusterRoleUser grants user the rules cluster-wide (a ClusterRole and its binding, both
// named user, deleted when t ends) and returns the path of a kubeconfig for the user
// (UserKubeconfig).
func (cp *ControlPlane) ClusterRoleUser(t testing.TB, user string, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	kube := cp.Kube(t)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
		_ = kube.RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{})
	})
	return cp.UserKubeconfig(t, user)
}

// ServiceAccountConfig returns a client configuration for a ServiceAccount, creating the
// ServiceAccount if needed and authenticating with a token from the TokenRequest API.
func (cp *ControlPlane) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	client, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating ServiceAccount %s/%s: %w", namespace, name, err)
	}
	expiry := int64(3600)
	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return &rest.Config{
		Host:            cp.apiURL,
		BearerToken:     tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.certs.ca.PEM},
		QPS:             testQPS, Burst: testBurst,
	}, nil
}

func (cp *ControlPlane) clientCertConfig(user string, groups ...string) (*rest.Config, error) {
	pair := cp.certs.ca.Client(user, groups...)
	return &rest.Config{
		Host: cp.apiURL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   cp.certs.ca.PEM,
			CertData: pair.CertPEM,
			KeyData:  pair.KeyPEM,
		},
		// Tests are not to wait on client-go's default 5 requests a second.
		QPS: testQPS, Burst: testBurst,
	}, nil
}

// WriteKubeconfig writes cfg as a kubeconfig file with one context, "default".
func WriteKubeconfig(cfg *rest.Config, path string) error {
	return WriteKubeconfigContexts(path, "default", map[string]*rest.Config{"default": cfg})
}

// WriteKubeconfigContexts writes a kubeconfig with one context (and cluster and user) per
// configuration, current being the current context.
func WriteKubeconfigContexts(path, current string, contexts map[string]*rest.Config) error {
	kc := clientcmdapi.NewConfig()
	for name, cfg := range contexts {
		kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
			ClientCertificateData: cfg.CertData,
			ClientKeyData:         cfg.KeyData,
			Token:                 cfg.BearerToken,
		}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	kc.CurrentContext = current
	return clientcmd.WriteToFile(*kc, path)
}

// BinDir finds the control plane binaries: dir if set, else $KUBEBUILDER_ASSETS, else the
// folder test/infra/k8s-bins/build.sh prints (building them on first use).
func BinDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS is not set and %w", err)
		}
		cmd := exec.Command(filepath.Join(root, "test", "infra", "k8s-bins", "build.sh"))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("building the control plane with test/infra/k8s-bins/build.sh: %w", err)
		}
		dir = strings.TrimSpace(string(out))
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("control plane binary %s missing in %s (run test/infra/k8s-bins/build.sh): %w", b, dir, err)
		}
	}
	return dir, nil
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "test", "infra", "k8s-bins", "build.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("test/infra/k8s-bins/build.sh was not found above the working directory")
		}
		dir = parent
	}
}

func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func flagList(flags map[string]string) []string {
	args := make([]string, 0, len(flags))
	for k, v := range flags {
		args = append(args, "--"+k+"="+v)
	}
	slices.Sort(args)
	return args
}

func etcdHealthy(url string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
	}
	return json.NewDecoder(resp.Body).Decode(&h) == nil && h.Health == "true"
}

func logHas(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), s)
}
