// Package outage kills the API server (SIGKILL) in the middle of a scan, a verification
// and a write, and shows that a command then exits non-zero naming what it did not do,
// never reports a partial scan as complete, removes nothing unverified, and that a rerun
// once the API server is back ends where an undisturbed run ends.
package outage

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/apiproxy"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.APIServer(), &cp) }

// proxied is a proxy in front of the API server, and a kubeconfig through it: the tests
// kill the API server at the request they choose.
func proxied(t *testing.T) (*apiproxy.Proxy, string) { return apiproxy.ForTest(t, cp.Config) }

// killer kills the API server once, from the proxy or a provider: kube-apiserver gets
// SIGKILL and the proxy's address stops listening, so the client's requests are cut and
// its next connections refused, as with a dead API server. When the test ends, the API
// server is brought back if the test has not done it.
//
// The kill is marked as begun before it is made: closing the proxy cuts the client's
// connections, so the command under test can fail and return while the proxy's goroutine
// is still in now; restart waits for the kill to end rather than take it for one that
// never happened.
type killer struct {
	p      *apiproxy.Proxy
	once   sync.Once
	begun  atomic.Bool
	killed chan struct{} // closed once the API server is dead and the proxy down
	back   bool
}

func newKiller(t *testing.T, p *apiproxy.Proxy) *killer {
	k := &killer{p: p, killed: make(chan struct{})}
	t.Cleanup(func() {
		if k.begun.Load() && !k.back {
			<-k.killed
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			if err := cp.RestartAPIServer(ctx); err != nil {
				t.Errorf("restarting kube-apiserver: %v", err)
			}
		}
	})
	return k
}

func (k *killer) now() {
	k.once.Do(func() {
		k.begun.Store(true)
		cp.KillAPIServer()
		k.p.Down()
		close(k.killed)
	})
}

func (k *killer) restart(t *testing.T) {
	t.Helper()
	if !k.begun.Load() {
		t.Fatal("the API server was never killed: the test did not reach the moment it aims at")
	}
	<-k.killed
	t.Logf("kube-apiserver killed")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	if err := cp.RestartAPIServer(ctx); err != nil {
		t.Fatalf("restarting kube-apiserver: %v", err)
	}
	k.back = true
	if err := k.p.Up(); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver back after %s", time.Since(start).Round(time.Millisecond))
}

// seed makes a namespace of stuck configmaps: n whose instances are deleted, one whose
// instance is present, and a live control.
func seed(t *testing.T, fin string, n int) string {
	t.Helper()
	ns := cp.Namespace(t)
	cms := cp.Kube(t).CoreV1().ConfigMaps(ns)
	create := func(name, instance string, stuck bool) {
		fixture.Create(t, cms, fixture.ConfigMap(name, map[string]string{"instance": instance}, fin), stuck)
	}
	create("control", "live", false)
	create("present", "present-1", true)
	for i := range n {
		create(fmt.Sprintf("gone-%02d", i), fmt.Sprintf("deleted-%s-%02d", ns, i), true)
	}
	return ns
}

// state is what is left in a namespace: each configmap and its finalizers.
func state(t *testing.T, ns string) []string {
	t.Helper()
	list, err := cp.Kube(t).CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cm := range list.Items {
		out = append(out, cm.Name+" "+strings.Join(cm.Finalizers, ","))
	}
	slices.Sort(out)
	return out
}

func writePolicy(t *testing.T, c *fakecloud.Cloud, fin string) string {
	t.Helper()
	return cli.WritePolicy(t, "", c.Rule("dbs", fin, ""))
}

// undisturbed runs one pass over a fresh namespace like the disturbed one and returns
// the state it ends in, with the namespace's name made generic.
func undisturbed(t *testing.T, c *fakecloud.Cloud, fin string, n int) []string {
	t.Helper()
	ns := seed(t, fin, n)
	r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--policy", writePolicy(t, c, fin), "-n", ns, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("the undisturbed pass: code %d\n%s", r.Code, r.Stderr)
	}
	return state(t, ns)
}

// disturbed is a pass to disturb: the state an undisturbed pass ends in, a namespace
// seeded the same way, its policy, and a proxy in front of the API server with a killer.
type disturbed struct {
	c                      *fakecloud.Cloud
	want                   []string
	ns, policy, kubeconfig string
	p                      *apiproxy.Proxy
	k                      *killer
}

// disturb makes a disturbed pass over n stuck objects held by fin.
func disturb(t *testing.T, fin string, n int) *disturbed {
	t.Helper()
	d := &disturbed{c: fakecloud.New(t)}
	d.want = undisturbed(t, d.c, fin+"-u", n)
	d.ns = seed(t, fin, n)
	d.policy = writePolicy(t, d.c, fin)
	d.p, d.kubeconfig = proxied(t)
	d.k = newKiller(t, d.p)
	return d
}

// rerun makes a pass once the API server is back: it must end where the undisturbed pass
// ended.
func (d *disturbed) rerun(t *testing.T) {
	t.Helper()
	r := cli.Run(t, d.kubeconfig, "reconcile", "--once", "--policy", d.policy, "-n", d.ns, "-o", "json")
	if got := state(t, d.ns); r.Code != 0 || !sameShape(got, d.want) {
		t.Errorf("the rerun: exit %d, state %v, want the shape of %v\n%s", r.Code, got, d.want, r.Stderr)
	}
}

func isPatch(r *http.Request) bool { return r.Method == http.MethodPatch }

func isList(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Query().Has("limit") && r.URL.Query().Get("watch") != "true"
}

// TestKilledMidScan: the API server dies after the scan listed some types. The scan
// exits 3 and names the types it could not list; it is never printed as complete. A
// reconcile pass in the same place removes nothing. Once the server is back, both give
// what they give undisturbed.
func TestKilledMidScan(t *testing.T) {
	fin := "mid-scan.example.com/cleanup"
	c := fakecloud.New(t)
	ns := seed(t, fin, 3)
	policy := writePolicy(t, c, fin)
	before := cli.Run(t, cp.AdminKubeconfig, "scan", "-A", "-o", "name")
	if before.Code != 0 {
		t.Fatalf("the undisturbed scan: %d\n%s", before.Code, before.Stderr)
	}

	// The scan lists every type: it dies at the 8th list. A pass lists only the types its
	// rules match, here configmaps: it dies at its first.
	for _, tt := range []struct {
		command []string
		at      int32
	}{
		{[]string{"scan", "-A", "-o", "json"}, 8},
		{[]string{"doctor", "-o", "json"}, 8},
		{[]string{"reconcile", "--once", "--policy", policy, "-o", "json"}, 1},
	} {
		command := tt.command
		t.Run(command[0], func(t *testing.T) {
			p, kubeconfig := proxied(t)
			k := newKiller(t, p)
			var lists atomic.Int32
			p.Cut(func(r *http.Request, answered bool) bool {
				if !answered && isList(r) && lists.Add(1) == tt.at {
					k.now()
					return true
				}
				return false
			})
			start := time.Now()
			r := cli.Run(t, kubeconfig, command...)
			took := time.Since(start)
			if r.Code == 0 {
				t.Fatalf("exit 0 after the API server died mid-scan:\n%s\n%s", r.Stdout, r.Stderr)
			}
			var incomplete []finalizev1alpha1.IncompleteResource
			switch command[0] {
			case "scan":
				var list finalizev1alpha1.StuckObjectList
				if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
					t.Fatalf("scan -o json: %v\n%s", err, r.Stdout)
				}
				incomplete = list.Incomplete
				if r.Code != 3 || len(incomplete) == 0 || !strings.Contains(r.Stderr, "the scan is incomplete") {
					t.Errorf("exit %d with %d incomplete types, want 3 and the types named\n%s", r.Code, len(incomplete), r.Stderr)
				}
			case "doctor":
				var d finalizev1alpha1.Diagnosis
				if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
					t.Fatalf("doctor -o json (exit %d): %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
				}
				incomplete = d.Incomplete
				if r.Code != 3 || len(incomplete) == 0 || !strings.Contains(r.Stderr, "incomplete") {
					t.Errorf("exit %d with %d incomplete types, want 3 and the types named\n%s", r.Code, len(incomplete), r.Stderr)
				}
			case "reconcile":
				// Its only type could not be listed: nothing to act on, and it says so.
				// The policy's own warnings (its rule reads an annotation) may come first.
				want := "error: the pass stopped before it verified or removed anything: could not list any resource type: the connection to the server "
				if r.Code != 1 || r.Stdout != "" || !strings.HasPrefix(withoutWarnings(r.Stderr), want) || c.Hits("deleted-"+ns+"-00") != 0 {
					t.Errorf("exit %d, provider asked %d times, stderr %q; want 1 and %q", r.Code, c.Hits("deleted-"+ns+"-00"), r.Stderr, want)
				}
			}
			for _, in := range incomplete {
				if in.Reason == "" {
					t.Errorf("incomplete %s without a reason", in.Resource)
				}
			}
			t.Logf("%s: exit %d after %s, %d types named as not listed; stderr starts %q", command[0], r.Code, took.Round(time.Millisecond), len(incomplete), firstLine(r.Stderr))

			k.restart(t)
			p.Cut(nil)
			if command[0] == "scan" {
				again := cli.Run(t, kubeconfig, "scan", "-A", "-o", "name")
				if again.Code != 0 || again.Stdout != before.Stdout {
					t.Errorf("the rerun: exit %d\n%s\nwant\n%s", again.Code, again.Stdout, before.Stdout)
				}
			}
		})
	}
	// After both, a pass over the namespace ends where an undisturbed pass ends.
	want := undisturbed(t, c, fin+"-u", 3)
	r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--policy", policy, "-n", ns, "-o", "json")
	if got := state(t, ns); r.Code != 0 || !sameShape(got, want) {
		t.Errorf("the rerun: exit %d, state %v, want the shape of %v\n%s", r.Code, got, want, r.Stderr)
	}
}

// sameShape compares two states whose finalizer names differ by a suffix.
func sameShape(a, b []string) bool {
	norm := func(s []string) []string {
		var out []string
		for _, x := range s {
			name, _, _ := strings.Cut(x, " ")
			out = append(out, name)
		}
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// TestKilledMidVerify: the API server dies while the provider is verifying. The pass
// exits 1 naming each removal it could not make; nothing is removed; the rerun converges.
func TestKilledMidVerify(t *testing.T) {
	const n = 5
	d := disturb(t, "mid-verify.example.com/cleanup", n)
	c, ns, policy, kubeconfig, k := d.c, d.ns, d.policy, d.kubeconfig, d.k
	c.OnRequest(func(id string) {
		if strings.HasPrefix(id, "deleted-"+ns) {
			k.now()
		}
	})
	start := time.Now()
	r := cli.Run(t, kubeconfig, "reconcile", "--once", "--policy", policy, "-n", ns, "-o", "json")
	took := time.Since(start)
	rep := cli.Report(t, r)
	// Each gone object fails: not read, or not written. The present one is kept on its
	// Present, or fails too when the server died before it was read: that depends on
	// which verification the kill lands in.
	if r.Code != 1 || rep.Summary[finalizev1alpha1.ResultRemoved] != 0 || rep.Summary[finalizev1alpha1.ResultFailed] < n {
		t.Errorf("exit %d, summary %v; want 1 and at least %d failed\n%s", r.Code, rep.Summary, n, r.Stderr)
	}
	for _, a := range rep.Actions {
		switch {
		case a.Result == finalizev1alpha1.ResultFailed && !strings.Contains(a.Error, a.Target.Name):
			t.Errorf("a failed removal that does not name its object: %+v", a)
		case a.Result != finalizev1alpha1.ResultFailed && (a.Target.Name != "present" || a.Verdict != finalizev1alpha1.VerdictPresent):
			t.Errorf("neither failed nor kept on Present: %+v", a)
		}
	}
	t.Logf("exit %d after %s; summary %v; a failure reads %q", r.Code, took.Round(time.Millisecond), rep.Summary, firstError(rep, ""))
	c.OnRequest(nil)
	k.restart(t)
	if got := state(t, ns); len(got) != n+2 {
		t.Errorf("after the failed pass: %v; every finalizer should still be there", got)
	}
	d.rerun(t)
}

// firstError is the first error of the report that holds text ("" for any).
func firstError(rep *finalizev1alpha1.ReconcileReport, text string) string {
	for _, a := range rep.Actions {
		if a.Error != "" && strings.Contains(a.Error, text) {
			return a.Error
		}
	}
	return ""
}

// TestKilledMidWrite: the API server applies the third removal and dies before its
// answer leaves. The pass exits 1: two removed, the third named as unknown, the rest
// not done. The rerun converges.
func TestKilledMidWrite(t *testing.T) {
	const n = 6
	d := disturb(t, "mid-write.example.com/cleanup", n)
	p, ns, policy, kubeconfig, k := d.p, d.ns, d.policy, d.kubeconfig, d.k
	var patches atomic.Int32
	p.Cut(func(r *http.Request, answered bool) bool {
		if answered && isPatch(r) && patches.Add(1) == 3 {
			k.now()
			return true
		}
		return false
	})
	start := time.Now()
	r := cli.Run(t, kubeconfig, "reconcile", "--once", "--policy", policy, "-n", ns, "-o", "json", "--write-concurrency", "1")
	took := time.Since(start)
	rep := cli.Report(t, r)
	if r.Code != 1 || rep.Summary[finalizev1alpha1.ResultRemoved] != 2 || rep.Summary[finalizev1alpha1.ResultFailed] != n-2 {
		t.Errorf("exit %d, summary %v; want 1, 2 removed and %d failed\n%s", r.Code, rep.Summary, n-2, r.Stderr)
	}
	unknown := 0
	for _, a := range rep.Actions {
		if a.Result == finalizev1alpha1.ResultFailed && strings.Contains(a.Error, "whether the finalizer was removed is unknown") {
			unknown++
		}
	}
	if unknown != 1 {
		t.Errorf("%d failures say their outcome is unknown, want exactly the write the server took without answering", unknown)
	}
	t.Logf("exit %d after %s; summary %v; the unanswered write reads %q", r.Code, took.Round(time.Millisecond), rep.Summary, firstError(rep, "unknown"))
	for _, a := range rep.Actions {
		t.Logf("%s: %s %s%s", a.Target.Name, a.Result, a.Message, a.Error)
	}
	p.Cut(nil)
	k.restart(t)
	d.rerun(t)
}

// withoutWarnings is what a command printed on stderr, less its "Warning: " lines.
func withoutWarnings(stderr string) string {
	var kept []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if !strings.HasPrefix(l, "Warning: ") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "")
}
