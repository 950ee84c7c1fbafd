package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// NodeName is the name the test node registers under. It is its address as well: the
// kubelet refuses a loopback --node-ip, but takes a node name that is an IP address as
// the node's InternalIP, which is where kube-apiserver reaches it for logs and exec
// (--kubelet-preferred-address-types=InternalIP). Any other address would be a private
// one in the machine's own network namespace.
const NodeName = "127.0.0.1"

// nodeName is the name, and the address, of node i (from 0) of Options.Nodes: 127.0.0.1,
// 127.0.0.2, ... Every 127.0.0.0/8 address is the loopback interface's, so each node's
// kubelet and hostNetwork pods bind an address of their own on loopback: two replicas
// that listen on the same port can run on two nodes without colliding.
func nodeName(i int) string { return fmt.Sprintf("127.0.0.%d", i+1) }

// PauseImage is the sandbox image of the test node, built locally from test/infra/node/pause.
const PauseImage = "kubectl-finalize.test/pause:1"

// NodeControllers are the kube-controller-manager controllers workloads need on the test
// node, started in addition to the package's Controllers (or DefaultControllers) when
// Options.Node is set. The node lifecycle controller is not among them: the node stays
// NotReady (there is no pod network) and it would taint it and evict.
var NodeControllers = []string{
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"job-controller",
	"cronjob-controller",
	"deployment-controller",
	"replicaset-controller",
	"ttl-after-finished-controller",
}

// Node is a test node: containerd and runc and a kubelet registered under the node's
// address (NodeName for the first); the first node runs kube-scheduler too, for all of
// them. Pods run with the host's network only (see NetworkOverlay).
type Node struct {
	// Name is the node's name; Dir holds containerd's and the kubelet's state and logs.
	Name string
	Dir  string

	cp          *ControlPlane
	runtimeDir  string // containerd, ctr, runc
	socket      string
	kubeletPort int
	imageTool   string
	containerd  *process
	kubelet     *process
	scheduler   *process // the first node's only
}

// suffix tells apart the files and logs of the nodes after the first, which keeps the
// names it always had.
func (n *Node) suffix() string {
	if n == n.cp.Node {
		return ""
	}
	return "-" + n.Name
}

// startNodes starts every node, then installs the network guard; kube-apiserver already
// runs with the nodes' flags (nodeAPIServerFlags).
func (cp *ControlPlane) startNodes(ctx context.Context) error {
	began := time.Now()
	for _, n := range cp.Nodes {
		if err := cp.startNode(ctx, n); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	if err := cp.guardNetwork(ctx); err != nil {
		return fmt.Errorf("installing the network guard: %w", err)
	}
	cp.logf("controlplane: %d node(s) ready after %s", len(cp.Nodes), time.Since(began).Round(time.Millisecond))
	return nil
}

// startNode starts n's containerd, loads the pause image, and starts n's kubelet (and,
// on the first node, kube-scheduler).
func (cp *ControlPlane) startNode(ctx context.Context, n *Node) error {
	began := time.Now()
	var err error
	if n.runtimeDir, err = runtimeDir(); err != nil {
		return err
	}
	for _, d := range []string{"containerd", "kubelet", "pod-logs", "images"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o700); err != nil {
			return err
		}
	}
	if err := n.startContainerd(ctx); err != nil {
		return err
	}
	cp.logf("controlplane: containerd of %s ready after %s", n.Name, time.Since(began).Round(time.Millisecond))
	if n == cp.Node {
		if err := n.buildImage(ctx, PauseImage, "./test/infra/node/pause", "65535:65535"); err != nil {
			return fmt.Errorf("building the pause image: %w", err)
		}
		if err := n.startScheduler(ctx); err != nil {
			return err
		}
	} else if err := cp.Node.CopyImage(ctx, PauseImage, n); err != nil {
		return fmt.Errorf("loading the pause image: %w", err)
	}
	cp.logf("controlplane: pause image loaded into %s after %s", n.Name, time.Since(began).Round(time.Millisecond))
	if err := n.startKubelet(ctx); err != nil {
		return err
	}
	cp.logf("controlplane: kubelet registered %s after %s", n.Name, time.Since(began).Round(time.Millisecond))
	return nil
}

// checkNodeBinaries fails before anything starts if binDir lacks the node's binaries
// (a cache built before the node was added).
func checkNodeBinaries(binDir string) error {
	for _, b := range []string{"kubelet", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return fmt.Errorf("node binary %s missing in %s (run test/infra/k8s-bins/build.sh): %w", b, binDir, err)
		}
	}
	return nil
}

// runtimeDir finds containerd, its runc shim and runc, installing them with
// test/infra/node/install-runtime.sh when they are missing.
func runtimeDir() (string, error) {
	need := []string{"containerd", "ctr", "containerd-shim-runc-v2", "runc"}
	found := true
	for _, b := range need {
		if _, err := exec.LookPath(b); err != nil {
			found = false
		}
	}
	if found {
		p, _ := exec.LookPath("containerd")
		return filepath.Dir(p), nil
	}
	dir, err := repoScript("installing containerd and runc", "test", "infra", "node", "install-runtime.sh")
	if err != nil {
		return "", fmt.Errorf("containerd is missing: %w", err)
	}
	return dir, nil
}

func (n *Node) startContainerd(ctx context.Context) error {
	dir := filepath.Join(n.Dir, "containerd")
	// A unix socket path is limited to 108 bytes; the temporary folder is short enough.
	n.socket = filepath.Join(dir, "containerd.sock")
	cni, err := n.cniConfig()
	if err != nil {
		return err
	}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # The sandbox lacks CAP_SYS_RESOURCE: runc could not set a negative oom_score_adj.
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Pod network namespaces under the node's folder, which its stop unmounts.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
%s`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), n.socket, n.socket+".ttrpc", PauseImage, cni)
	configPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return err
	}
	// Every node's hostNetwork pods see the machine's hostname, as two pods with the
	// host's network on one node do: whatever names itself by its hostname alone (a
	// leader election identity of hostname_pid, both replicas PID 1) collides, and the
	// deploy tests show reconcile's does not.
	bin, args := filepath.Join(n.runtimeDir, "containerd"), []string{"--config", configPath}
	n.containerd, err = n.startProcess("containerd"+n.suffix(), bin, args, n.runtimeEnv())
	if err != nil {
		return err
	}
	return n.cp.waitReady(ctx, n.containerd, func() bool {
		return exec.CommandContext(ctx, filepath.Join(n.runtimeDir, "ctr"), "--address", n.socket, "version").Run() == nil
	}, 30*time.Second)
}

// runtimeEnv puts the runtime's folder first on PATH: containerd finds its shim and runc there.
func (n *Node) runtimeEnv() []string {
	return append(os.Environ(), "PATH="+n.runtimeDir+":"+os.Getenv("PATH"))
}

func (n *Node) ctr(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.runtimeDir, "ctr"), append([]string{"--address", n.socket, "--namespace", "k8s.io"}, args...)...)
	cmd.Env = n.runtimeEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}

// Ctr runs containerd's ctr against n's runtime, in the namespace the kubelet's
// containers and images live in (k8s.io), and returns what it printed on stdout; a
// failure's error carries its stderr. Tests read back what the runtime holds with it
// (`images ls`, `content get`), and act on a container as the machine would
// (KillContainer).
func (n *Node) Ctr(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.runtimeDir, "ctr"), append([]string{"--address", n.socket, "--namespace", "k8s.io"}, args...)...)
	cmd.Env = n.runtimeEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

// KillContainer sends SIGKILL to the task of a container the kubelet runs on n, through
// n's containerd, as a crash or the OOM killer would end it: no SIGTERM, nothing the
// process can clean up. The kubelet sees the container exit (137) and restarts it by
// the pod's restartPolicy. id is a pod status's containerID (containerd://<id>) or the
// bare id.
func (n *Node) KillContainer(ctx context.Context, id string) error {
	bare := strings.TrimPrefix(id, "containerd://")
	if bare == "" || strings.Contains(bare, "://") {
		return fmt.Errorf("container id %q is not one of containerd's", id)
	}
	_, err := n.Ctr(ctx, "tasks", "kill", "--signal", "SIGKILL", bare)
	return err
}

// StopKubelet stops the node's kubelet (SIGTERM, then SIGKILL after 10 s), as a machine
// whose kubelet died: its containers keep running, its Node object and Lease stay as it
// last wrote them, and nothing finishes the deletion of its pods. The node's stop at the
// end of the package still removes the containers.
func (n *Node) StopKubelet() {
	n.kubelet.stop(10 * time.Second)
}

// ImportImage loads an image archive (docker save or OCI format) into the node's runtime,
// where pods find it without pulling.
func (n *Node) ImportImage(ctx context.Context, archive string) error {
	_, err := n.ctr(ctx, "images", "import", archive)
	return err
}

// CopyImage loads image ref of n's runtime into to's: an image built or imported once
// runs on every node. The archive is kept in n's images folder.
func (n *Node) CopyImage(ctx context.Context, ref string, to *Node) error {
	archive := filepath.Join(n.Dir, "images", "copy-"+strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
	if _, err := n.ctr(ctx, "images", "export", archive, ref); err != nil {
		return err
	}
	return to.ImportImage(ctx, archive)
}

// PackImage runs hack/image (see its doc) with args, writing an image archive to out, and
// loads it into the node's runtime.
func (n *Node) PackImage(ctx context.Context, out string, args ...string) error {
	if n.imageTool == "" {
		root, err := repoRoot()
		if err != nil {
			return err
		}
		tool := filepath.Join(n.Dir, "images", "image")
		if err := goBuild(ctx, filepath.Join(root, "hack", "image"), tool, "."); err != nil {
			return err
		}
		n.imageTool = tool
	}
	cmd := exec.CommandContext(ctx, n.imageTool, append(args, "-out", out)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("hack/image %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(b))
	}
	return n.ImportImage(ctx, out)
}

// GoImage builds the Go main package pkg of this repository (e.g. "./test/node/probe")
// statically and loads it into the node's runtime as image tag, running as 65532:65532
// with the binary as its entrypoint.
func (n *Node) GoImage(ctx context.Context, tag, pkg string) error {
	return n.buildImage(ctx, tag, pkg, "65532:65532")
}

func (n *Node) buildImage(ctx context.Context, tag, pkg, user string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	base := filepath.Base(pkg)
	bin := filepath.Join(n.Dir, "images", base)
	if err := goBuild(ctx, root, bin, pkg); err != nil {
		return err
	}
	archive := filepath.Join(n.Dir, "images", strings.NewReplacer("/", "_", ":", "_").Replace(tag)+".tar")
	return n.PackImage(ctx, archive, "-tag", tag, "-add", bin+":/"+base, "-entrypoint", "/"+base, "-user", user)
}

// goBuild builds a static binary of pkg in the module at dir.
func goBuild(ctx context.Context, dir, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s in %s: %w: %s", pkg, dir, err, bytes.TrimSpace(b))
	}
	return nil
}

func (n *Node) startScheduler(ctx context.Context) error {
	kubeconfig, err := n.cp.componentKubeconfig("kube-scheduler", "system:kube-scheduler", "system:masters")
	if err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	n.scheduler, err = startProcess("kube-scheduler", filepath.Join(n.cp.BinDir, "kube-scheduler"), flagList(map[string]string{
		"kubeconfig":                kubeconfig,
		"authentication-kubeconfig": kubeconfig,
		"authorization-kubeconfig":  kubeconfig,
		"leader-elect":              "false",
		"bind-address":              "127.0.0.1",
		"secure-port":               strconv.Itoa(ports[0]),
		"cert-dir":                  filepath.Join(n.cp.Dir, "scheduler-certs"),
		"v":                         "1",
	}), n.cp.Dir, false)
	if err != nil {
		return err
	}
	return n.cp.waitHealthz(ctx, n.scheduler, ports[0])
}

func (n *Node) startKubelet(ctx context.Context) error {
	cp := n.cp
	kubeconfig, err := cp.componentKubeconfig("kubelet"+n.suffix(), "system:node:"+n.Name, "system:nodes")
	if err != nil {
		return err
	}
	certFile, keyFile, err := cp.certs.write("kubelet"+n.suffix(), cp.certs.ca.Serving("system:node:"+n.Name, n.Name))
	if err != nil {
		return err
	}
	// A port free on 127.0.0.1; the kubelet binds it on the node's own address.
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	n.kubeletPort = ports[0]
	config := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1",
		"kind":       "KubeletConfiguration",
		// cgroup v1 here, and no systemd: kubelet v1.35+ refuses cgroup v1 unless told.
		"failCgroupV1":           false,
		"cgroupDriver":           "cgroupfs",
		"cgroupsPerQOS":          false,
		"enforceNodeAllocatable": []string{},
		"failSwapOn":             false,
		// A test machine's disk and memory are not the kubelet's to police.
		"evictionHard":                  map[string]string{},
		"imageGCHighThresholdPercent":   100,
		"imageGCLowThresholdPercent":    99,
		"localStorageCapacityIsolation": false,
		// The kubelet's API on the node's own loopback address only, with our CA; no
		// read-only port, no healthz port.
		"address":           n.Name,
		"port":              n.kubeletPort,
		"readOnlyPort":      0,
		"healthzPort":       0,
		"tlsCertFile":       certFile,
		"tlsPrivateKeyFile": keyFile,
		"authentication": map[string]any{
			"anonymous": map[string]bool{"enabled": false},
			"webhook":   map[string]bool{"enabled": true},
			"x509":      map[string]string{"clientCAFile": cp.certs.path("ca.crt")},
		},
		"authorization":             map[string]string{"mode": "Webhook"},
		"containerRuntimeEndpoint":  "unix://" + n.socket,
		"podLogsDir":                filepath.Join(n.Dir, "pod-logs"),
		"registerNode":              true,
		"serializeImagePulls":       false,
		"nodeStatusUpdateFrequency": "2s",
	}
	n.kubeletConfig(config)
	b, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return err
	}
	configPath := filepath.Join(n.Dir, "kubelet-config.json")
	if err := os.WriteFile(configPath, b, 0o600); err != nil {
		return err
	}
	if err := n.forwardKubelet(); err != nil {
		return err
	}
	n.kubelet, err = n.startProcess("kubelet"+n.suffix(), filepath.Join(cp.BinDir, "kubelet"), flagList(map[string]string{
		"config":            configPath,
		"kubeconfig":        kubeconfig,
		"root-dir":          filepath.Join(n.Dir, "kubelet"),
		"cert-dir":          filepath.Join(n.Dir, "kubelet", "pki"),
		"hostname-override": n.Name,
		"v":                 "1",
	}), n.runtimeEnv())
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	return cp.waitReady(ctx, n.kubelet, func() bool {
		node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		return err == nil && node.Status.DaemonEndpoints.KubeletEndpoint.Port == int32(n.kubeletPort) //nolint:gosec // a port fits
	}, 60*time.Second)
}

// componentKubeconfig writes a kubeconfig for a component authenticated as user.
func (cp *ControlPlane) componentKubeconfig(name, user string, groups ...string) (string, error) {
	cfg, err := cp.clientCertConfig(user, groups...)
	if err != nil {
		return "", err
	}
	path := filepath.Join(cp.Dir, name+".kubeconfig")
	return path, WriteKubeconfig(cfg, path)
}

// waitHealthz waits until a component serves /healthz on port of loopback.
func (cp *ControlPlane) waitHealthz(ctx context.Context, p *process, port int) error {
	healthz := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	// Only liveness is read here, from a port this process just picked on loopback.
	insecure := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above
	return cp.waitReady(ctx, p, func() bool {
		resp, err := insecure.Get(healthz)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second)
}

// nodeAPIServerFlags are kube-apiserver's flags for a control plane with a node: the
// Node authorizer for the kubelet, the ServiceAccount admission plugin (pods get their
// token), and the way to the kubelet for logs and exec (its InternalIP, 127.0.0.1).
func (cp *ControlPlane) nodeAPIServerFlags(flags map[string]string) error {
	certFile, keyFile, err := cp.certs.write("apiserver-kubelet-client", cp.certs.ca.Client("kube-apiserver-kubelet-client", "system:masters"))
	if err != nil {
		return err
	}
	flags["authorization-mode"] = "Node,RBAC"
	flags["disable-admission-plugins"] = ""
	flags["enable-admission-plugins"] = "NodeRestriction"
	flags["kubelet-client-certificate"] = certFile
	flags["kubelet-client-key"] = keyFile
	flags["kubelet-certificate-authority"] = cp.certs.path("ca.crt")
	flags["kubelet-preferred-address-types"] = "InternalIP"
	return nil
}

// NetworkOverlay makes a pod spec fit the test node and the network rule: the pod runs
// in the host's network namespace, and every container reaches the API server on its
// loopback address through KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, never
// through the kubernetes Service's ClusterIP (a private address in the machine's own
// namespace). Service links are off, so no other ClusterIP reaches a container's
// environment. The pod tolerates the node's NotReady state (there is no pod network).
// The node refuses a pod without this overlay.
func (cp *ControlPlane) NetworkOverlay(spec *corev1.PodSpec) {
	NetworkOverlay(cp.APIServerPort(), spec)
}

// NetworkOverlay is ControlPlane.NetworkOverlay for the API server on 127.0.0.1:port,
// for a process that has the port and not the control plane (a post-renderer).
func NetworkOverlay(port string, spec *corev1.PodSpec) {
	spec.HostNetwork = true
	spec.EnableServiceLinks = ptr.To(false)
	spec.DNSPolicy = corev1.DNSDefault
	for _, key := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/network-unavailable"} {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
	env := []corev1.EnvVar{
		{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"},
		{Name: "KUBERNETES_SERVICE_PORT", Value: port},
	}
	set := func(cs []corev1.Container) {
		for i := range cs {
			cs[i].Env = slices.DeleteFunc(slices.Clone(cs[i].Env), func(e corev1.EnvVar) bool {
				return e.Name == "KUBERNETES_SERVICE_HOST" || e.Name == "KUBERNETES_SERVICE_PORT"
			})
			cs[i].Env = append(cs[i].Env, env...)
		}
	}
	set(spec.InitContainers)
	set(spec.Containers)
}

// APIServerPort is the port kube-apiserver listens on, on 127.0.0.1.
func (cp *ControlPlane) APIServerPort() string {
	return cp.apiURL[strings.LastIndex(cp.apiURL, ":")+1:]
}

const guardName = "kubectl-finalize-test-network-rule"

// guardNetwork installs a ValidatingAdmissionPolicy that refuses any pod that could send
// traffic to a ClusterIP from the machine's own network namespace: every pod must carry
// NetworkOverlay (host network, service links off, the API server on loopback).
func (cp *ControlPlane) guardNetwork(ctx context.Context) error {
	if cp.podNet != nil {
		return cp.guardPodNetwork(ctx)
	}
	client, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	onLoopback := func(field string) string {
		return fmt.Sprintf("(!has(object.spec.%[1]s) || object.spec.%[1]s.all(c, has(c.env) && "+
			"c.env.exists(e, e.name == 'KUBERNETES_SERVICE_HOST') && "+
			"c.env.all(e, e.name != 'KUBERNETES_SERVICE_HOST' || (has(e.value) && e.value == '127.0.0.1')) && "+
			"c.env.exists(e, e.name == 'KUBERNETES_SERVICE_PORT' && has(e.value) && e.value == '%[2]s')))", field, cp.APIServerPort())
	}
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: guardName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: "has(object.spec.hostNetwork) && object.spec.hostNetwork",
					Message:    "network rule: the test node has no pod network; a pod must use the host network with controlplane.NetworkOverlay",
				},
				{
					Expression: "has(object.spec.enableServiceLinks) && !object.spec.enableServiceLinks",
					Message:    "network rule: service links put ClusterIPs into the environment; use controlplane.NetworkOverlay",
				},
				{
					Expression: onLoopback("containers") + " && " + onLoopback("initContainers"),
					Message:    "network rule: every container must reach the API server on loopback (KUBERNETES_SERVICE_HOST=127.0.0.1, KUBERNETES_SERVICE_PORT=" + cp.APIServerPort() + "), never the kubernetes Service's ClusterIP; use controlplane.NetworkOverlay",
				},
			},
		},
	}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: guardName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        guardName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// The policy takes effect asynchronously: wait until a pod without the overlay is refused.
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "network-rule-probe", Namespace: metav1.NamespaceDefault},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: PauseImage}}},
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return false, nil
		}
		return strings.Contains(err.Error(), "network rule"), nil
	})
}

// stop stops the kubelet, removes every container the runtime runs (their shims outlive
// containerd), stops containerd and kube-scheduler, and unmounts what is left under Dir.
func (n *Node) stop() {
	if n == nil {
		return
	}
	began := time.Now()
	defer func() {
		n.cp.logf("controlplane: node %s stopped in %s", n.Name, time.Since(began).Round(time.Millisecond))
	}()
	n.kubelet.stop(10 * time.Second)
	if n.containerd != nil {
		if done, _ := n.containerd.exited(); !done {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			n.removeContainers(ctx)
			cancel()
		}
	}
	n.containerd.stop(10 * time.Second)
	n.scheduler.stop(10 * time.Second)
	n.killShims()
	n.killContainerProcesses()
	unmountUnder(n.Dir)
	removeLinksInto("/var/log/containers", n.Dir)
}

// removeLinksInto removes the symbolic links in dir that point into target: the kubelet
// links every container's log from the fixed /var/log/containers.
func removeLinksInto(dir, target string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		link := filepath.Join(dir, e.Name())
		if to, err := os.Readlink(link); err == nil && strings.HasPrefix(to, target+"/") {
			_ = os.Remove(link)
		}
	}
}

func (n *Node) removeContainers(ctx context.Context) {
	out, err := n.ctr(ctx, "tasks", "ls", "-q")
	if err != nil {
		return
	}
	tasks := strings.Fields(string(out))
	for _, id := range tasks {
		_, _ = n.ctr(ctx, "tasks", "kill", "--all", "--signal", "SIGKILL", id)
	}
	for _, id := range tasks {
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
			// The CRI plugin deletes a task it sees exit: then it is not found.
			_, err := n.ctr(ctx, "tasks", "delete", "--force", id)
			return err == nil || strings.Contains(err.Error(), "not found"), nil
		})
	}
	if out, err := n.ctr(ctx, "containers", "ls", "-q"); err == nil {
		for _, id := range strings.Fields(string(out)) {
			_, _ = n.ctr(ctx, "containers", "delete", id)
		}
	}
}

// killShims kills any containerd-shim left running for this node's containerd: shims are
// found by the socket address on their command line, which is this node's alone.
func (n *Node) killShims() {
	entries, err := os.ReadDir("/proc")
	if err != nil || n.socket == "" {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") && strings.Contains(string(cmdline), "\x00"+n.socket+"\x00") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// killContainerProcesses kills what is left of containers whose root filesystem lies
// under Dir: a container being created when the node stops (a Deployment replacing a
// deleted pod) may not be a task containerd lists yet, and its "runc init" outlives the
// shim killShims kills. Its cgroups, under the runtime's k8s.io parent, are removed
// once it is gone.
func (n *Node) killContainerProcesses() {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	var cgroups []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := os.Open("/proc/" + e.Name() + "/mountinfo")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		ours := false
		for sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == "/" {
				ours = strings.Contains(sc.Text(), n.Dir+"/")
				break
			}
		}
		_ = f.Close()
		if !ours {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cgroup"); err == nil {
			for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
				// hierarchy-ID:controllers:path; only the runtime's own cgroups.
				if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && strings.HasPrefix(parts[2], "/k8s.io/") {
					ctrl := strings.TrimPrefix(parts[1], "name=")
					if ctrl == "" {
						ctrl = "unified"
					}
					cgroups = append(cgroups, filepath.Join(cgroupRoot, strings.SplitN(ctrl, ",", 2)[0], parts[2]))
				}
			}
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, c := range cgroups {
		// A killed process leaves its cgroup a moment later.
		_ = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 2*time.Second, true, func(context.Context) (bool, error) {
			err := syscall.Rmdir(c)
			return err == nil || errors.Is(err, os.ErrNotExist), nil
		})
	}
}

// cgroupRoot is where cgroup v1 mounts each hierarchy, and v2 its unified one.
const cgroupRoot = "/sys/fs/cgroup"

// unmountUnder lazily unmounts every mount point under dir, deepest first, so that the
// folder can be removed (the kubelet mounts volumes, containerd root filesystems).
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	_ = f.Close()
	for i := len(points) - 1; i >= 0; i-- {
		_ = syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}

// processes lists the node's components for Logs.
func (n *Node) processes() []*process {
	if n == nil {
		return nil
	}
	return []*process{n.containerd, n.scheduler, n.kubelet}
}

// errNodeDetached: a detached node would need its shims and mounts cleaned by StopDir.
var errNodeDetached = errors.New("a node cannot be detached")

// repoScript runs one of the repository's scripts that build or install something and
// print its folder (test/infra/node/install-runtime.sh, test/infra/cni/build.sh), with its progress
// on stderr, and returns that folder; what says what the script is for, in errors.
func repoScript(what string, path ...string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(append([]string{root}, path...)...))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s with %s: %w", what, filepath.Join(path...), err)
	}
	return strings.TrimSpace(string(out)), nil
}
