// Package operators proves the presets against the real operators, not simulations of
// them (#38 point 4): Crossplane's provider-kubernetes, built from the Go module proxy
// by test/infra/crossplane, runs as a process of its own against a management control
// plane and applies its Objects' manifests to a second one, the workload cluster, which
// the policy's kubernetes provider reads through a kubeconfig context of its own.
package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/pki"
)

// The finalizer crossplane-runtime's managed reconciler adds, and the provider's objects.
const finalizer = "finalizer.managedresource.crossplane.io"

var (
	objects     = schema.GroupVersionResource{Group: "kubernetes.crossplane.io", Version: "v1alpha2", Resource: "objects"}
	namespaced  = schema.GroupVersionResource{Group: "kubernetes.m.crossplane.io", Version: "v1alpha1", Resource: "objects"}
	configs     = schema.GroupVersionResource{Group: "kubernetes.crossplane.io", Version: "v1alpha1", Resource: "providerconfigs"}
	clusterCfgs = schema.GroupVersionResource{Group: "kubernetes.m.crossplane.io", Version: "v1alpha1", Resource: "clusterproviderconfigs"}
	crds        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// crossplane is the provider's world: the management cluster it runs against, the
// workload cluster it applies to, and how to start it.
type crossplane struct {
	mgmt, workload *controlplane.ControlPlane
	// provider is the binary; dir holds its webhook certificates and the kubeconfigs.
	provider, dir string
	// workloadKubeconfig has one context, "workload", as the docs' policy names it.
	workloadKubeconfig string
}

var world *crossplane

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	w, stop, err := setUp()
	defer stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	world = w
	code := m.Run()
	if code != 0 {
		w.mgmt.Logs(os.Stderr, 60)
	}
	return code
}

// setUp builds the provider (test/infra/crossplane/build.sh, cached), starts both
// control planes and installs the provider's CRDs in the management one.
func setUp() (*crossplane, func(), error) {
	w := &crossplane{}
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	bins, err := providerBins()
	if err != nil {
		return nil, stop, err
	}
	w.provider = filepath.Join(bins, "crossplane-kubernetes-provider")
	if w.dir, err = os.MkdirTemp("", "kubectl-finalize-crossplane-"); err != nil {
		return nil, stop, err
	}
	stops = append(stops, func() { os.RemoveAll(w.dir) })
	for _, cp := range []**controlplane.ControlPlane{&w.mgmt, &w.workload} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		*cp, err = controlplane.Start(ctx, controlplane.APIServer())
		cancel()
		if err != nil {
			return nil, stop, fmt.Errorf("starting a control plane: %w", err)
		}
		plane := *cp
		stops = append(stops, plane.Stop)
	}
	w.workloadKubeconfig = filepath.Join(w.dir, "workload.kubeconfig")
	if err := controlplane.WriteKubeconfigContexts(w.workloadKubeconfig, "workload", map[string]*rest.Config{"workload": w.workload.Config}); err != nil {
		return nil, stop, err
	}
	// The webhook server the provider's manager starts (a conversion webhook nobody
	// calls here: the CRDs convert with None) needs a certificate to start.
	ca := pki.NewCA("provider-kubernetes")
	if err := ca.Serving("provider-kubernetes", "127.0.0.1").Write(filepath.Join(w.dir, "tls.crt"), filepath.Join(w.dir, "tls.key")); err != nil {
		return nil, stop, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.installCRDs(ctx, filepath.Join(bins, "crds")); err != nil {
		return nil, stop, err
	}
	return w, stop, nil
}

// providerBins is the folder test/infra/crossplane/build.sh prints, building the
// provider on first use (about 2.5 minutes cold on 2 cores).
func providerBins() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		script := filepath.Join(dir, "test", "infra", "crossplane", "build.sh")
		if _, err := os.Stat(script); err == nil {
			cmd := exec.Command(script)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				return "", fmt.Errorf("building provider-kubernetes with %s: %w", script, err)
			}
			return strings.TrimSpace(string(out)), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("test/infra/crossplane/build.sh was not found above the working directory")
		}
		dir = parent
	}
}

// installCRDs creates the provider's CRDs as its package ships them, with one change:
// conversion is None. The package's Object CRD names a conversion webhook Service that
// Crossplane's package manager fills in; nothing here asks for another version than the
// one each object is written in.
func (w *crossplane) installCRDs(ctx context.Context, dir string) error {
	dyn := dynamic.NewForConfigOrDie(w.mgmt.Config)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s: %w", dir, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &crd.Object); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := unstructured.SetNestedMap(crd.Object, map[string]any{"strategy": "None"}, "spec", "conversion"); err != nil {
			return err
		}
		if _, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		group, plural, _ := strings.Cut(name, "_")
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			crd, err := dyn.Resource(crds).Get(ctx, plural+"."+group, metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // until it is established, or the deadline
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s.%s not established: %w", plural, group, err)
		}
	}
	return nil
}

// provider is a running provider-kubernetes.
type provider struct {
	cmd *exec.Cmd
	log *cli.Buffer
	// exited is closed when the process has exited, with err.
	exited chan struct{}
	err    error
}

// start runs the provider against the management cluster, as its admin; its field
// manager is its binary's name, as in its image.
func (w *crossplane) start(t *testing.T) *provider {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p := &provider{log: &cli.Buffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(w.provider, "--poll=5s", "--sync=1m",
		"--metrics-bind-address=0", "--health-probe-bind-addr=0", fmt.Sprintf("--webhook-port=%d", port))
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+w.mgmt.AdminKubeconfig, "WEBHOOK_TLS_CERT_DIR="+w.dir)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("provider-kubernetes's log:\n%s", tail(p.log.String(), 60))
		}
	})
	return p
}

// stop stops the provider as Kubernetes stops a pod: SIGTERM, then its exit.
func (p *provider) stop(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("provider-kubernetes did not stop within 30s of SIGTERM")
	}
}

// running fails t when the provider has exited.
func (p *provider) running(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("provider-kubernetes exited (%v):\n%s", p.err, tail(p.log.String(), 40))
	default:
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// providerConfigs make the provider apply to the workload cluster: a kubeconfig in a
// Secret, named by a ProviderConfig (v1 Objects) and a ClusterProviderConfig (v2's
// namespaced Objects).
func (w *crossplane) providerConfigs(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	kube := w.mgmt.Kube(t)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "crossplane-system"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// "elsewhere" applies to the management cluster itself: another cluster than the
	// policy's.
	elsewhere := filepath.Join(t.TempDir(), "elsewhere.kubeconfig")
	if err := controlplane.WriteKubeconfigContexts(elsewhere, "elsewhere", map[string]*rest.Config{"elsewhere": w.mgmt.Config}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(w.mgmt.Config)
	for name, kubeconfig := range map[string]string{"workload": w.workloadKubeconfig, "elsewhere": elsewhere} {
		raw, err := os.ReadFile(kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: name + "-kubeconfig"}, Data: map[string][]byte{"kubeconfig": raw}}
		if _, err := kube.CoreV1().Secrets("crossplane-system").Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		credentials := map[string]any{"source": "Secret", "secretRef": map[string]any{"namespace": "crossplane-system", "name": name + "-kubeconfig", "key": "kubeconfig"}}
		for _, c := range []struct {
			gvr  schema.GroupVersionResource
			kind string
		}{{configs, "ProviderConfig"}, {clusterCfgs, "ClusterProviderConfig"}} {
			pc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": c.gvr.GroupVersion().String(), "kind": c.kind,
				"metadata": map[string]any{"name": name}, "spec": map[string]any{"credentials": credentials}}}
			if _, err := dyn.Resource(c.gvr).Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	}
}

// object is an Object whose manifest is a ConfigMap named target in namespace team-a of
// the workload cluster; a namespaced Object (Crossplane v2) when ns is set.
type object struct {
	ns, name, target string
	orphan           bool
	// providerConfig is the ProviderConfig it applies through; empty means workload.
	providerConfig string
}

func (o object) gvr() schema.GroupVersionResource {
	if o.ns != "" {
		return namespaced
	}
	return objects
}

// create creates the Object as a person would, with kubectl's field manager: the spec
// is theirs, the finalizer, the external-name and the status are the provider's.
func (w *crossplane) create(t *testing.T, o object) {
	t.Helper()
	manifest := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "team-a"}, "data": map[string]any{"owner": o.name}}
	if o.target != "" {
		manifest["metadata"].(map[string]any)["name"] = o.target
	}
	spec := map[string]any{"forProvider": map[string]any{"manifest": manifest}}
	pc := o.providerConfig
	if pc == "" {
		pc = "workload"
	}
	if o.ns != "" {
		spec["providerConfigRef"] = map[string]any{"kind": "ClusterProviderConfig", "name": pc}
	} else {
		spec["providerConfigRef"] = map[string]any{"name": pc}
	}
	if o.orphan {
		spec["deletionPolicy"] = "Orphan"
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": o.gvr().GroupVersion().String(), "kind": "Object",
		"metadata": map[string]any{"name": o.name}, "spec": spec}}
	if o.ns != "" {
		u.SetNamespace(o.ns)
	}
	if _, err := w.dyn(t).Resource(o.gvr()).Namespace(o.ns).Create(t.Context(), u, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
}

func (w *crossplane) dyn(t *testing.T) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(w.mgmt.Config)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitReady waits until the provider has made every Object's ConfigMap and says so:
// Ready and Synced, its finalizer on, its record of the ConfigMap in status.
func (w *crossplane) waitReady(t *testing.T, p *provider, objs []object) {
	t.Helper()
	for _, o := range objs {
		var last *unstructured.Unstructured
		err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			p.running(t)
			u, err := w.dyn(t).Resource(o.gvr()).Namespace(o.ns).Get(ctx, o.name, metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // until it is ready, or the deadline
			}
			last = u
			_, recorded, _ := unstructured.NestedMap(u.Object, "status", "atProvider", "manifest")
			return condition(u, "Ready") && condition(u, "Synced") && recorded && hasFinalizer(u, finalizer), nil
		})
		if err != nil {
			status := ""
			if last != nil {
				b, _ := json.Marshal(last.Object["status"])
				status = string(b)
			}
			t.Fatalf("Object %s/%s did not become ready: %v; status %s", o.ns, o.name, err, status)
		}
	}
}

func condition(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

func hasFinalizer(u *unstructured.Unstructured, f string) bool {
	for _, x := range u.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}

// configMap reports whether the workload cluster has ConfigMap team-a/name.
func (w *crossplane) configMap(t *testing.T, name string) bool {
	t.Helper()
	_, err := w.workload.Kube(t).CoreV1().ConfigMaps("team-a").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func (w *crossplane) deleteConfigMap(t *testing.T, name string) {
	t.Helper()
	if err := w.workload.Kube(t).CoreV1().ConfigMaps("team-a").Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// policy is docs/presets.md's provider-kubernetes policy, as the page shows it, with
// the two things a test must change: its minAge (30m), and the path of the workload
// cluster's kubeconfig. inCluster drops the kubeconfig and its context: the rule then
// asks the management cluster, the wrong one.
func (w *crossplane) policy(t *testing.T, inCluster bool) string {
	t.Helper()
	doc := documentedPolicy(t)
	for old, repl := range map[string]string{"minAge: 30m": "minAge: 0s", "/etc/workload/kubeconfig": w.workloadKubeconfig} {
		if !strings.Contains(doc, old) {
			t.Fatalf("docs/presets.md's provider-kubernetes policy no longer has %q:\n%s", old, doc)
		}
		doc = strings.Replace(doc, old, repl, 1)
	}
	if inCluster {
		doc = regexp.MustCompile(`(?m)^\s+(kubeconfig|context): .*\n`).ReplaceAllString(doc, "")
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// documentedPolicy is the YAML block of docs/presets.md that names
// objects.kubernetes.crossplane.io.
func documentedPolicy(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", "presets.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		if strings.Contains(block[1], `"objects.kubernetes.crossplane.io"`) {
			return block[1]
		}
	}
	t.Fatal("docs/presets.md has no policy for objects.kubernetes.crossplane.io")
	return ""
}

// reconcile runs one pass, and returns its report's actions by object name.
func (w *crossplane) reconcile(t *testing.T, policy string) (map[string]finalizev1alpha1.Removal, *finalizev1alpha1.ReconcileReport, cli.Result) {
	t.Helper()
	r := cli.Run(t, w.mgmt.AdminKubeconfig, "reconcile", "--once", "--policy", policy, "-o", "json")
	rep := cli.Report(t, r)
	out := map[string]finalizev1alpha1.Removal{}
	for _, a := range rep.Actions {
		out[a.Target.Name] = a
	}
	return out, rep, r
}

func want(t *testing.T, actions map[string]finalizev1alpha1.Removal, name string, result finalizev1alpha1.RemovalResult, verdict finalizev1alpha1.Verdict, says string) {
	t.Helper()
	a, ok := actions[name]
	if !ok {
		t.Errorf("no action about %s", name)
		return
	}
	if a.Result != result || a.Verdict != verdict || !strings.Contains(a.Evidence+" "+a.Message, says) {
		t.Errorf("%s: %s/%s %q %q; want %s/%s saying %q", name, a.Result, a.Verdict, a.Evidence, a.Message, result, verdict, says)
	}
}

// held reports whether the Object still exists with the provider's finalizer.
func (w *crossplane) held(t *testing.T, o object) bool {
	t.Helper()
	u, err := w.dyn(t).Resource(o.gvr()).Namespace(o.ns).Get(t.Context(), o.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return hasFinalizer(u, finalizer)
}

// TestProviderKubernetes is #38's scenario against the real provider: Objects whose
// ConfigMaps the provider made in the workload cluster, the provider stopped, the
// Objects deleted, some ConfigMaps gone. reconcile --once with the documented policy
// removes exactly the finalizers whose ConfigMap is gone; the restarted provider
// finishes the rest.
func TestProviderKubernetes(t *testing.T) {
	w := world
	w.providerConfigs(t)
	if _, err := w.workload.Kube(t).CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"apps", "team-a"} {
		if _, err := w.mgmt.Kube(t).CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Every Object's manifest names a ConfigMap of another name than the Object's, as
	// the issue's: a rule that asked by the Object's own name (or its external-name,
	// which the provider sets to it) would find nothing, and call each Gone.
	var (
		// Live Objects, which the rule checks its provider with: of each type.
		controls = []object{{name: "control-1", target: "live-1"}, {name: "control-2", target: "live-2"}, {ns: "apps", name: "app-control", target: "live-app"}}
		gone     = []object{{name: "held-1", target: "cm-1"}, {name: "held-2", target: "cm-2"}, {name: "held-3", target: "cm-3"}}
		present  = []object{{name: "held-4", target: "cm-4"}, {name: "held-5", target: "cm-5"}, {name: "held-6", target: "cm-6"}}
		// The manifest names no object: the provider names the ConfigMap after the Object.
		unnamed = object{name: "held-unnamed"}
		orphan  = object{name: "held-orphan", target: "cm-orphan", orphan: true}
		// Renamed after the provider stopped: the ConfigMap it made is cm-renamed, the
		// manifest now names cm-never-made, which does not exist.
		renamed = object{name: "held-renamed", target: "cm-renamed"}
		// Crossplane v2's namespaced Objects.
		nsGone    = object{ns: "apps", name: "app-1", target: "cm-app-1"}
		nsPresent = object{ns: "apps", name: "app-2", target: "cm-app-2"}
		// Applied to another cluster (the management one) than the policy asks: its
		// ConfigMap is not in the workload cluster, and exists.
		elsewhere = object{name: "held-elsewhere", target: "cm-elsewhere", providerConfig: "elsewhere"}
		// Applied through elsewhere, then moved to workload's ProviderConfig after the
		// provider stopped: its ConfigMap is in the management cluster, and the spec
		// names the workload one, where it is not.
		moved = object{name: "held-moved", target: "cm-moved", providerConfig: "elsewhere"}
		// A live Object applied through elsewhere, whose ConfigMap's namesake a person
		// made in the workload cluster: the rule finds the namesake, not the object the
		// provider made, and that vouches for nothing of elsewhere.
		namesake = object{name: "control-elsewhere", target: "live-elsewhere", providerConfig: "elsewhere"}
		// Moved from workload to elsewhere while the provider ran: it tracks the move in
		// its usage (whose generation the API server bumps) before it applies there.
		movedRunning = object{name: "held-moved-running", target: "cm-moved-running"}
	)
	deleted := append(append(append([]object{}, gone...), present...), unnamed, orphan, renamed, nsGone, nsPresent, elsewhere, moved, movedRunning)
	all := append(append(append([]object{}, controls...), namesake), deleted...)

	p := w.start(t)
	for _, o := range all {
		w.create(t, o)
	}
	w.waitReady(t, p, all)
	for _, o := range all {
		target := o.target
		if target == "" {
			target = o.name
		}
		if o.providerConfig == "elsewhere" {
			if _, err := w.mgmt.Kube(t).CoreV1().ConfigMaps("team-a").Get(t.Context(), target, metav1.GetOptions{}); err != nil {
				t.Fatalf("the provider reports %s ready, and ConfigMap team-a/%s is not in the management cluster: %v", o.name, target, err)
			}
			continue
		}
		if !w.configMap(t, target) {
			t.Fatalf("the provider reports %s ready, and ConfigMap team-a/%s is not in the workload cluster", o.name, target)
		}
	}
	running, err := w.dyn(t).Resource(objects).Patch(t.Context(), movedRunning.name, types.MergePatchType, []byte(`{"spec":{"providerConfigRef":{"name":"elsewhere"}}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	if err != nil {
		t.Fatal(err)
	}
	usages := schema.GroupVersionResource{Group: "kubernetes.crossplane.io", Version: "v1alpha1", Resource: "providerconfigusages"}
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := w.dyn(t).Resource(usages).Get(ctx, string(running.GetUID()), metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not made yet: poll on
		}
		name, _, _ := unstructured.NestedString(u.Object, "providerConfigRef", "name")
		return name == "elsewhere" && u.GetGeneration() == 2, nil
	}); err != nil {
		t.Fatalf("the provider did not track %s's move in its usage, at generation 2: %v", movedRunning.name, err)
	}
	p.stop(t)

	for _, o := range deleted {
		if err := w.dyn(t).Resource(o.gvr()).Namespace(o.ns).Delete(t.Context(), o.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range append(append([]object{}, gone...), nsGone) {
		w.deleteConfigMap(t, o.target)
	}
	w.deleteConfigMap(t, unnamed.name)
	// A person rewrites the manifest of a stuck Object, and another takes over the
	// external-name annotation: neither is what the provider acted on.
	patch := `{"spec":{"forProvider":{"manifest":{"metadata":{"name":"cm-never-made"}}}}}`
	if _, err := w.dyn(t).Resource(objects).Patch(t.Context(), renamed.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	move := `{"spec":{"providerConfigRef":{"name":"workload"}}}`
	if _, err := w.dyn(t).Resource(objects).Patch(t.Context(), moved.name, types.MergePatchType, []byte(move), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.workload.Kube(t).CoreV1().ConfigMaps("team-a").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: namesake.target}}, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	annotate := `{"metadata":{"annotations":{"crossplane.io/external-name":"cm-does-not-exist"}}}`
	if _, err := w.dyn(t).Resource(objects).Patch(t.Context(), present[0].name, types.MergePatchType, []byte(annotate), metav1.PatchOptions{FieldManager: "kubectl-annotate"}); err != nil {
		t.Fatal(err)
	}

	// The doctor names where the provider put each resource, as it recorded it, and says
	// why it cannot for an Object whose reference moved.
	r0 := cli.Run(t, w.mgmt.AdminKubeconfig, "doctor", "-o", "json")
	var diagnosis finalizev1alpha1.Diagnosis
	if err := json.Unmarshal([]byte(r0.Stdout), &diagnosis); err != nil {
		t.Fatalf("doctor: exit %d: %v\n%s", r0.Code, err, r0.Stderr)
	}
	external := map[string]*finalizev1alpha1.External{}
	for _, item := range diagnosis.Items {
		if item.Cause != nil {
			external[item.Target.Name] = item.Cause.External
		}
	}
	if e := external[present[0].name]; e == nil || !strings.HasPrefix(e.Where, "ProviderConfig workload, as its ProviderConfigUsage ") {
		t.Errorf("doctor of %s: %+v", present[0].name, e)
	}
	if e := external[moved.name]; e == nil || e.Where != "" || !strings.Contains(e.Unnamed, "the spec names ProviderConfig workload, but its operator last acted through ProviderConfig elsewhere") {
		t.Errorf("doctor of %s: %+v", moved.name, e)
	}

	// Reviewer's point: the same policy without its kubeconfig asks the management
	// cluster, where none of the ConfigMaps is. The live controls read Gone there, and
	// the rule removes nothing.
	actions, rep, r := w.reconcile(t, w.policy(t, true))
	for _, o := range deleted {
		if a := actions[o.name]; a.Result == finalizev1alpha1.ResultRemoved {
			t.Errorf("asking the wrong cluster removed %s's finalizer: %s (%s)", o.name, a.Verdict, a.Evidence)
		}
		if !w.held(t, o) {
			t.Fatalf("%s lost its finalizer to a rule that asks the wrong cluster", o.name)
		}
	}
	t.Logf("asking the management cluster: exit %d, rules %+v\n%s", r.Code, rep.Rules, r.Stderr)
	if r.Code == 0 {
		t.Errorf("a rule whose controls read Gone exited 0")
	}

	// remove, one by one, with the same policy: a Gone is removed, a Present refused.
	policy := w.policy(t, false)
	r = cli.Run(t, w.mgmt.AdminKubeconfig, "remove", "objects.kubernetes.crossplane.io/"+gone[0].name, "--finalizer", finalizer, "--policy", policy, "--yes")
	if r.Code != 0 || w.held(t, gone[0]) {
		t.Errorf("remove of %s, whose ConfigMap is gone: exit %d, held %v\n%s%s", gone[0].name, r.Code, w.held(t, gone[0]), r.Stdout, r.Stderr)
	}
	r = cli.Run(t, w.mgmt.AdminKubeconfig, "remove", "objects.kubernetes.crossplane.io/"+present[1].name, "--finalizer", finalizer, "--policy", policy, "--yes")
	if r.Code == 0 || !w.held(t, present[1]) || !strings.Contains(r.Stderr+r.Stdout, "configmaps/cm-5 -n team-a exists") {
		t.Errorf("remove of %s, whose ConfigMap exists: exit %d, held %v\n%s%s", present[1].name, r.Code, w.held(t, present[1]), r.Stdout, r.Stderr)
	}
	gone = gone[1:]

	actions, rep, r = w.reconcile(t, policy)
	for _, o := range append(append([]object{}, gone...), nsGone) {
		want(t, actions, o.name, finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "configmaps/"+o.target+" -n team-a not found in the cluster of context workload")
	}
	want(t, actions, unnamed.name, finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "configmaps/"+unnamed.name+" -n team-a not found in the cluster of context workload")
	for _, o := range append(append([]object{}, present...), nsPresent) {
		want(t, actions, o.name, finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictPresent, "configmaps/"+o.target+" -n team-a exists in the cluster of context workload")
	}
	want(t, actions, elsewhere.name, finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown,
		"this object is of ProviderConfig elsewhere, which says where its operator puts its resource, and no live control of ProviderConfig elsewhere shows that the rule asks there")
	want(t, actions, elsewhere.name, finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown,
		"of ProviderConfig elsewhere: objects.kubernetes.crossplane.io/control-elsewhere: the provider found uid ")
	want(t, actions, movedRunning.name, finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown,
		"changed since it was made (generation 2): the object was moved between scopes")
	want(t, actions, moved.name, finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown,
		"the spec names ProviderConfig workload, but its operator last acted through ProviderConfig elsewhere (ProviderConfigUsage ")
	// Retained by design, and the documented rule does not set allowRetained.
	want(t, actions, orphan.name, finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictRetained, "spec.deletionPolicy: Orphan")
	want(t, actions, renamed.name, finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown, `but the operator last acted on "cm-renamed"`)
	// Everything verifiable was acted on, and the pass fails: the rule cannot verify the
	// Objects of elsewhere, whose only live control the rule finds a namesake of.
	if r.Code != 1 || !strings.Contains(r.Stderr, "rule objects cannot verify: no live control of objects.kubernetes.crossplane.io showed that the rule asks where their operator put the resources of the objects of ProviderConfig elsewhere, objects.kubernetes.crossplane.io/held-elsewhere") {
		t.Errorf("reconcile: exit %d, want 1 naming ProviderConfig elsewhere\n%s", r.Code, r.Stderr)
	}
	for _, o := range deleted[1:] {
		removed := actions[o.name].Result == finalizev1alpha1.ResultRemoved
		if w.held(t, o) == removed {
			t.Errorf("%s: held %v after a pass that reported %s", o.name, w.held(t, o), actions[o.name].Result)
		}
	}
	t.Logf("rules: %+v", rep.Rules)
	// The role the pass needs reads the usages, the v1 ones cluster-wide, the v2 ones too
	// (the rule names no namespaces).
	r = cli.Run(t, w.mgmt.AdminKubeconfig, "rbac", "--policy", policy)
	for _, group := range []string{"kubernetes.crossplane.io", "kubernetes.m.crossplane.io"} {
		if r.Code != 0 || !strings.Contains(r.Stdout, "  - "+group+"\n  resources:\n  - providerconfigusages\n  verbs:\n  - get\n") {
			t.Errorf("rbac does not grant get on providerconfigusages.%s: exit %d\n%s%s", group, r.Code, r.Stdout, r.Stderr)
		}
	}
	if !w.configMap(t, orphan.target) || !w.configMap(t, renamed.target) {
		t.Errorf("a ConfigMap the provider was to keep or that was never verified is gone")
	}

	// The restarted provider finishes the rest: it deletes the ConfigMaps of the Objects
	// still held and removes their finalizers; an orphaned one stays.
	w.start(t)
	for _, o := range deleted {
		err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := w.dyn(t).Resource(o.gvr()).Namespace(o.ns).Get(ctx, o.name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("the restarted provider did not finish %s: %v", o.name, err)
		}
	}
	for _, o := range append(append([]object{}, present...), nsPresent) {
		if w.configMap(t, o.target) {
			t.Errorf("the restarted provider left ConfigMap %s of deleted Object %s", o.target, o.name)
		}
	}
	if !w.configMap(t, orphan.target) {
		t.Errorf("the ConfigMap of an Object with deletionPolicy Orphan is gone")
	}
	for _, o := range controls {
		if !w.held(t, o) || !w.configMap(t, o.target) {
			t.Errorf("control %s or its ConfigMap is gone", o.name)
		}
	}
}
