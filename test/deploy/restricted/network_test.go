package restricted

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// hostNetwork is what the machine's own network namespace holds: its interfaces and
// their addresses, its IPv4 routes, its network namespaces and whether it forwards.
type hostNetwork struct {
	links     []string
	addresses []string // interface address/prefix
	routes    []string // /proc/net/route lines
	forward   string
}

func readHostNetwork() (hostNetwork, error) {
	var h hostNetwork
	ifs, err := net.Interfaces()
	if err != nil {
		return h, err
	}
	for _, i := range ifs {
		h.links = append(h.links, i.Name)
		addrs, err := i.Addrs()
		if err != nil {
			return h, err
		}
		for _, a := range addrs {
			h.addresses = append(h.addresses, i.Name+" "+a.String())
		}
	}
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return h, err
	}
	h.routes = strings.Split(strings.TrimSpace(string(b)), "\n")
	b, err = os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		return h, err
	}
	h.forward = strings.TrimSpace(string(b))
	slices.Sort(h.links)
	slices.Sort(h.addresses)
	slices.Sort(h.routes)
	return h, nil
}

// added is what now holds that before did not.
func added(before, now []string) []string {
	var a []string
	for _, s := range now {
		if !slices.Contains(before, s) {
			a = append(a, s)
		}
	}
	return a
}

// private reports whether an address (with or without a prefix) is in 10/8, 172.16/12
// or 192.168/16.
func private(addr string) bool {
	s, _, _ := strings.Cut(addr, "/")
	ip := net.ParseIP(s)
	return ip != nil && ip.To4() != nil && ip.IsPrivate()
}

// ipJSON runs `ip -j ARGS` inside the pod network's namespace and decodes its output.
func ipJSON(t *testing.T, out any, args ...string) {
	t.Helper()
	b, err := exec.Command("ip", append([]string{"-n", cp.PodNetworkNamespace(), "-j"}, args...)...).Output()
	if err != nil {
		t.Fatalf("ip -n %s -j %s: %v", cp.PodNetworkNamespace(), strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("ip -j %s: %v: %s", strings.Join(args, " "), err, b)
	}
}

type ipLink struct {
	IfName   string `json:"ifname"`
	Master   string `json:"master"`
	LinkKind string `json:"link_type"`
	AddrInfo []struct {
		Local     string `json:"local"`
		PrefixLen int    `json:"prefixlen"`
	} `json:"addr_info"`
}

// TestThePodNetworkIsContained: the pod network is inside the namespace the control
// plane made and nowhere else. In the machine's own namespace nothing was added since
// before the control plane started: no interface, no address (of a private range or
// any other), no route, and forwarding is as it was. Inside the namespace: the
// loopback holds the kubernetes Service's ClusterIP, the node's bridge its gateway, and
// a running pod's address is reached through that bridge by a veth end there; the
// machine has no address or route of the pod's.
func TestThePodNetworkIsContained(t *testing.T) {
	ns := cp.Namespace(t)
	kube := cp.Kube(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "contained"},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "pause", Image: controlplane.PauseImage, ImagePullPolicy: corev1.PullNever}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if _, err := kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	running := fixture.WaitPod(t, kube, ns, pod.Name, time.Minute, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" })
	t.Logf("a pod with the pod network ran after %s at %s on %s", time.Since(began).Round(time.Millisecond), running.Status.PodIP, running.Spec.NodeName)
	podIP := running.Status.PodIP
	_, subnet, err := net.ParseCIDR(cp.Node.PodSubnet())
	if err != nil {
		t.Fatal(err)
	}
	if running.Spec.HostNetwork || !subnet.Contains(net.ParseIP(podIP)) {
		t.Fatalf("the pod has hostNetwork %v and address %s, want its own address in %s", running.Spec.HostNetwork, podIP, subnet)
	}

	// The machine's own namespace, now that a pod runs.
	now, err := readHostNetwork()
	if err != nil {
		t.Fatal(err)
	}
	if a := added(before.links, now.links); len(a) > 0 {
		t.Errorf("interfaces added to the machine's own namespace: %v", a)
	}
	for _, a := range added(before.addresses, now.addresses) {
		t.Errorf("address added to the machine's own namespace (private: %v): %s", private(a), a)
	}
	for _, a := range now.addresses {
		if strings.HasPrefix(strings.Fields(a)[1], podIP+"/") || strings.HasPrefix(strings.Fields(a)[1], cp.Node.Gateway()+"/") {
			t.Errorf("the machine's own namespace holds a pod network address: %s", a)
		}
	}
	if a := added(before.routes, now.routes); len(a) > 0 {
		t.Errorf("routes added to the machine's own namespace: %v", a)
	}
	if now.forward != before.forward {
		t.Errorf("the machine's own namespace forwards %s, was %s", now.forward, before.forward)
	}

	// The namespace of the pod network.
	var links []ipLink
	ipJSON(t, &links, "addr", "show")
	has := func(link, addr string) bool {
		for _, l := range links {
			for _, a := range l.AddrInfo {
				if l.IfName == link && fmt.Sprintf("%s/%d", a.Local, a.PrefixLen) == addr {
					return true
				}
			}
		}
		return false
	}
	if !has("lo", "10.0.0.1/32") || !has("lo", "127.0.0.1/8") {
		t.Errorf("the pod network's loopback lacks 127.0.0.1/8 or the ClusterIP 10.0.0.1/32: %+v", links)
	}
	if !has("kf0", cp.Node.Gateway()+"/24") {
		t.Errorf("the pod network has no bridge kf0 with %s/24: %+v", cp.Node.Gateway(), links)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.IfName)
		if l.IfName != "lo" && l.IfName != "kf0" && l.Master != "kf0" {
			t.Errorf("the pod network holds %s (master %q), neither its loopback, nor its bridge, nor a veth end of it", l.IfName, l.Master)
		}
	}
	var ports []ipLink
	ipJSON(t, &ports, "link", "show", "master", "kf0")
	if len(ports) == 0 {
		t.Errorf("no veth end is a port of kf0 while a pod runs; links: %v", names)
	}
	var route []struct {
		Dev     string `json:"dev"`
		PrefSrc string `json:"prefsrc"`
	}
	ipJSON(t, &route, "route", "get", podIP)
	if len(route) != 1 || route[0].Dev != "kf0" {
		t.Errorf("inside the pod network, %s is reached through %+v, want the bridge kf0", podIP, route)
	}
	t.Logf("the pod network %s holds %v; the pod's address %s is reached through kf0", cp.PodNetworkNamespace(), names, podIP)
}

// TestThePodNetworkGuard: in a control plane whose nodes all run in the pod network, no
// pod can run in the machine's own namespace: no other node may register, no pod may
// be created on or bound to another node, and no pod may have what it takes to enter
// the machine's namespace by itself (hostPID, privileged, CAP_SYS_ADMIN). kube-apiserver, in the machine's namespace,
// may not proxy to a pod or a Service (it would dial their addresses from there), nor
// call a webhook through a Service.
func TestThePodNetworkGuard(t *testing.T) {
	ns := cp.Namespace(t)
	kube := cp.Kube(t)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	refused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "network rule") {
			t.Errorf("%s: %v, want the network rule to refuse it", what, err)
		}
	}
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				NodeName: node,
				// Nowhere to schedule it: it stays Pending unless bound by hand.
				NodeSelector: map[string]string{"kubectl-finalize.test/nowhere": "true"},
				Containers:   []corev1.Container{{Name: "pause", Image: controlplane.PauseImage, ImagePullPolicy: corev1.PullNever}},
			},
		}
	}
	_, err := kube.CoreV1().Pods(ns).Create(t.Context(), pod("elsewhere", "elsewhere"), dryRun)
	refused("a pod given another node", err)
	if _, err := kube.CoreV1().Pods(ns).Create(t.Context(), pod("here", cp.Node.Name), dryRun); err != nil {
		t.Errorf("a pod given the node %s: %v, want it admitted", cp.Node.Name, err)
	}
	for what, change := range map[string]func(*corev1.Pod){
		"a pod with hostPID": func(p *corev1.Pod) { p.Spec.HostPID = true },
		"a privileged container": func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
		},
		"a container with SYS_ADMIN": func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
		},
		"an init container with ALL": func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: controlplane.PauseImage, SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"ALL"}}}}}
		},
	} {
		p := pod("escape", cp.Node.Name)
		change(p)
		_, err := kube.CoreV1().Pods(ns).Create(t.Context(), p, dryRun)
		refused(what, err)
	}
	_, err = kube.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, dryRun)
	refused("another node registering", err)

	pending, err := kube.CoreV1().Pods(ns).Create(t.Context(), pod("pending", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = kube.CoreV1().Pods(ns).Bind(t.Context(), &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pending.Name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: "elsewhere"},
	}, metav1.CreateOptions{})
	refused("binding a pod to another node", err)

	// Admission runs before the API server looks the pod or Service up: objects that do
	// not exist show the refusal without any chance of a connection.
	for _, path := range []string{"pods/absent:8080/proxy/", "services/absent:8080/proxy/"} {
		r := cli.Kubectl(cp, "get", "--raw", "/api/v1/namespaces/"+ns+"/"+path).Run(t)
		if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "network rule") {
			t.Errorf("the API server's proxy, %s: exit %d: %s%s; want the network rule to refuse it", path, r.Code, r.Stdout, r.Stderr)
		}
	}
}
