package controlplane

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// The pod network (Options.PodNetwork) gives the test nodes' pods a real network, all of
// it inside one network namespace the control plane creates (kf-<random>, with `ip netns
// add`) and deletes when it stops:
//
//   - every node's containerd and kubelet run in that namespace (a process started from
//     a thread that entered it), so the CNI bridge plugin, which makes the bridge and the
//     veth ends in its caller's namespace, puts them there; containerd's CNI bin_dir is
//     test/infra/cni's build (bridge, host-local, loopback), its conf_dir a bridge conflist of
//     the node's own;
//   - node i's pods get addresses of 10.88.i.0/24 on bridge kf<i>, whose gateway
//     10.88.i.1 is made before any pod so that a test can listen there (Node.Listen).
//     No masquerading, no port mapping, no route out: the namespace has no interface
//     but its loopback, the bridges and their veth ends;
//   - the kubernetes Service's ClusterIP (10.0.0.1) is an address of the namespace's
//     loopback, where the control plane listens on port 443 and forwards each connection
//     to kube-apiserver on the machine's 127.0.0.1. Pods reach the API server as in a
//     real cluster, through the KUBERNETES_SERVICE_HOST/PORT the kubelet gives them, with
//     no network setting of their own; the serving certificate names the ClusterIP;
//   - the kubelets reach the API server on the namespace's 127.0.0.1:<port>, forwarded
//     the same way, and kube-apiserver reaches each kubelet on the node's loopback
//     address in the machine's namespace, forwarded into the pod network.
//
// Nothing of it is in the machine's own namespace but listeners on loopback; no address
// of a private range, no interface and no route are added there.
type podNetwork struct {
	// name is the namespace's name under /run/netns; ns the namespace, host the
	// machine's own (this process's when the pod network was made).
	name     string
	ns, host *os.File
	ip       string // iproute2's ip
	// cniBin holds the CNI plugins; serviceIP is the kubernetes Service's ClusterIP.
	cniBin    string
	serviceIP string

	mu        sync.Mutex
	listeners []net.Listener
	// viaClusterIP counts the connections to the ClusterIP's forwarder.
	viaClusterIP atomic.Int64
}

// Pod network addresses: node i's pods are on bridge kf<i>, in 10.88.i.0/24, with the
// gateway 10.88.i.1.
const podSubnetPrefix = "10.88."

func podBridge(i int) string  { return fmt.Sprintf("kf%d", i) }
func podGateway(i int) string { return fmt.Sprintf("%s%d.1", podSubnetPrefix, i) }
func podSubnet(i int) string  { return fmt.Sprintf("%s%d.0/24", podSubnetPrefix, i) }

// index is n's place in cp.Nodes.
func (n *Node) index() int {
	for i, m := range n.cp.Nodes {
		if m == n {
			return i
		}
	}
	return 0
}

// PodNetwork reports whether the node's pods have the pod network (Options.PodNetwork).
func (n *Node) PodNetwork() bool { return n.cp.podNet != nil }

// Gateway is the address of n's bridge in the pod network, where n's pods have their
// default route: a test server listening there (Listen) is reachable from them. Empty
// without a pod network.
func (n *Node) Gateway() string {
	if n.cp.podNet == nil {
		return ""
	}
	return podGateway(n.index())
}

// PodSubnet is the range n's pods get their addresses from; empty without a pod network.
func (n *Node) PodSubnet() string {
	if n.cp.podNet == nil {
		return ""
	}
	return podSubnet(n.index())
}

// Listen listens on address (host:port; Gateway() for pods to reach it) inside the pod
// network's namespace: only pods and other processes in that namespace can connect.
func (n *Node) Listen(network, address string) (net.Listener, error) {
	if n.cp.podNet == nil {
		return nil, errors.New("the control plane has no pod network (Options.PodNetwork)")
	}
	return n.cp.podNet.listen(network, address)
}

// PodNetworkNamespace is the name of the network namespace of the pod network (`ip -n
// NAME ...`), or empty.
func (cp *ControlPlane) PodNetworkNamespace() string {
	if cp.podNet == nil {
		return ""
	}
	return cp.podNet.name
}

// ClusterIPConnections counts the connections made so far to the API server at the
// kubernetes Service's ClusterIP, which only pods of the pod network make (a kubelet
// uses 127.0.0.1); 0 without a pod network.
func (cp *ControlPlane) ClusterIPConnections() int64 {
	if cp.podNet == nil {
		return 0
	}
	return cp.podNet.viaClusterIP.Load()
}

// InPodNetwork runs fn on a thread inside the pod network's namespace: what fn dials,
// listens on or reads of the network is that namespace's. fn must not start goroutines
// that use the network.
func (cp *ControlPlane) InPodNetwork(fn func() error) error {
	if cp.podNet == nil {
		return errors.New("the control plane has no pod network (Options.PodNetwork)")
	}
	return cp.podNet.do(fn)
}

// startPodNetwork makes the pod network's namespace, its loopback with the kubernetes
// Service's ClusterIP, every node's bridge, and the forwarders to kube-apiserver; the
// nodes start in it afterwards.
func (cp *ControlPlane) startPodNetwork(ctx context.Context) error {
	began := time.Now()
	p := &podNetwork{}
	var err error
	if p.ip, err = ipTool(); err != nil {
		return err
	}
	if p.cniBin, err = cniBinDir(); err != nil {
		return err
	}
	if p.serviceIP, err = cp.serviceClusterIP(ctx); err != nil {
		return err
	}
	if p.host, err = os.Open("/proc/self/ns/net"); err != nil {
		return err
	}
	p.removeStale()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	p.name = "kf-" + hex.EncodeToString(suffix)
	if err := p.run("netns", "add", p.name); err != nil {
		_ = p.host.Close()
		return err
	}
	cp.podNet = p // from here on, Stop deletes it
	if p.ns, err = os.Open(netnsDir + p.name); err != nil {
		return err
	}
	steps := [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", p.serviceIP + "/32", "dev", "lo"},
	}
	for i := range cp.Nodes {
		steps = append(steps,
			[]string{"link", "add", podBridge(i), "type", "bridge"},
			[]string{"addr", "add", podGateway(i) + "/24", "dev", podBridge(i)},
			[]string{"link", "set", podBridge(i), "up"})
	}
	for _, s := range steps {
		if err := p.run(append([]string{"-n", p.name}, s...)...); err != nil {
			return err
		}
	}
	// The kubelets' way to the API server (their kubeconfig's 127.0.0.1:<port>, or a
	// NetworkOverlay pod's), and the pods' (the ClusterIP).
	apiserver := "127.0.0.1:" + cp.APIServerPort()
	for _, addr := range []string{apiserver, net.JoinHostPort(p.serviceIP, "443")} {
		l, err := p.listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listening on %s in the pod network: %w", addr, err)
		}
		viaClusterIP := addr != apiserver
		p.forward(l, func() (net.Conn, error) {
			if viaClusterIP {
				p.viaClusterIP.Add(1)
			}
			return net.DialTimeout("tcp", apiserver, 10*time.Second)
		})
	}
	cp.logf("controlplane: pod network %s ready after %s: ClusterIP %s, pods in %s", p.name, time.Since(began).Round(time.Millisecond), p.serviceIP, podSubnet(0))
	return nil
}

// serviceClusterIP waits for the kubernetes Service, which kube-apiserver makes at
// start, and returns its ClusterIP.
func (cp *ControlPlane) serviceClusterIP(ctx context.Context) (string, error) {
	client, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return "", err
	}
	var ip string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		svc, err := client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
		if err == nil {
			ip = svc.Spec.ClusterIP
		}
		return err == nil, nil
	})
	if err != nil {
		return "", fmt.Errorf("the kubernetes Service: %w", err)
	}
	if ip != kubernetesServiceIP {
		return "", fmt.Errorf("the kubernetes Service's ClusterIP is %s, but the API server's certificate names %s", ip, kubernetesServiceIP)
	}
	return ip, nil
}

// netnsDir is where `ip netns` keeps the namespaces it names.
const netnsDir = "/run/netns/"

// kubernetesServiceIP is the ClusterIP of the kubernetes Service: the first address of
// --service-cluster-ip-range (10.0.0.0/24). The serving certificate names it.
const kubernetesServiceIP = "10.0.0.1"

// ipTool finds iproute2's ip, installing iproute2 from Debian when it is missing.
func ipTool() (string, error) {
	if p, err := exec.LookPath("ip"); err == nil {
		return p, nil
	}
	if os.Getuid() != 0 {
		return "", errors.New("the pod network needs iproute2's ip, and installing it needs root: apt-get install -y iproute2")
	}
	cmd := exec.Command("apt-get", "install", "-y", "--no-install-recommends", "iproute2")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("installing iproute2 for the pod network: %w: %s", err, bytes.TrimSpace(out))
	}
	return exec.LookPath("ip")
}

// cniBinDir is the folder of the CNI plugins: $KUBECTL_FINALIZE_CNI_BINS, else the one
// test/infra/cni/build.sh prints (building them on first use).
func cniBinDir() (string, error) {
	dir := os.Getenv("KUBECTL_FINALIZE_CNI_BINS")
	if dir == "" {
		var err error
		if dir, err = repoScript("building the CNI plugins", "test", "infra", "cni", "build.sh"); err != nil {
			return "", fmt.Errorf("KUBECTL_FINALIZE_CNI_BINS is not set: %w", err)
		}
	}
	for _, b := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("CNI plugin %s missing in %s (run test/infra/cni/build.sh): %w", b, dir, err)
		}
	}
	return dir, nil
}

func (p *podNetwork) run(args ...string) error {
	if out, err := exec.Command(p.ip, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// removeStale deletes the pod networks of test processes that died without stopping
// them (a SIGKILL, a test binary's timeout): kf-* namespaces older than a minute that no
// process is in. A live control plane's always holds its containerd. Only the
// namespaces are left by such a death: their processes die with the test (a
// parent-death signal), and whatever was in them lies inside them.
func (p *podNetwork) removeStale() {
	entries, err := os.ReadDir(netnsDir)
	if err != nil {
		return
	}
	inUse := map[uint64]bool{}
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) == nil {
			inUse[st.Ino] = true
		}
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "kf-") {
			continue
		}
		var st unix.Stat_t
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < time.Minute || unix.Stat(netnsDir+e.Name(), &st) != nil || inUse[st.Ino] {
			continue
		}
		_ = p.run("netns", "delete", e.Name())
	}
}

// do runs fn on an OS thread of its own that entered the pod network's namespace. What
// fn starts (a process, a socket) is of that namespace. The thread goes back to the
// machine's namespace afterwards; if it cannot, it is never used again.
func (p *podNetwork) do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(p.ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering the pod network %s: %w", p.name, err)
			return
		}
		err := fn()
		if serr := unix.Setns(int(p.host.Fd()), unix.CLONE_NEWNET); serr != nil {
			// Still locked: the runtime ends the thread with this goroutine.
			errc <- errors.Join(err, fmt.Errorf("leaving the pod network %s: %w", p.name, serr))
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// listen listens inside the namespace; the listener is closed when the pod network stops.
func (p *podNetwork) listen(network, address string) (net.Listener, error) {
	var l net.Listener
	err := p.do(func() error {
		var err error
		l, err = net.Listen(network, address)
		return err
	})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.listeners = append(p.listeners, l)
	p.mu.Unlock()
	return l, nil
}

// dial connects to address inside the namespace.
func (p *podNetwork) dial(address string) (net.Conn, error) {
	var c net.Conn
	err := p.do(func() error {
		var err error
		c, err = net.DialTimeout("tcp", address, 10*time.Second)
		return err
	})
	return c, err
}

// forward accepts on l and joins each connection to one dial makes, both ways, until
// either side closes.
func (p *podNetwork) forward(l net.Listener, dial func() (net.Conn, error)) {
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := dial()
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{}, 2)
				pipe := func(dst, src net.Conn) {
					_, _ = io.Copy(dst, src)
					if tc, ok := dst.(*net.TCPConn); ok {
						_ = tc.CloseWrite()
					}
					done <- struct{}{}
				}
				go pipe(up, c)
				go pipe(c, up)
				<-done
				<-done
			}()
		}
	}()
}

// forwardKubelet lets kube-apiserver reach n's kubelet: its InternalIP, n.Name, is a
// loopback address of the machine's namespace, where this listens on the kubelet's
// port and forwards into the pod network, where the kubelet listens on the same.
func (n *Node) forwardKubelet() error {
	p := n.cp.podNet
	if p == nil {
		return nil
	}
	addr := net.JoinHostPort(n.Name, strconv.Itoa(n.kubeletPort))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s for the kubelet in the pod network: %w", addr, err)
	}
	p.mu.Lock()
	p.listeners = append(p.listeners, l)
	p.mu.Unlock()
	p.forward(l, func() (net.Conn, error) { return p.dial(addr) })
	return nil
}

// startProcess starts one of n's components: in the pod network's namespace when there
// is one, else in the machine's.
func (n *Node) startProcess(name, bin string, args []string, env []string) (*process, error) {
	p := n.cp.podNet
	if p == nil {
		return startProcessEnv(name, bin, args, n.cp.Dir, false, env)
	}
	var proc *process
	err := p.do(func() error {
		var err error
		proc, err = startProcessEnv(name, bin, args, n.cp.Dir, false, env)
		return err
	})
	return proc, err
}

// cniConfig is the CNI part of containerd's CRI configuration: with a pod network, the
// plugins of test/infra/cni and a bridge conflist of n's own, written into n's folder;
// without, an empty folder (pods use the host's network only).
func (n *Node) cniConfig() (string, error) {
	dir := filepath.Join(n.Dir, "containerd")
	p := n.cp.podNet
	if p == nil {
		return fmt.Sprintf(`  [plugins."io.containerd.grpc.v1.cri".cni]
    # No CNI: pods run with the host's network only.
    bin_dir = %q
    conf_dir = %q
`, filepath.Join(dir, "no-cni"), filepath.Join(dir, "no-cni")), nil
	}
	confDir := filepath.Join(n.Dir, "cni", "net.d")
	if err := os.MkdirAll(confDir, 0o700); err != nil {
		return "", err
	}
	i := n.index()
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "kubectl-finalize-pods",
		"plugins": []any{map[string]any{
			"type":             "bridge",
			"bridge":           podBridge(i),
			"isGateway":        true,
			"isDefaultGateway": true,
			// Nothing leaves the namespace: no masquerading, no port mapping.
			"ipMasq":      false,
			"hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]string{{{"subnet": podSubnet(i), "gateway": podGateway(i)}}},
				"dataDir": filepath.Join(n.Dir, "cni", "ipam"),
			},
		}},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(confDir, "10-pods.conflist"), b, 0o600); err != nil {
		return "", err
	}
	return fmt.Sprintf(`  [plugins."io.containerd.grpc.v1.cri".cni]
    # The pod network: test/infra/cni's plugins, a bridge in the network namespace containerd
    # runs in (see podnetwork.go).
    bin_dir = %q
    conf_dir = %q
`, p.cniBin, confDir), nil
}

// kubeletConfig adjusts a kubelet's configuration to the pod network: pods get no
// nameserver (there is no cluster DNS, and the machine's would be out of reach).
func (n *Node) kubeletConfig(config map[string]any) {
	if n.cp.podNet != nil {
		config["resolvConf"] = ""
	}
}

// stop closes the forwarders and deletes the namespace; the nodes have stopped, so
// nothing runs in it any more.
func (p *podNetwork) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	for _, l := range p.listeners {
		_ = l.Close()
	}
	p.listeners = nil
	p.mu.Unlock()
	if p.ns != nil {
		_ = p.ns.Close()
	}
	_ = p.run("netns", "delete", p.name)
	_ = p.host.Close()
}

const podNetworkGuardName = "kubectl-finalize-test-pod-network-rule"

// guardPodNetwork installs the network guard of a control plane with a pod network.
// Every node's kubelet runs in the pod network, so a pod, with the host's network or
// not, never runs in the machine's own namespace as long as it runs on one of those
// nodes: no other node may register, and no pod may be created on or bound to another.
// kube-apiserver itself runs in the machine's namespace: it would reach a pod's or a
// Service's address from there, so the API server's proxy to pods and Services is
// refused, and so are webhooks and APIServices that name a Service (the API server
// would call its ClusterIP). No pod may have what it takes to enter the machine's
// namespace by itself: hostPID, a privileged or CAP_SYS_ADMIN container.
func (cp *ControlPlane) guardPodNetwork(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	names := make([]string, len(cp.Nodes))
	for i, n := range cp.Nodes {
		names[i] = strconv.Quote(n.Name)
	}
	ours := "[" + strings.Join(names, ", ") + "]"
	const why = "network rule: every node of this control plane runs in its pod network; "
	type rule struct {
		ops        []admissionregistrationv1.OperationType
		group      string
		resources  []string
		expression string
		message    string
	}
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	// A container that may enter another process's namespaces (CAP_SYS_ADMIN) and sees
	// the machine's processes (hostPID) could join the machine's network namespace.
	confined := func(field string) string {
		return fmt.Sprintf("(!has(object.spec.%[1]s) || object.spec.%[1]s.all(c, !has(c.securityContext) || "+
			"((!has(c.securityContext.privileged) || !c.securityContext.privileged) && "+
			"(!has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add) || "+
			"!c.securityContext.capabilities.add.exists(x, x in ['SYS_ADMIN', 'CAP_SYS_ADMIN', 'ALL'])))))", field)
	}
	rules := []rule{
		{create, "", []string{"pods"}, "!has(object.spec.nodeName) || object.spec.nodeName == '' || object.spec.nodeName in " + ours,
			why + "a pod may only be placed on one of " + ours},
		{create, "", []string{"pods"}, "(!has(object.spec.hostPID) || !object.spec.hostPID) && " + confined("containers") + " && " + confined("initContainers"),
			"network rule: a pod with hostPID, or a privileged or CAP_SYS_ADMIN container, could enter the machine's own network namespace"},
		{[]admissionregistrationv1.OperationType{admissionregistrationv1.Update}, "", []string{"pods/ephemeralcontainers"}, confined("ephemeralContainers"),
			"network rule: a privileged or CAP_SYS_ADMIN container could enter the machine's own network namespace"},
		{create, "", []string{"pods/binding"}, "object.target.name in " + ours,
			why + "a pod may only be bound to one of " + ours},
		{create, "", []string{"nodes"}, "object.metadata.name in " + ours,
			why + "no other node may register"},
		{[]admissionregistrationv1.OperationType{admissionregistrationv1.Connect}, "", []string{"pods/proxy", "services/proxy"}, "false",
			"network rule: kube-apiserver runs in the machine's own network namespace and would send this to a pod's or a Service's address from there"},
		{[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, "admissionregistration.k8s.io",
			[]string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"},
			"!has(object.webhooks) || object.webhooks.all(w, !has(w.clientConfig.service))",
			"network rule: kube-apiserver would call the webhook's Service at its ClusterIP from the machine's own network namespace; give it a url on loopback"},
		{[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, "apiregistration.k8s.io",
			[]string{"apiservices"}, "!has(object.spec.service)",
			"network rule: kube-apiserver would call the APIService's Service at its ClusterIP from the machine's own network namespace"},
		{[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, "apiextensions.k8s.io",
			[]string{"customresourcedefinitions"},
			"!has(object.spec.conversion) || !has(object.spec.conversion.webhook) || !has(object.spec.conversion.webhook.clientConfig) || !has(object.spec.conversion.webhook.clientConfig.service)",
			"network rule: kube-apiserver would call the conversion webhook's Service at its ClusterIP from the machine's own network namespace"},
	}
	fail := admissionregistrationv1.Fail
	for i, r := range rules {
		name := fmt.Sprintf("%s-%d", podNetworkGuardName, i)
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: &fail,
				MatchConstraints: &admissionregistrationv1.MatchResources{
					ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
						RuleWithOperations: admissionregistrationv1.RuleWithOperations{
							Operations: r.ops,
							Rule:       admissionregistrationv1.Rule{APIGroups: []string{r.group}, APIVersions: []string{"*"}, Resources: r.resources},
						},
					}},
				},
				Validations: []admissionregistrationv1.Validation{{Expression: r.expression, Message: r.message}},
			},
		}
		if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("policy %s: %w", name, err)
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		}
		if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("binding %s: %w", name, err)
		}
	}
	// The policies take effect asynchronously: wait until a pod placed elsewhere, a node
	// of another name and a webhook calling a Service are refused.
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "network-rule-probe", Namespace: metav1.NamespaceDefault},
			Spec:       corev1.PodSpec{NodeName: "elsewhere", Containers: []corev1.Container{{Name: "c", Image: PauseImage}}},
		}
		_, perr := client.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, dryRun)
		_, nerr := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, dryRun)
		none := admissionregistrationv1.SideEffectClassNone
		_, werr := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "network-rule-probe"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name:                    "probe.kubectl-finalize.test",
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "probe"}},
				SideEffects:             &none,
				AdmissionReviewVersions: []string{"v1"},
			}},
		}, dryRun)
		refused := func(err error) bool { return err != nil && strings.Contains(err.Error(), "network rule") }
		return refused(perr) && refused(nerr) && refused(werr), nil
	})
}

// podNetworkControllers are started with a pod network beside NodeControllers: the node
// lifecycle controller takes the not-ready taint, which every node registers with, off
// a node once it is Ready, which a node of the pod network becomes (its runtime's
// network is ready). Pods then need no toleration, as on a real cluster. It does not
// evict: that is the taint eviction controller's, which is not started.
var podNetworkControllers = []string{"node-lifecycle-controller"}
