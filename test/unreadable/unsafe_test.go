package unreadable

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// TestTheUnsafeDeletionOfAnUnreadableObject: a namespace cannot finish deleting while it
// holds a ConfigMap the API server cannot read. remove --unsafe-delete refuses it without a
// reason, for an object that can be read, to a user who may delete ConfigMaps but not
// unsafe-delete-ignore-read-errors them, when the name typed is not the object's (--yes
// does not replace it), and sends nothing in a dry run. Then, with the name typed, it
// deletes the object without reading it, records the intent and the record in the audit
// log and an Event, and the namespace goes.
func TestTheUnsafeDeletionOfAnUnreadableObject(t *testing.T) {
	cp.RequireControllerManager(t)
	ctx, kube := t.Context(), cp.Kube(t)
	ns, other := cp.Namespace(t), cp.Namespace(t)
	fixture.Create(t, kube.CoreV1().ConfigMaps(ns), fixture.ConfigMap("fine", nil), false)
	fixture.Create(t, kube.CoreV1().ConfigMaps(ns), fixture.ConfigMap("bad", nil, "example.com/hold"), true)
	fixture.Create(t, kube.CoreV1().ConfigMaps(other), fixture.ConfigMap("readable", nil), false)
	bad := corrupt(t, "configmaps", ns, "bad")
	key := bad.key
	start := time.Now()
	step := func(what string) { t.Logf("%s: %s", time.Since(start).Round(time.Millisecond), what) }
	still := func(when string) {
		t.Helper()
		if v, err := cp.EtcdGet(ctx, key); err != nil || !bytes.Equal(v, undecodable) {
			t.Fatalf("%s: the key %s holds %q (%v), not the bytes written", when, key, v, err)
		}
	}
	unsafe := []string{"remove", "configmaps/bad", "-n", ns, "--unsafe-delete", "--force-unverified", "--reason", "key lost with the old control plane (INC-77)"}

	// The refusals.
	if r := cli.Run(t, cp.AdminKubeconfig, "remove", "configmaps/bad", "-n", ns, "--unsafe-delete"); r.Code != 2 ||
		!strings.Contains(r.Stderr, "--unsafe-delete requires --force-unverified and --reason") {
		t.Errorf("no reason: exit %d\n%s", r.Code, r.Stderr)
	}
	if r := cli.RunWithInput(t, cp.AdminKubeconfig, "readable\n", "remove", "configmaps/readable", "-n", other, "--unsafe-delete", "--force-unverified", "--reason", "x"); r.Code != 1 ||
		!strings.Contains(r.Stderr, "configmaps/readable -n "+other+": unsafe deletion: the API server reads it") {
		t.Errorf("a readable object: exit %d\n%s", r.Code, r.Stderr)
	}
	mayDelete := forbiddenTheUnsafeVerb(t)
	if r := cli.RunWithInput(t, mayDelete, "bad\n", unsafe...); r.Code != 1 ||
		!strings.Contains(r.Stderr, "unsafe deletion: you may not unsafe-delete-ignore-read-errors configmaps in namespace "+ns+" (name bad)") {
		t.Errorf("without the verb: exit %d\n%s", r.Code, r.Stderr)
	}
	if r := cli.RunWithInput(t, cp.AdminKubeconfig, "configmaps/bad\n", unsafe...); r.Code != 1 ||
		!strings.Contains(r.Stderr, "The name typed is not \"bad\".\nNothing was removed.\nerror: the unsafe deletion was not confirmed: nothing was deleted") || r.Stdout != "" {
		t.Errorf("the wrong name typed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := cli.Run(t, cp.AdminKubeconfig, append(unsafe, "--yes")...); r.Code != 1 || !strings.Contains(r.Stderr, "Nothing was removed.") {
		t.Errorf("--yes and no name: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r := cli.Run(t, cp.AdminKubeconfig, append(unsafe, "--dry-run=server")...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "configmaps/bad -n "+ns+": would be deleted without reading it (server dry run: nothing was sent: the API server refuses dryRun") {
		t.Errorf("dry run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	still("after the refusals and the dry run")

	step("refusals")

	// Typed, it goes, recorded; then its namespace, which could not finish, goes.
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r = cli.RunWithInput(t, cp.AdminKubeconfig, "bad\n", append(unsafe, "--audit-log", audit)...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "configmaps/bad -n "+ns+": deleted without reading it; the object is gone") {
		t.Fatalf("the unsafe deletion: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	bad.done = true // deleted: nothing to put back
	step("deleted")
	if v, err := cp.EtcdGet(ctx, key); err != nil || v != nil {
		t.Errorf("the key %s holds %q (%v) after the deletion", key, v, err)
	}
	stages := map[string]map[string]any{}
	f, err := os.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		var line map[string]any
		if err := json.Unmarshal(s.Bytes(), &line); err != nil {
			t.Fatalf("audit line %q: %v", s.Text(), err)
		}
		stage, _ := line["stage"].(string)
		stages[stage] = line
	}
	for _, stage := range []string{"Intent", "Complete"} {
		line := stages[stage]
		if line == nil || line["action"] != plan.ReasonUnreadableObjectDeletedUnverified || line["reason"] != "key lost with the old control plane (INC-77)" {
			t.Errorf("audit %s line: %v", stage, line)
		}
	}
	if rec := stages["Complete"]; rec != nil && rec["result"] != "Removed" {
		t.Errorf("audit record: %v", rec)
	}
	events, err := kube.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range events.Items {
		if ev.Regarding.Name == "bad" && ev.Regarding.Namespace == ns && ev.Reason == plan.ReasonUnreadableObjectDeletedUnverified {
			// The API server names the key without its storage prefix.
			found = strings.Contains(ev.Note, "Deleted without reading it (etcd key /configmaps/"+ns+"/bad)") && strings.Contains(ev.Note, "forced with reason: key lost")
			if !found {
				t.Errorf("Event note: %s", ev.Note)
			}
		}
	}
	if !found {
		t.Errorf("no Event of the unsafe deletion in namespace default")
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Errorf("the namespace did not go after the unsafe deletion: %v", err)
	}
	step("namespace gone")
}

// forbiddenTheUnsafeVerb writes a kubeconfig for a user who may read everything, delete
// ConfigMaps and create Events, but not unsafe-delete-ignore-read-errors anything, and
// returns its path.
func forbiddenTheUnsafeVerb(t *testing.T) string {
	t.Helper()
	return cp.ClusterRoleUser(t, "may-delete",
		rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"delete"}},
		rbacv1.PolicyRule{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}})
}
