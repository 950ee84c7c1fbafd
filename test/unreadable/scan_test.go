package unreadable

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// undecodable is what a partial write or a bug leaves in etcd: the API server's protobuf
// envelope around bytes it cannot decode ("proto: wrong wireType = 7").
var undecodable = []byte("k8s\x00\x0f\xff\xff not a ConfigMap")

// corrupt overwrites the object ns/name of resource (its etcd key under the default
// prefix) with bytes the API server cannot decode. Its good bytes are put back when t
// ends, unless the test restored it or deleted it first (corruption).
func corrupt(t *testing.T, resource, ns, name string) *corruption {
	t.Helper()
	c := &corruption{key: controlplane.EtcdPrefix + "/" + resource + "/" + ns + "/" + name}
	good, err := cp.EtcdGet(t.Context(), c.key)
	if err != nil || good == nil {
		t.Fatalf("etcd key %s: %q %v", c.key, good, err)
	}
	c.good = good
	if err := cp.EtcdPut(t.Context(), c.key, undecodable); err != nil {
		t.Fatal(err)
	}
	// Restored first, so that the namespace and the other objects can go.
	t.Cleanup(func() {
		if c.done {
			return
		}
		if err := cp.EtcdPut(context.Background(), c.key, good); err != nil {
			t.Errorf("restoring %s: %v", c.key, err)
		}
	})
	return c
}

// corruption is an object corrupt made unreadable: its etcd key and its good bytes.
type corruption struct {
	key  string
	good []byte
	// done: restored or deleted by the test, nothing to put back.
	done bool
}

// restore puts the object's good bytes back.
func (c *corruption) restore(ctx context.Context) error {
	c.done = true
	return cp.EtcdPut(ctx, c.key, c.good)
}

// TestOneObjectTheAPIServerCannotRead: one ConfigMap whose bytes in etcd the API server
// cannot decode fails every list of ConfigMaps that reaches it. The scan lists each
// namespace instead, walks past the object in its namespace, finds the stuck ConfigMaps
// before and after it there and in every other namespace, and reports the object as a row
// of its own, named by the key the API server's error gives.
func TestOneObjectTheAPIServerCannotRead(t *testing.T) {
	ctx, kube := t.Context(), cp.Kube(t)
	broken, other := cp.Namespace(t), cp.Namespace(t)
	for _, name := range []string{"a-stuck", "b-fine", "c-bad", "d-stuck", "e-fine"} {
		fin := []string(nil)
		if strings.HasSuffix(name, "stuck") {
			fin = []string{"example.com/hold"}
		}
		fixture.Create(t, kube.CoreV1().ConfigMaps(broken), fixture.ConfigMap(name, nil, fin...), fin != nil)
	}
	fixture.StuckConfigMap(t, kube, other, "x-stuck", nil, "example.com/hold")
	corrupt(t, "configmaps", broken, "c-bad")
	if _, err := kube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 500}); err == nil {
		t.Fatal("a list of every ConfigMap still works: the object is not corrupt")
	}

	r := cli.Run(t, cp.AdminKubeconfig, "scan", "configmaps", "-o", "json")
	var list finalizev1alpha1.StuckObjectList
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("scan: %v (exit %d)\n%s", err, r.Code, r.Stderr)
	}
	got := map[string]*finalizev1alpha1.StuckObject{}
	for i, it := range list.Items {
		got[it.Target.Namespace+"/"+it.Target.Name] = &list.Items[i]
	}
	for _, want := range []string{broken + "/a-stuck", broken + "/d-stuck", other + "/x-stuck"} {
		if got[want] == nil || got[want].Unreadable != nil {
			t.Errorf("%s is not found stuck: %+v", want, got[want])
		}
	}
	bad := got[broken+"/c-bad"]
	switch {
	case bad == nil || bad.Unreadable == nil:
		t.Fatalf("the object the API server cannot read is not a row:\n%s", r.Stdout)
	case bad.Unreadable.Key != controlplane.EtcdPrefix+"/configmaps/"+broken+"/c-bad",
		!strings.Contains(bad.Unreadable.Message, "corrupt object"),
		bad.Unreadable.Uncertain != "",
		bad.Target.Kind != "ConfigMap" || bad.Target.Resource != "configmaps":
		t.Errorf("the unreadable row: %+v %+v", bad.Target, bad.Unreadable)
	}
	if r.Code != 0 || len(list.Incomplete) != 0 {
		t.Errorf("exit %d, incomplete %+v\n%s", r.Code, list.Incomplete, r.Stderr)
	}

	// The table names it, with what cannot be known.
	r = cli.Run(t, cp.AdminKubeconfig, "scan", "configmaps", "-n", broken)
	if r.Code != 0 || !strings.Contains(r.Stdout, "configmaps/c-bad") || !strings.Contains(r.Stdout, "<unreadable>") {
		t.Errorf("scan -n %s: exit %d\n%s%s", broken, r.Code, r.Stdout, r.Stderr)
	}
	// The doctor: a root cause of its own, what it blocks and the safe order.
	r = cli.Run(t, cp.AdminKubeconfig, "doctor", "-o", "json")
	var d finalizev1alpha1.Diagnosis
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
		t.Fatalf("doctor: %v (exit %d)\n%s", err, r.Code, r.Stderr)
	}
	var cause *finalizev1alpha1.Cause
	for _, it := range d.Items {
		if it.Unreadable != nil && it.Target.Name == "c-bad" {
			cause = it.Cause
		}
	}
	if cause == nil || cause.Reason != finalizev1alpha1.ReasonUnreadable {
		t.Fatalf("doctor: the unreadable object's cause %+v\n%s", cause, r.Stdout)
	}
	for _, want := range []string{"the API server cannot read configmaps/c-bad -n " + broken, "a partial write, a bug, or a damaged disk",
		"namespace " + broken + " cannot finish deleting"} {
		if !strings.Contains(cause.Message, want) {
			t.Errorf("cause %q lacks %q", cause.Message, want)
		}
	}
	if !strings.HasPrefix(cause.NextStep, "restore it first") || !strings.Contains(cause.NextStep, "AllowUnsafeMalformedObjectDeletion") {
		t.Errorf("next step %q", cause.NextStep)
	}
	root := false
	for _, rc := range d.RootCauses {
		root = root || rc.Reason == finalizev1alpha1.ReasonUnreadable && rc.Subject.Name == "c-bad" && len(rc.Objects) == 1
	}
	if !root {
		t.Errorf("no root cause for it: %+v", d.RootCauses)
	}
	r = cli.Run(t, cp.AdminKubeconfig, "doctor")
	if !strings.Contains(r.Stdout, "Unreadable: ConfigMap "+broken+"/c-bad") {
		t.Errorf("doctor: exit %d\n%s", r.Code, r.Stdout)
	}
}
