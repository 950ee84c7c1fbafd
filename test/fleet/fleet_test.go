// Package fleet tests scan and doctor across clusters: two real control planes at once,
// a context whose server refuses connections, and one whose server never answers.
package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var (
	alpha, beta *controlplane.ControlPlane
	// kubeconfig has the contexts alpha and beta, gone (nothing listens) and mute (a
	// server that accepts connections and never answers); alpha is current.
	kubeconfig string
	binary     string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var dir string
	var err error
	if binary, dir, err = cli.BuildTemp("kubectl-finalize-fleet-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	defer func() {
		for _, cp := range []*controlplane.ControlPlane{alpha, beta} {
			if cp != nil {
				cp.Stop()
			}
		}
	}()
	for _, cp := range []**controlplane.ControlPlane{&alpha, &beta} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		*cp, err = controlplane.Start(ctx, controlplane.APIServer())
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "starting a control plane: %v\n", err)
			return 1
		}
	}
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer mute.Close()
	go func() {
		var held []net.Conn
		for {
			c, err := mute.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	gone := rest.CopyConfig(alpha.Config)
	gone.Host = "https://127.0.0.1:1"
	silent := rest.CopyConfig(alpha.Config)
	silent.Host = "https://" + mute.Addr().String()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := controlplane.WriteKubeconfigContexts(kubeconfig, "alpha", map[string]*rest.Config{
		"alpha": alpha.Config, "beta": beta.Config, "gone": gone, "mute": silent}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := seed(); err != nil {
		fmt.Fprintln(os.Stderr, "seeding:", err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		alpha.Logs(os.Stderr, 40)
		beta.Logs(os.Stderr, 40)
	}
	return code
}

const fin = "db.fleet.example.com/cleanup"

// seed makes stuck configmaps in both clusters, held by a finalizer of the same operator:
// three in alpha, two in beta, one of them with the same name as one in alpha.
func seed() error {
	for _, s := range []struct {
		cp    *controlplane.ControlPlane
		names []string
	}{{alpha, []string{"orders", "users", "billing"}}, {beta, []string{"orders", "audit"}}} {
		kube, err := kubernetes.NewForConfig(s.cp.Config)
		if err != nil {
			return err
		}
		ctx := context.Background()
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		// Every write of db-operator comes before every deletion: a create after an
		// earlier object's deletion, in a later second, would be the operator writing
		// elsewhere since that deletion began, and that object's cause would differ.
		for _, name := range s.names {
			if _, err := kube.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{fin}}},
				metav1.CreateOptions{FieldManager: "db-operator"}); err != nil {
				return err
			}
		}
		for _, name := range s.names {
			if err := kube.CoreV1().ConfigMaps("shop").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}

func list(t *testing.T, r cli.Result) *finalizev1alpha1.StuckObjectList {
	t.Helper()
	var l finalizev1alpha1.StuckObjectList
	if err := json.Unmarshal([]byte(r.Stdout), &l); err != nil {
		t.Fatalf("not a StuckObjectList (code %d): %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	return &l
}

// key is an object and the cluster it was found in.
func keys(l *finalizev1alpha1.StuckObjectList, cluster string) []string {
	var out []string
	for _, it := range l.Items {
		c := it.Cluster
		if cluster != "" {
			c = cluster
		}
		out = append(out, c+" "+string(it.Target.UID)+" "+it.Target.Name)
	}
	slices.Sort(out)
	return out
}

// TestTheUnionIsExact: two contexts give exactly what each gives alone, each object
// naming its cluster; namesakes in two clusters are two objects.
func TestTheUnionIsExact(t *testing.T) {
	a := cli.Run(t, kubeconfig, "--context", "alpha", "scan", "-o", "json")
	b := cli.Run(t, kubeconfig, "--context", "beta", "scan", "-o", "json")
	both := cli.Run(t, kubeconfig, "--context", "alpha", "--context", "beta", "scan", "-o", "json")
	if a.Code != 0 || b.Code != 0 || both.Code != 0 {
		t.Fatalf("codes %d %d %d\n%s%s%s", a.Code, b.Code, both.Code, a.Stderr, b.Stderr, both.Stderr)
	}
	want := append(keys(list(t, a), "alpha"), keys(list(t, b), "beta")...)
	slices.Sort(want)
	got := keys(list(t, both), "")
	if !slices.Equal(got, want) || len(got) != 5 {
		t.Errorf("the union:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, single := range []cli.Result{a, b} {
		if strings.Contains(single.Stdout, `"cluster"`) {
			t.Errorf("one cluster's output names a cluster:\n%s", single.Stdout)
		}
	}
	if list(t, both).Incomplete == nil || len(list(t, both).Incomplete) != 0 {
		t.Errorf("incomplete: %+v", list(t, both).Incomplete)
	}
}

// TestTheTableAndNamesNameTheCluster: CLUSTER comes first in the table; -o name prefixes
// the context and a tab; one cluster's output is what it always was.
func TestTheTableAndNamesNameTheCluster(t *testing.T) {
	r := cli.Run(t, kubeconfig, "--context", "alpha", "--context", "beta", "scan")
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if r.Code != 0 || len(lines) != 6 || !strings.HasPrefix(lines[0], "CLUSTER") || !regexp.MustCompile(`^(alpha|beta)\s+shop\s+configmaps/`).MatchString(lines[1]) {
		t.Errorf("table: code %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	wide := cli.Run(t, kubeconfig, "--context", "alpha", "--context", "beta", "scan", "-o", "wide")
	if !strings.HasPrefix(wide.Stdout, "CLUSTER") || !strings.Contains(strings.SplitN(wide.Stdout, "\n", 2)[0], "CAUSE") {
		t.Errorf("wide:\n%s", wide.Stdout)
	}
	names := cli.Run(t, kubeconfig, "--context", "alpha", "--context", "beta", "scan", "-o", "name")
	for _, want := range []string{"alpha\tconfigmap/orders", "beta\tconfigmap/orders", "beta\tconfigmap/audit"} {
		if !slices.Contains(strings.Split(names.Stdout, "\n"), want) {
			t.Errorf("-o name lacks %q:\n%s", want, names.Stdout)
		}
	}
	// One context, chosen by --context, by a selector, or current: the same bytes.
	current := cli.Run(t, kubeconfig, "scan", "-o", "name")
	for _, args := range [][]string{{"--context", "alpha", "scan", "-o", "name"}, {"scan", "-o", "name", "--context-selector", "al*"}} {
		if r := cli.Run(t, kubeconfig, args...); r.Code != 0 || r.Stdout != current.Stdout || strings.Contains(r.Stdout, "\t") {
			t.Errorf("%v: code %d\n%q\nwant\n%q", args, r.Code, r.Stdout, current.Stdout)
		}
	}
}

// TestAClusterThatCannotBeReadIsIncomplete: --all-contexts reads alpha and beta, names
// the context nothing listens for and the one that never answers as incomplete, and
// exits 3.
func TestAClusterThatCannotBeReadIsIncomplete(t *testing.T) {
	r := cli.Run(t, kubeconfig, "scan", "--all-contexts", "-o", "json", "--cluster-timeout", "3s")
	l := list(t, r)
	if r.Code != 3 || len(keys(l, "")) != 5 {
		t.Errorf("code %d, %d objects; want 3 and 5\n%s", r.Code, len(l.Items), r.Stderr)
	}
	var unread []string
	for _, in := range l.Incomplete {
		if in.Reason == finalizev1alpha1.ReasonClusterUnreachable {
			unread = append(unread, in.Cluster)
		}
	}
	slices.Sort(unread)
	if !slices.Equal(unread, []string{"gone", "mute"}) {
		t.Errorf("unreachable: %v, want gone and mute: %+v", unread, l.Incomplete)
	}
	for _, want := range []string{"context gone (every type): ClusterUnreachable:", "connection refused", "context mute (every type): ClusterUnreachable: no answer within 3s (--cluster-timeout)"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
	// Nothing readable at all is an error.
	r = cli.Run(t, kubeconfig, "scan", "--context", "gone", "--context", "mute", "--cluster-timeout", "2s")
	if r.Code != 1 || !strings.Contains(r.Stderr, "no cluster could be read: context gone:") {
		t.Errorf("no cluster: code %d\n%s", r.Code, r.Stderr)
	}
}

// TestTheDoctorSaysWhatRepeatsAcrossClusters: root causes per cluster, and the operator
// missing in both clusters said once with both.
func TestTheDoctorSaysWhatRepeatsAcrossClusters(t *testing.T) {
	r := cli.Run(t, kubeconfig, "--context", "alpha", "--context", "beta", "doctor", "-o", "json")
	var d finalizev1alpha1.Diagnosis
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil || r.Code != 0 {
		t.Fatalf("code %d: %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	perCluster := map[string]int{}
	for _, rc := range d.RootCauses {
		perCluster[rc.Cluster]++
	}
	if perCluster["alpha"] == 0 || perCluster["beta"] == 0 || len(d.Items) != 5 {
		t.Errorf("root causes per cluster %v, %d items", perCluster, len(d.Items))
	}
	if len(d.AcrossClusters) != 1 || !slices.Equal(d.AcrossClusters[0].Clusters, []string{"alpha", "beta"}) || d.AcrossClusters[0].Objects != 5 {
		t.Errorf("across clusters: %+v", d.AcrossClusters)
	}
	text := cli.Run(t, kubeconfig, "--context", "alpha", "--context", "beta", "doctor")
	for _, want := range []string{"== context alpha ==\n3 stuck objects in 1 namespace", "== context beta ==\n2 stuck objects", "Across clusters: 1 root cause found in more than one cluster.",
		"in 2 clusters (alpha, beta), 5 objects"} {
		if !strings.Contains(text.Stdout, want) {
			t.Errorf("doctor lacks %q:\n%s", want, text.Stdout)
		}
	}
	t.Logf("doctor across clusters:\n%s", text.Stdout)
	// One object is one cluster's.
	if r := cli.Run(t, kubeconfig, "--context", "alpha", "--context", "beta", "doctor", "configmap/orders", "-n", "shop"); r.Code != 2 || !strings.Contains(r.Stderr, "give one --context") {
		t.Errorf("doctor TYPE/NAME across clusters: code %d\n%s", r.Code, r.Stderr)
	}
}

// TestOtherCommandsTakeOneContext: a write reads one cluster.
func TestOtherCommandsTakeOneContext(t *testing.T) {
	r := cli.Run(t, kubeconfig, "--context", "alpha", "--context", "beta", "remove", "configmap/orders", "-n", "shop", "--finalizer", fin, "--force-unverified", "--reason", "x", "--yes")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--context was given 2 times: only scan and doctor read several clusters") {
		t.Errorf("remove with two contexts: code %d\n%s", r.Code, r.Stderr)
	}
	for _, args := range [][]string{
		{"scan", "--context", "alpha", "--all-contexts"},
		{"scan", "--context-selector", "nothing-*"},
		{"scan", "--all-contexts", "--cluster-concurrency", "0"},
		{"scan", "--all-contexts", "--server", "https://127.0.0.1:1"},
	} {
		if r := cli.Run(t, kubeconfig, args...); r.Code != 2 {
			t.Errorf("%v: code %d, want 2\n%s", args, r.Code, r.Stderr)
		}
	}
}

// TestTheProgressLineCountsClusters: on a terminal, clusters done of all.
func TestTheProgressLineCountsClusters(t *testing.T) {
	r := cli.Cmd{Path: binary, Args: []string{"scan", "--kubeconfig", kubeconfig, "--context", "alpha", "--context", "beta"}, Terminal: true}.Run(t)
	if r.Code != 0 {
		t.Fatalf("scan on a terminal: exit %d\n%s", r.Code, r.Stdout)
	}
	if !regexp.MustCompile(`\r\x1b\[Kscanning: [12]/2 clusters done`).MatchString(r.Stdout) {
		t.Errorf("no progress line counting clusters: %q", r.Stdout)
	}
}
