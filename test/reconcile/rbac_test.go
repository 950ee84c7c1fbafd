package reconcile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// grant is one verb on one resource a role allows, "*" for any.
type grant struct{ verb, group, resource string }

func (g grant) String() string {
	if g.group == "" {
		return g.verb + " " + g.resource
	}
	return g.verb + " " + g.resource + "." + g.group
}

func (g grant) allows(e controlplane.AuditEvent) bool {
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
	ns, fin, c := world(t)
	empty := cp.Namespace(t)
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
	audit := auditLog
	offset := audit.Size(t)

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
		t.Fatalf("the Lease was not taken and renewed; stderr:\n%s", p.Stderr.String())
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	if code := p.Wait(t, 20*time.Second); code != 0 {
		t.Errorf("the replica exited %d:\n%s", code, p.Stderr.String())
	}

	used := map[grant]int{}
	grants := grantsOf(t, manifests)
	requests := 0
	for _, e := range audit.Events(t, offset, user) {
		if e.Refused() {
			t.Errorf("refused: %s %s (%d)", e.Verb, e.RequestURI, e.ResponseStatus.Code)
		}
		if e.ObjectRef == nil {
			continue // discovery (/api, /apis), which every authenticated user may read
		}
		requests++
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
	t.Logf("%d requests of resources as %s; requests per verb granted:\n%s", requests, user, strings.Join(slices.Compact(lines), "\n"))
}

// crdFor installs crd (once per control plane: the tests share it) and waits until it is
// served.
func crdFor(t *testing.T, crd seed.CRD) schema.GroupVersionResource {
	t.Helper()
	return fixture.CRD(t, cp.Config, crd)
}

// custom creates an object of gvr with finalizers, an "instance" annotation and labels,
// deleted when stuck is set.
func custom(t *testing.T, gvr schema.GroupVersionResource, kind, ns, name string, finalizers []string, l map[string]string, stuck bool) {
	t.Helper()
	fixture.Instance(t, cp.Config, gvr, kind, ns, name, finalizers, l, stuck)
}

var (
	execProviderOnce sync.Once
	execProvider     string
)

// buildExecProvider builds docs/examples/exec-provider, once.
func buildExecProvider(t *testing.T) string {
	t.Helper()
	execProviderOnce.Do(func() {
		out := filepath.Join(filepath.Dir(binary), "exec-provider")
		if err := cli.GoBuild(out, "../../docs/examples/exec-provider"); err != nil {
			t.Fatal(err)
		}
		execProvider = out
	})
	if execProvider == "" {
		t.Fatal("the example exec provider did not build")
	}
	return execProvider
}

// TestEveryDocumentedPolicyShapeRunsOnItsGeneratedRBAC runs a pass of each shape of policy
// the docs show as a ServiceAccount that holds exactly what `kubectl finalize rbac`
// printed for it: an http rule, an exec rule, a kubernetes provider whose resource is
// written as a singular, a Kind and a short name, glob resources, the ack preset (which
// reads the namespace's annotations), the crossplane-managed preset, and a namespace's own
// finalizer. The API server's audit log shows no request of the pass was refused, the
// pass exits 0 (never 3, an incomplete scan), and the verified removal is made.
func TestEveryDocumentedPolicyShapeRunsOnItsGeneratedRBAC(t *testing.T) {
	cp.RequireNoControllerManager(t)
	kube := cp.Kube(t)
	c := fakecloud.New(t)
	// httpRule asks the Cloud about the instance an object's "instance" annotation names.
	httpRule := func(name, head, url string) string {
		return fmt.Sprintf(`- name: %s
%s  verify:
    http:
      url: "%s/instances/%s"
      tls: {caFile: %q}
      timeout: 3s
      response: {jsonPath: "{.state}", gone: [deleted]}
`, name, head, c.URL, url, c.CAFile)
	}
	backends := seed.CRD{Group: "rbac-shapes.kubectl-finalize.test", Kind: "Backend", Plural: "backends", Singular: "backend", Short: []string{"kfbe"}, Versions: []string{"v1"}}
	widgets := seed.CRD{Group: "widgets.rbac-glob.kubectl-finalize.test", Kind: "Widget", Plural: "widgets", Singular: "widget", Versions: []string{"v1"}}
	gadgets := seed.CRD{Group: "gadgets.rbac-glob.kubectl-finalize.test", Kind: "Gadget", Plural: "gadgets", Singular: "gadget", Versions: []string{"v1"}}
	dbinstances := seed.CRD{Group: "rds.services.k8s.aws", Kind: "DBInstance", Plural: "dbinstances", Singular: "dbinstance", Versions: []string{"v1alpha1"}}
	buckets := seed.CRD{Group: "s3.aws.upbound.io", Kind: "Bucket", Plural: "buckets", Singular: "bucket", Cluster: true, Versions: []string{"v1beta1"}}

	// kubernetesRule asks whether a Backend named by the object's "instance" annotation
	// exists, the provider's resource written as resource.
	kubernetesRule := func(t *testing.T, resource string) (policy string, removed []string) {
		ns, fin := cp.Namespace(t), controlplane.FinalizerOf(t)
		gvr := crdFor(t, backends)
		custom(t, gvr, "Backend", ns, "backend-live", nil, nil, false)
		object(t, ns, "backend-live", fin, "backend-live", false)
		object(t, ns, "gone", fin, "backend-deleted", true)
		return cli.WritePolicy(t, "", `- name: backends
  finalizers: [`+fin+`]
  resources: [configmaps]
  verify:
    kubernetes: {resource: `+resource+`, namespace: "{.metadata.namespace}", name: "{.metadata.annotations.instance}"}
`), []string{"gone"}
	}
	// retained are objects a pass keeps, with the evidence that says why.
	retained := map[string]string{}
	tests := []struct {
		name string
		// setup makes the objects and writes the policy; removed are the objects whose
		// finalizer the pass removes.
		setup func(t *testing.T) (policy string, removed []string)
	}{
		{"http", func(t *testing.T) (string, []string) {
			ns, fin := cp.Namespace(t), controlplane.FinalizerOf(t)
			object(t, ns, "control", fin, "live", false)
			object(t, ns, "gone", fin, "deleted-1", true)
			return cli.WritePolicy(t, "", httpRule("dbs", "  finalizers: ["+fin+"]\n  resources: [configmaps]\n", "{.metadata.annotations.instance}")), []string{"gone"}
		}},
		{"exec", func(t *testing.T) (string, []string) {
			ns, fin := cp.Namespace(t), controlplane.FinalizerOf(t)
			inventory := filepath.Join(t.TempDir(), "inventory.json")
			if err := os.WriteFile(inventory, []byte(`["live"]`), 0o600); err != nil {
				t.Fatal(err)
			}
			object(t, ns, "control", fin, "live", false)
			object(t, ns, "gone", fin, "deleted-1", true)
			return cli.WritePolicy(t, "", `- name: inventory
  finalizers: [`+fin+`]
  resources: [configmaps]
  verify:
    exec:
      command: [`+buildExecProvider(t)+`, --inventory, `+inventory+`, --max-age, 1h, "{.metadata.annotations.instance}"]
`), []string{"gone"}
		}},
		{"kubernetes provider, resource singular", func(t *testing.T) (string, []string) { return kubernetesRule(t, "backend") }},
		{"kubernetes provider, resource a Kind", func(t *testing.T) (string, []string) { return kubernetesRule(t, "Backend") }},
		{"kubernetes provider, resource a short name", func(t *testing.T) (string, []string) { return kubernetesRule(t, "kfbe") }},
		{"glob resources", func(t *testing.T) (string, []string) {
			ns, fin := cp.Namespace(t), controlplane.FinalizerOf(t)
			for _, crd := range []seed.CRD{widgets, gadgets} {
				gvr := crdFor(t, crd)
				custom(t, gvr, crd.Kind, ns, "live-"+crd.Singular, []string{fin}, nil, false)
				custom(t, gvr, crd.Kind, ns, "deleted-"+crd.Singular, []string{fin}, nil, true)
			}
			return cli.WritePolicy(t, "", httpRule("globbed", "  finalizers: ["+fin+"]\n  resources: [\"*.rbac-glob.kubectl-finalize.test\"]\n", "{.metadata.annotations.instance}")),
				[]string{"deleted-widget", "deleted-gadget"}
		}},
		{"ack preset, namespace annotations", func(t *testing.T) (string, []string) {
			deleting, retaining := cp.Namespace(t), cp.Namespace(t)
			for ns, policy := range map[string]string{deleting: "delete", retaining: "retain"} {
				if _, err := kube.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType,
					[]byte(`{"metadata":{"annotations":{"rds.services.k8s.aws/deletion-policy":"`+policy+`"}}}`), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			fin := []string{"finalizers.rds.services.k8s.aws/DBInstance"}
			gvr := crdFor(t, dbinstances)
			custom(t, gvr, "DBInstance", deleting, "live-orders", fin, nil, false)
			custom(t, gvr, "DBInstance", deleting, "deleted-orders", fin, nil, true)
			custom(t, gvr, "DBInstance", retaining, "deleted-kept", fin, nil, true)
			// The namespace's annotation retains what is in it: read, so kept.
			retained["deleted-kept"] = "retained by design: namespace " + retaining + " annotation rds.services.k8s.aws/deletion-policy: retain"
			return cli.WritePolicy(t, "", httpRule("rds", "  preset: ack\n  resources: [dbinstances.rds.services.k8s.aws]\n  namespaces: ["+deleting+", "+retaining+"]\n", "{.metadata.name}")),
				[]string{"deleted-orders"}
		}},
		{"crossplane-managed preset", func(t *testing.T) (string, []string) {
			fin := []string{"finalizer.managedresource.crossplane.io"}
			label := map[string]string{"kubectl-finalize.test/rbac-shape": "crossplane"}
			gvr := crdFor(t, buckets)
			custom(t, gvr, "Bucket", "", "live-rbac-shape", fin, label, false)
			custom(t, gvr, "Bucket", "", "deleted-rbac-shape", fin, label, true)
			// Asked by the identity the preset reads for an upjet provider's object, its
			// external name (an object's own name would be a guess, #38); written here by
			// the test, so trusted from any writer.
			for _, name := range []string{"live-rbac-shape", "deleted-rbac-shape"} {
				cli.Kubectl(cp, "annotate", "buckets.s3.aws.upbound.io/"+name, "crossplane.io/external-name="+name).Succeed(t)
			}
			return cli.WritePolicy(t, "", httpRule("buckets", "  preset: crossplane-managed\n  resources: [buckets.s3.aws.upbound.io]\n  selector: kubectl-finalize.test/rbac-shape=crossplane\n  trustIdentityFromAnyWriter: true\n", "{identity.externalName}")),
				[]string{"deleted-rbac-shape"}
		}},
		{"a namespace's own finalizer", func(t *testing.T) (string, []string) {
			empty := cp.Namespace(t)
			if _, err := kube.CoreV1().Namespaces().Patch(t.Context(), empty, types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"kubectl-finalize.test/rbac-shape":"namespace"}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := kube.CoreV1().Namespaces().Delete(t.Context(), empty, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			return cli.WritePolicy(t, "", `- name: namespaces
  finalizers: [kubernetes]
  resources: [namespaces]
  selector: "kubectl-finalize.test/rbac-shape=namespace"
  allowSystem: true
  verify:
    kubernetes: {resource: secrets, namespace: "{.metadata.name}", name: never-created}
  controls: {count: 0}
`), []string{empty}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clear(retained)
			policy, removed := tt.setup(t)
			kubeconfig, saNamespace, manifests := serviceAccountWith(t, policy, nil, false)
			user := "system:serviceaccount:" + saNamespace + ":reconciler"
			// RBAC takes a moment to see new bindings.
			if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				return canI(t, kubeconfig, "create", "selfsubjectaccessreviews.authorization.k8s.io"), nil
			}); err != nil {
				t.Fatal("the binding never took effect")
			}
			audit := auditLog
			offset := audit.Size(t)
			rep, r := pass(t, kubeconfig, policy)
			events := audit.Events(t, offset, user)
			if len(events) == 0 {
				t.Errorf("the audit log holds no request of %s: the pass did not run as it", user)
			}
			for _, e := range events {
				if e.Refused() {
					t.Errorf("refused: %s %s (%d)", e.Verb, e.RequestURI, e.ResponseStatus.Code)
				}
			}
			if r.Code != 0 {
				t.Errorf("the pass exited %d, want 0\n%s", r.Code, r.Stderr)
			}
			for _, name := range removed {
				if a := action(t, rep, name); a.Result != finalizev1alpha1.ResultRemoved {
					t.Errorf("%s: %s %s: %s %s", name, a.Result, a.Verdict, a.Message, a.Evidence)
				}
			}
			for name, why := range retained {
				if a := action(t, rep, name); a.Result != finalizev1alpha1.ResultKept || !strings.Contains(a.Evidence, why) {
					t.Errorf("%s: %s %s: %s %s; want Kept: %s", name, a.Result, a.Verdict, a.Message, a.Evidence, why)
				}
			}
			if t.Failed() {
				t.Logf("the generated RBAC:\n%s", manifests)
			}
		})
	}
}

// TestTheGeneratedRBACRefusesWhatItCannotResolve: a kubernetes provider's resource that the
// cluster does not serve cannot be granted under its right name, and its provider could
// not resolve it either: `rbac` exits 2 naming the rule and the field, and prints no role.
func TestTheGeneratedRBACRefusesWhatItCannotResolve(t *testing.T) {
	policy := cli.WritePolicy(t, "", `- name: backing
  finalizers: [db.example.com/finalizer]
  resources: [configmaps]
  verify:
    kubernetes: {resource: gizmo, namespace: "{.metadata.namespace}", name: "{.metadata.name}"}
`)
	r := cli.Run(t, cp.AdminKubeconfig, "rbac", "--policy", policy)
	if r.Code != 2 || r.Stdout != "" || !strings.Contains(r.Stderr, `rule backing: verify.kubernetes.resource "gizmo": the server doesn't have a resource type "gizmo"`) {
		t.Errorf("rbac of a provider type the cluster does not serve: code %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
}

// passAs runs a pass as the ServiceAccount of kubeconfig, once its bindings took effect
// (ready), and fails the test on any request of it the API server refused (401, 403).
func passAs(t *testing.T, kubeconfig, saNamespace, policy string, ready func() bool) (*finalizev1alpha1.ReconcileReport, cli.Result, []controlplane.AuditEvent) {
	t.Helper()
	// RBAC takes a moment to see new bindings.
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return ready(), nil
	}); err != nil {
		t.Fatal("the bindings never took effect")
	}
	user := "system:serviceaccount:" + saNamespace + ":reconciler"
	offset := auditLog.Size(t)
	rep, r := pass(t, kubeconfig, policy)
	events := auditLog.Events(t, offset, user)
	if len(events) == 0 {
		t.Errorf("the audit log holds no request of %s: the pass did not run as it", user)
	}
	for _, e := range events {
		if e.Refused() {
			t.Errorf("refused: %s %s (%d)", e.Verb, e.RequestURI, e.ResponseStatus.Code)
		}
	}
	return rep, r, events
}

// TestARuleNamingItsTypeAsKubectlDoesMatchesIt: a rule whose resources name a type by its
// singular, its Kind (with its group) or its short name matches the objects of that type,
// as kubectl resolves the name: remove --policy and the pass remove the verified finalizer
// instead of idling green, `rbac` grants the plural, and the pass as that ServiceAccount
// is never refused.
func TestARuleNamingItsTypeAsKubectlDoesMatchesIt(t *testing.T) {
	gizmos := seed.CRD{Group: "resolve.kubectl-finalize.test", Kind: "Gizmo", Plural: "gizmos", Singular: "gizmo", Short: []string{"kfgz"}, Versions: []string{"v1"}}
	for _, tt := range []struct {
		resource, plural string
		crd              bool
	}{
		{"configmap", "configmaps", false},
		{"cm", "configmaps", false},
		{"ConfigMap", "configmaps", false},
		{"Gizmo.resolve.kubectl-finalize.test", "gizmos.resolve.kubectl-finalize.test", true},
		{"kfgz", "gizmos.resolve.kubectl-finalize.test", true},
	} {
		t.Run(tt.resource, func(t *testing.T) {
			ns, fin, c := world(t)
			if tt.crd {
				custom(t, crdFor(t, gizmos), "Gizmo", ns, "live-gizmo", []string{fin}, nil, false)
			}
			for _, name := range []string{"deleted-gizmo", "deleted-by-remove"} {
				if tt.crd {
					gvr := crdFor(t, gizmos)
					custom(t, gvr, "Gizmo", ns, name, []string{fin}, nil, true)
				} else {
					object(t, ns, name, fin, name, true)
				}
			}
			rule := strings.Replace(c.Rule("named", fin, ""), "resources: [configmaps]", "resources: ["+tt.resource+"]", 1)
			policy := cli.WritePolicy(t, "", rule)
			// remove --policy matches the rule as the pass does: verified, no --force-unverified.
			if r := cli.Run(t, cp.AdminKubeconfig, "remove", tt.plural+"/deleted-by-remove", "-n", ns, "--finalizer", fin, "--policy", policy, "--yes"); r.Code != 0 {
				t.Errorf("remove --policy: code %d\n%s", r.Code, r.Stderr)
			}
			kubeconfig, saNamespace, manifests := serviceAccountWith(t, policy, nil, false)
			resource, group, _ := strings.Cut(tt.plural, ".")
			for _, verb := range []string{"get", "list", "patch"} {
				if !slices.Contains(grantsOf(t, manifests), grant{verb, group, resource}) {
					t.Errorf("the generated RBAC does not grant %s %s:\n%s", verb, tt.plural, manifests)
				}
			}
			rep, r, _ := passAs(t, kubeconfig, saNamespace, policy, func() bool { return canI(t, kubeconfig, "create", "selfsubjectaccessreviews.authorization.k8s.io") })
			if r.Code != 0 || len(rep.Actions) == 0 || action(t, rep, "deleted-gizmo").Result != finalizev1alpha1.ResultRemoved {
				t.Errorf("the pass: code %d, %+v\n%s", r.Code, rep.Actions, r.Stderr)
			}
			if !strings.Contains(r.Stderr, fmt.Sprintf("%q", tt.resource)) || !strings.Contains(r.Stderr, tt.plural) {
				t.Errorf("the pass does not say what %q was resolved to:\n%s", tt.resource, r.Stderr)
			}
		})
	}
}

// TestTheGeneratedRBACGrantsANamespacedRulesTypesOnlyInItsNamespaces: a rule that removes
// a finalizer of Secrets in one namespace is granted secrets in a Role there, and nowhere
// else: the ServiceAccount cannot list secrets in another namespace or cluster-wide. A
// pass as that ServiceAccount lists secrets in that namespace only, and configmaps (a
// rule without namespaces) cluster-wide: it uses every verb each role grants, where the
// role grants it, asks for nothing else, and is never refused.
func TestTheGeneratedRBACGrantsANamespacedRulesTypesOnlyInItsNamespaces(t *testing.T) {
	teamA, fin, c := world(t)
	teamB := cp.Namespace(t)
	kube := cp.Kube(t)
	secret := func(ns, name, instance string, stuck bool) {
		fixture.Create(t, kube.CoreV1().Secrets(ns), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"instance": instance}, Finalizers: []string{fin}}}, stuck)
	}
	secret(teamA, "control", "live", false)
	secret(teamA, "gone", "deleted-secret-a", true)
	secret(teamB, "elsewhere", "deleted-secret-b", true)
	object(t, teamB, "gone-configmap", fin, "deleted-configmap", true)
	secrets := strings.Replace(c.Rule("team-a-secrets", fin, ""), "resources: [configmaps]", "resources: [secrets]\n  namespaces: ["+teamA+"]", 1)
	policy := cli.WritePolicy(t, "", secrets+c.Rule("configmaps", fin, ""))
	kubeconfig, saNamespace, manifests := serviceAccountWith(t, policy, nil, false)

	for doc := range strings.SplitSeq(manifests, "\n---\n") {
		var role struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		grantsSecrets := slices.ContainsFunc(grantsOf(t, doc), func(g grant) bool { return g.resource == "secrets" || g.resource == "*" })
		if grantsSecrets && (role.Kind != "Role" || role.Metadata.Namespace != teamA) {
			t.Errorf("a %s in namespace %q grants secrets:\n%s", role.Kind, role.Metadata.Namespace, doc)
		}
	}
	rep, r, events := passAs(t, kubeconfig, saNamespace, policy, func() bool { return canI(t, kubeconfig, "patch", "secrets", "-n", teamA) })
	// Every verb each role grants was used, where the role grants it, and nothing else
	// was asked.
	type scoped struct {
		grant
		namespace string
	}
	var grants []scoped
	for doc := range strings.SplitSeq(manifests, "\n---\n") {
		var meta struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		for _, g := range grantsOf(t, doc) {
			grants = append(grants, scoped{g, meta.Metadata.Namespace})
		}
	}
	used := map[scoped]bool{}
	for _, e := range events {
		if e.ObjectRef == nil {
			continue // discovery
		}
		allowed := false
		for _, g := range grants {
			if g.allows(e) && (g.namespace == "" || strings.Contains(e.RequestURI, "/namespaces/"+g.namespace+"/")) {
				used[g], allowed = true, true
			}
		}
		if !allowed {
			t.Errorf("%s %s is not granted, yet it was asked", e.Verb, e.RequestURI)
		}
	}
	for _, g := range grants {
		if !used[g] {
			t.Errorf("the roles grant %s (namespace %q), which the pass did not use", g.grant, g.namespace)
		}
	}
	if r.Code != 0 || action(t, rep, "gone").Result != finalizev1alpha1.ResultRemoved || action(t, rep, "gone-configmap").Result != finalizev1alpha1.ResultRemoved {
		t.Errorf("the pass as the ServiceAccount: code %d, %+v\n%s", r.Code, rep.Actions, r.Stderr)
	}
	if slices.ContainsFunc(rep.Actions, func(a finalizev1alpha1.Removal) bool { return a.Target.Name == "elsewhere" }) {
		t.Errorf("the pass acted on a secret outside the rule's namespace: %+v", rep.Actions)
	}
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"list", "secrets", "-n", teamA}, true},
		{[]string{"get", "secrets", "-n", teamA}, true},
		{[]string{"patch", "secrets", "-n", teamA}, true},
		{[]string{"list", "secrets", "-n", teamB}, false},
		{[]string{"get", "secrets", "-n", teamB}, false},
		{[]string{"patch", "secrets", "-n", teamB}, false},
		{[]string{"list", "secrets", "-A"}, false},
		{[]string{"list", "secrets", "-n", saNamespace}, false},
		{[]string{"list", "configmaps", "-A"}, true},
		{[]string{"delete", "secrets", "-n", teamA}, false},
	} {
		if got := canI(t, kubeconfig, tt.args...); got != tt.want {
			t.Errorf("can-i %v: %v, want %v", tt.args, got, tt.want)
		}
	}
	if t.Failed() {
		t.Logf("the generated RBAC:\n%s", manifests)
	}
}

// TestTheGeneratedRBACGrantsAKubernetesProvidersReadsOnlyWhereItReads: a rule of one
// namespace whose kubernetes provider checks that the Secret an object names still
// exists, in the object's own namespace, reads Secrets only there. The generated RBAC
// grants get secrets in a Role of that namespace, not cluster-wide: a pass as the
// ServiceAccount removes the finalizer whose Secret is gone, no request is refused, and
// the account may read no Secret of another namespace.
func TestTheGeneratedRBACGrantsAKubernetesProvidersReadsOnlyWhereItReads(t *testing.T) {
	teamA, fin := cp.Namespace(t), controlplane.FinalizerOf(t)
	teamB := cp.Namespace(t)
	kube := cp.Kube(t)
	fixture.Create(t, kube.CoreV1().Secrets(teamA), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls-live"}}, false)
	cm := func(name, secret string, stuck bool) {
		fixture.Create(t, kube.CoreV1().ConfigMaps(teamA), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"secret": secret}, Finalizers: []string{fin}}}, stuck)
	}
	cm("control", "tls-live", false)
	cm("gone", "tls-deleted", true)
	policy := cli.WritePolicy(t, "", fmt.Sprintf(`- name: tls-configmaps
  finalizers: [%s]
  resources: [configmaps]
  namespaces: [%s]
  verify:
    kubernetes:
      resource: secrets
      namespace: "{.metadata.namespace}"
      name: "{.metadata.annotations.secret}"
`, fin, teamA))
	kubeconfig, saNamespace, manifests := serviceAccountWith(t, policy, nil, false)
	rep, r, _ := passAs(t, kubeconfig, saNamespace, policy, func() bool { return canI(t, kubeconfig, "patch", "configmaps", "-n", teamA) })
	if r.Code != 0 || action(t, rep, "gone").Result != finalizev1alpha1.ResultRemoved {
		t.Errorf("the pass as the ServiceAccount: code %d, %+v\n%s", r.Code, rep.Actions, r.Stderr)
	}
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"get", "secrets", "-n", teamA}, true},
		{[]string{"get", "secrets", "-n", teamB}, false},
		{[]string{"get", "secrets", "-n", saNamespace}, false},
		{[]string{"get", "secrets", "-A"}, false},
	} {
		if got := canI(t, kubeconfig, tt.args...); got != tt.want {
			t.Errorf("can-i %v: %v, want %v", tt.args, got, tt.want)
		}
	}
	if t.Failed() {
		t.Logf("the generated RBAC:\n%s", manifests)
	}
}
