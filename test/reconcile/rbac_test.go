package reconcile

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
)

// auditEvent is what these tests read of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestURI string `json:"requestURI"`
}

// auditSince reads the audit events of user written after offset.
func auditSince(t *testing.T, offset int64, user string) []auditEvent {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("an audit line: %v", err)
		}
		if e.User.Username == user && e.ObjectRef != nil {
			out = append(out, e)
		}
	}
	return out
}

func auditSize(t *testing.T) int64 {
	t.Helper()
	st, err := os.Stat(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// grant is one verb on one resource a role allows, "*" for any.
type grant struct{ verb, group, resource string }

func (g grant) String() string {
	if g.group == "" {
		return g.verb + " " + g.resource
	}
	return g.verb + " " + g.resource + "." + g.group
}

func (g grant) allows(e auditEvent) bool {
	resource := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		resource += "/" + e.ObjectRef.Subresource
	}
	return (g.verb == "*" || g.verb == e.Verb) && (g.group == "*" || g.group == e.ObjectRef.APIGroup) &&
		(g.resource == "*" || g.resource == resource)
}

// grantsOf are the verbs the ClusterRoles and Roles of manifests grant.
func grantsOf(t *testing.T, manifests string) []grant {
	t.Helper()
	var out []grant
	for doc := range strings.SplitSeq(manifests, "\n---\n") {
		var role struct {
			Kind  string              `json:"kind"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind != "ClusterRole" && role.Kind != "Role" {
			continue
		}
		for _, r := range role.Rules {
			for _, v := range r.Verbs {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						out = append(out, grant{v, g, res})
					}
				}
			}
		}
	}
	return out
}

// TestEveryVerbTheGeneratedRBACGrantsIsUsed runs, as a ServiceAccount bound to what
// `kubectl finalize rbac` prints, what a CronJob and a Deployment do: a pass that removes
// a verified finalizer, one whose object changed between the verification and the write,
// and a namespace's own finalizer, then a replica that takes the leader election Lease.
// The API server's audit log shows that every verb the roles grant was used, and that
// no request was refused.
func TestEveryVerbTheGeneratedRBACGrantsIsUsed(t *testing.T) {
	cp.RequireNoControllerManager(t)
	kube := cp.Kube(t)
	ns, empty := cp.Namespace(t), cp.Namespace(t)
	fin := controlplane.FinalizerOf(t)
	c := fakecloud.New(t)
	object(t, ns, "control", fin, "live", false)
	object(t, ns, "gone", fin, "deleted-1", true)
	object(t, ns, "changing", fin, "deleted-changing", true)
	// Not the last finalizer: removed by a patch (the others' last one, by an update).
	if _, err := kube.CoreV1().ConfigMaps(ns).Patch(t.Context(), "gone", types.JSONPatchType,
		[]byte(`[{"op":"add","path":"/metadata/finalizers/-","value":"other.example.com/keep"}]`), metav1.PatchOptions{}); err == nil {
		t.Fatal("a finalizer was added to an object being deleted")
	}
	two := object(t, ns, "two", fin, "deleted-2", false)
	two.Finalizers = append(two.Finalizers, "other.example.com/keep")
	if _, err := kube.CoreV1().ConfigMaps(ns).Update(t.Context(), two, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), "two", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The object changes while its instance is being verified: the pinned write fails,
	// the object is read again and verified again.
	c.OnRequest(func(id string) {
		if id == "deleted-changing" && c.Hits(id) == 1 {
			_, _ = kube.CoreV1().ConfigMaps(ns).Patch(context.Background(), "changing", "application/merge-patch+json",
				[]byte(`{"metadata":{"annotations":{"changed":"yes"}}}`), metav1.PatchOptions{})
		}
	})
	if _, err := kube.CoreV1().Namespaces().Patch(t.Context(), empty, "application/merge-patch+json",
		[]byte(`{"metadata":{"labels":{"kubectl-finalize.test/rbac":"`+fin[:20]+`"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Namespaces().Delete(t.Context(), empty, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := cli.WritePolicy(t, "", c.Rule("dbs", fin, "")+`- name: namespaces
  finalizers: [kubernetes]
  resources: [namespaces]
  selector: "kubectl-finalize.test/rbac=`+fin[:20]+`"
  allowSystem: true
  verify:
    kubernetes: {resource: secrets, namespace: "{.metadata.name}", name: never-created}
  controls: {count: 0}
`)
	kubeconfig, saNamespace, manifests := serviceAccountWith(t, policy, nil, true)
	user := "system:serviceaccount:" + saNamespace + ":reconciler"
	// RBAC takes a moment to see new bindings.
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return canI(t, kubeconfig, "update", "namespaces", "--subresource", "finalize") && canI(t, kubeconfig, "create", "leases", "-n", saNamespace), nil
	}); err != nil {
		t.Fatal("the bindings never took effect")
	}
	offset := auditSize(t)

	rep, r := pass(t, kubeconfig, policy)
	if r.Code != 0 || action(t, rep, "gone").Result != finalizev1alpha1.ResultRemoved || action(t, rep, "changing").Result != finalizev1alpha1.ResultRemoved ||
		action(t, rep, "two").Result != finalizev1alpha1.ResultRemoved ||
		action(t, rep, empty).Result != finalizev1alpha1.ResultRemoved {
		t.Fatalf("the pass as the ServiceAccount: code %d, %+v\n%s", r.Code, rep.Actions, r.Stderr)
	}
	if c.Hits("deleted-changing") != 2 {
		t.Errorf("the changed object was verified %d times, want 2", c.Hits("deleted-changing"))
	}

	// A replica with leader election takes the Lease and renews it.
	p := start(t, kubeconfig, "reconcile", "--policy", policy, "--interval", "1h", "--leader-elect", "--leader-elect-namespace", saNamespace,
		"--metrics-bind-address", "0")
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		lease, err := kube.CoordinationV1().Leases(saNamespace).Get(ctx, "kubectl-finalize", metav1.GetOptions{})
		return err == nil && lease.Spec.RenewTime != nil && lease.Spec.AcquireTime != nil && lease.Spec.RenewTime.After(lease.Spec.AcquireTime.Time), nil
	}); err != nil {
		t.Fatalf("the Lease was not taken and renewed; stderr:\n%s", p.stderr.String())
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 20*time.Second); code != 0 {
		t.Errorf("the replica exited %d:\n%s", code, p.stderr.String())
	}

	events := auditSince(t, offset, user)
	used := map[grant]int{}
	grants := grantsOf(t, manifests)
	for _, e := range events {
		if e.ResponseStatus != nil && (e.ResponseStatus.Code == 401 || e.ResponseStatus.Code == 403) {
			t.Errorf("refused: %s %s (%d)", e.Verb, e.RequestURI, e.ResponseStatus.Code)
		}
		allowed := false
		for _, g := range grants {
			if g.allows(e) {
				used[g]++
				allowed = true
			}
		}
		if !allowed {
			t.Errorf("%s %s is not granted, yet it was asked", e.Verb, e.RequestURI)
		}
	}
	var lines []string
	for _, g := range grants {
		if used[g] == 0 {
			t.Errorf("the roles grant %s, which no pass used", g)
		}
		lines = append(lines, fmt.Sprintf("%-55s %d", g, used[g]))
	}
	sort.Strings(lines)
	t.Logf("%d requests as %s; requests per verb granted:\n%s", len(events), user, strings.Join(slices.Compact(lines), "\n"))
}
