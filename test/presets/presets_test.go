// Package presets tests the presets on the real control plane: objects of each
// operator's shape, verified through an HTTPS API that plays the cloud by identity.
package presets

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.APIServer(), &cp) }

// The field managers the simulated operators write as: the names the real operators'
// clients send (pkg/preset/builtin.go cites where each comes from). A preset trusts an
// identity only from these, so a simulation under any other name would test nothing.
const (
	// upjetProvider is a Crossplane upjet provider's binary, /usr/local/bin/provider.
	upjetProvider = "provider"
	// ackController is an ACK service controller's binary, /bin/controller.
	ackController = "controller"
	// configConnector is the field manager Config Connector names.
	configConnector = "cnrm-controller-manager"
	// loadBalancerController is the AWS Load Balancer Controller's binary, /controller.
	loadBalancerController = "controller"
)

// world creates objects and lets them go when the test ends.
type world struct {
	t   *testing.T
	dyn dynamic.Interface
	s   *seed.Seeder
	// manager is the field manager objects are created and their status set with, as
	// their operator; empty means the test binary's name, as client-go derives it from
	// the user agent.
	manager string
}

func newWorld(t *testing.T) *world {
	s, err := seed.New(cp.Config, "presets")
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, dyn: s.Dynamic, s: s}
}

func (w *world) crd(group, kind, plural string, cluster bool) schema.GroupVersionResource {
	w.t.Helper()
	crd := seed.CRD{Group: group, Kind: kind, Plural: plural, Singular: strings.ToLower(kind), Cluster: cluster, Versions: []string{"v1"}}
	if err := w.s.EnsureCRD(w.t.Context(), crd); err != nil {
		w.t.Fatal(err)
	}
	return crd.GVR()
}

// object creates an object with a finalizer, sets its status, and deletes it unless
// live.
func (w *world) object(gvr schema.GroupVersionResource, ns, name, finalizer string, annotations map[string]string, spec, status map[string]any, live bool) {
	w.t.Helper()
	u := fixture.Custom(gvr, kindOf(gvr), ns, name, finalizer)
	if spec != nil {
		u.Object["spec"] = spec
	}
	u.SetAnnotations(annotations)
	c := fixture.Resource(w.dyn, gvr, ns)
	c.Manager = w.manager
	created := fixture.Held(w.t, c, u)
	if status != nil {
		created.Object["status"] = status
		if _, err := c.UpdateStatus(w.t.Context(), created, metav1.UpdateOptions{FieldManager: w.manager}); err != nil {
			w.t.Fatal(err)
		}
	}
	if !live {
		fixture.Delete(w.t, c, name)
	}
}

var kinds = map[string]string{}

func kindOf(gvr schema.GroupVersionResource) string { return kinds[gvr.Resource] }

// pass runs one reconcile pass and returns the action about each object, by name.
func pass(t *testing.T, rules string) (map[string]finalizev1alpha1.Removal, *finalizev1alpha1.ReconcileReport, cli.Result) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	doc := "apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nminAge: 0s\nrules:\n" + rules
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--policy", path, "-o", "json")
	rep := &finalizev1alpha1.ReconcileReport{}
	if err := json.Unmarshal([]byte(r.Stdout), rep); err != nil {
		t.Fatalf("code %d: %v\n%s", r.Code, err, r.Stderr)
	}
	out := map[string]finalizev1alpha1.Removal{}
	for _, a := range rep.Actions {
		out[a.Target.Name] = a
	}
	return out, rep, r
}

// rule is a rule with a preset, asking the cloud about one identity value.
func rule(c *fakecloud.Cloud, name, preset, resources, identity, extra string) string {
	return fmt.Sprintf(`- name: %s
  preset: %s
  resources: [%s]
  verify:
    http:
      url: "%s/instances/{identity.%s}"
      tls: {caFile: %q}
      response: {jsonPath: "{.state}", gone: [deleted]}
%s`, name, preset, resources, c.URL, identity, c.CAFile, extra)
}

// exits fails t unless the pass exited with code and its stderr says says.
func exits(t *testing.T, r cli.Result, code int, says string) {
	t.Helper()
	if r.Code != code || !strings.Contains(r.Stderr, says) {
		t.Errorf("code %d, want %d saying %q: %s", r.Code, code, says, r.Stderr)
	}
}

// notAsked fails t if the cloud was asked about any of ids.
func notAsked(t *testing.T, c *fakecloud.Cloud, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if c.Hits(id) != 0 {
			t.Errorf("the cloud was asked about %s: %v", id, c.Asked())
		}
	}
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

func TestCrossplaneManaged(t *testing.T) {
	w := newWorld(t)
	w.manager = upjetProvider
	c := fakecloud.New(t)
	kinds["buckets"] = "Bucket"
	gvr := w.crd("s3.presets.upbound.io", "Bucket", "buckets", true)
	const fin = "finalizer.managedresource.crossplane.io"
	name := func(n string) map[string]string { return map[string]string{"crossplane.io/external-name": n} }
	w.object(gvr, "", "control", fin, name("live-bucket"), nil, nil, true)
	w.object(gvr, "", "gone", fin, name("deleted-bucket-1"), nil, nil, false)
	w.object(gvr, "", "present", fin, name("bucket-2"), nil, nil, false)
	w.object(gvr, "", "orphaned", fin, name("deleted-bucket-3"), map[string]any{"deletionPolicy": "Orphan"}, nil, false)
	w.object(gvr, "", "observe-only", fin, name("deleted-bucket-4"), map[string]any{"managementPolicies": []any{"Observe"}}, nil, false)
	w.object(gvr, "", "paused", fin, map[string]string{"crossplane.io/external-name": "deleted-bucket-5", "crossplane.io/paused": "true"}, nil, nil, false)
	actions, _, r := pass(t, rule(c, "buckets", "crossplane-managed", "buckets.s3.presets.upbound.io", "externalName", ""))
	want(t, actions, "gone", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "/instances/deleted-bucket-1: 404 Not Found")
	want(t, actions, "present", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictPresent, "/instances/bucket-2: 200 OK")
	want(t, actions, "orphaned", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictRetained, "retained by design: spec.deletionPolicy: Orphan")
	want(t, actions, "observe-only", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictRetained, "spec.managementPolicies: [Observe], without Delete")
	want(t, actions, "paused", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown, "annotation crossplane.io/paused: true")
	notAsked(t, c, "deleted-bucket-3", "deleted-bucket-4", "deleted-bucket-5")
	exits(t, r, 0, "")
	// allowRetained lets the retained ones go; the paused one still stays.
	actions, _, _ = pass(t, rule(c, "buckets", "crossplane-managed", "buckets.s3.presets.upbound.io", "externalName", "  allowRetained: true\n"))
	want(t, actions, "orphaned", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictRetained, "Orphan")
	want(t, actions, "observe-only", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictRetained, "without Delete")
	want(t, actions, "paused", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown, "paused")
}

func TestACK(t *testing.T) {
	w := newWorld(t)
	w.manager = ackController
	c := fakecloud.New(t)
	kinds["dbinstances"] = "DBInstance"
	gvr := w.crd("rds.services.k8s.aws", "DBInstance", "dbinstances", false)
	const fin = "finalizers.rds.services.k8s.aws/DBInstance"
	ns, retaining := cp.Namespace(t), cp.Namespace(t)
	if _, err := cp.Kube(t).CoreV1().Namespaces().Patch(t.Context(), retaining, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"rds.services.k8s.aws/deletion-policy":"retain"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	const prefix = "arn:aws:rds:eu-west-1:123456789012:db:"
	arn := func(a string) map[string]any {
		return map[string]any{"ackResourceMetadata": map[string]any{"arn": a, "ownerAccountID": "123456789012", "region": "eu-west-1"}}
	}
	w.object(gvr, ns, "control", fin, nil, nil, arn(prefix+"live"), true)
	w.object(gvr, ns, "gone", fin, nil, nil, arn(prefix+"deleted-1"), false)
	w.object(gvr, ns, "present", fin, nil, nil, arn(prefix+"db-2"), false)
	w.object(gvr, ns, "retained", fin, map[string]string{"services.k8s.aws/deletion-policy": "retain"}, nil, arn(prefix+"deleted-3"), false)
	w.object(gvr, retaining, "namespace-retained", fin, nil, nil, arn(prefix+"deleted-4"), false)
	w.object(gvr, ns, "read-only", fin, map[string]string{"services.k8s.aws/read-only": "true"}, nil, arn(prefix+"deleted-5"), false)
	// An ARN whose account has 11 digits names no instance (the cloud would answer 404):
	// not asked about.
	w.object(gvr, ns, "malformed", fin, nil, nil, arn("arn:aws:rds:eu-west-1:12345678901:db:deleted-6"), false)
	actions, _, _ := pass(t, rule(c, "rds", "ack", "dbinstances.rds.services.k8s.aws", "arn", ""))
	want(t, actions, "gone", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "/instances/"+prefix+"deleted-1: 404")
	want(t, actions, "present", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictPresent, "/instances/"+prefix+"db-2: 200")
	want(t, actions, "malformed", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown,
		`identity arn is "arn:aws:rds:eu-west-1:12345678901:db:deleted-6", which is not an ARN`)
	notAsked(t, c, "deleted-6")
	want(t, actions, "retained", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictRetained, "annotation services.k8s.aws/deletion-policy: retain")
	want(t, actions, "namespace-retained", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictRetained, "namespace "+retaining+" annotation rds.services.k8s.aws/deletion-policy: retain")
	want(t, actions, "read-only", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown, "annotation services.k8s.aws/read-only: true")
}

func TestConfigConnector(t *testing.T) {
	w := newWorld(t)
	w.manager = configConnector
	c := fakecloud.New(t)
	kinds["sqlinstances"] = "SQLInstance"
	gvr := w.crd("sql.cnrm.cloud.google.com", "SQLInstance", "sqlinstances", false)
	const fin = "cnrm.cloud.google.com/finalizer"
	ns := cp.Namespace(t)
	w.object(gvr, ns, "control", fin, nil, map[string]any{"resourceID": "live-sql"}, nil, true)
	w.object(gvr, ns, "deleted-by-name", fin, nil, nil, nil, false)
	w.object(gvr, ns, "present", fin, nil, map[string]any{"resourceID": "sql-2"}, nil, false)
	w.object(gvr, ns, "abandoned", fin, map[string]string{"cnrm.cloud.google.com/deletion-policy": "abandon"}, map[string]any{"resourceID": "deleted-sql-3"}, nil, false)
	actions, _, _ := pass(t, rule(c, "sql", "config-connector", "sqlinstances.sql.cnrm.cloud.google.com", "resourceID", ""))
	want(t, actions, "deleted-by-name", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "/instances/deleted-by-name: 404")
	want(t, actions, "present", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictPresent, "/instances/sql-2: 200")
	want(t, actions, "abandoned", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictRetained, "cnrm.cloud.google.com/deletion-policy: abandon")
}

func TestAWSLoadBalancer(t *testing.T) {
	c := fakecloud.New(t)
	kube := cp.Kube(t)
	ns := cp.Namespace(t)
	service := func(name, hostname string, live bool) {
		svcs := kube.CoreV1().Services(ns)
		created := fixture.Held(t, svcs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"service.k8s.aws/resources"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}})
		created.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: hostname}}
		if _, err := svcs.UpdateStatus(t.Context(), created, metav1.UpdateOptions{FieldManager: loadBalancerController}); err != nil {
			t.Fatal(err)
		}
		if !live {
			fixture.Delete(t, svcs, name)
		}
	}
	service("control", "live-lb.elb.amazonaws.com", true)
	service("gone", "deleted-lb-1.elb.amazonaws.com", false)
	service("present", "lb-2.elb.amazonaws.com", false)
	// ingress makes an ingress of group, or of its own load balancer without one.
	ingress := func(name, group string, live bool) {
		finalizer := "ingress.k8s.aws/resources"
		if group != "" {
			finalizer = "group.ingress.k8s.aws/" + group
		}
		fixture.Create(t, kube.NetworkingV1().Ingresses(ns), &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{finalizer}},
			Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}, !live)
	}
	// Group "deleted-shop": its load balancer is gone, yet one member still lives.
	ingress("shop-front", "deleted-shop", true)
	ingress("shop-admin", "deleted-shop", false)
	// Group "deleted-blog": every member is being deleted, and its load balancer is gone.
	ingress("blog", "deleted-blog", false)
	ingress("live-member", "live-group", true)
	// The holders of a group's finalizer are never controls: their live holders, not the
	// provider, decide their verdict. An ingress with a load balancer of its own checks the
	// provider for the rule's ingresses.
	ingress("ingress-control", "", true)
	// A stack (NAMESPACE/NAME) is no path segment: the load balancer is found by its tag,
	// in the query.
	rules := rule(c, "services", "aws-load-balancer", "services", "hostname", "") +
		strings.Replace(rule(c, "ingress-groups", "aws-load-balancer", "ingresses.networking.k8s.io", "stack", ""), "/instances/{identity.stack}", "/load-balancers?stack={identity.stack}", 1)
	actions, rep, _ := pass(t, rules)
	want(t, actions, "gone", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "/instances/deleted-lb-1.elb.amazonaws.com: 404")
	want(t, actions, "present", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictPresent, "200")
	want(t, actions, "shop-admin", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictPresent, "is shared, and 1 live objects still carry it (ingresses.networking.k8s.io/shop-front -n "+ns+")")
	want(t, actions, "blog", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "/load-balancers?stack=deleted-blog: 404")
	warned := false
	for _, st := range rep.Rules {
		for _, w := range st.Warnings {
			warned = warned || strings.Contains(w, "re-adopts a load balancer by its tags")
		}
	}
	if !warned {
		t.Errorf("the report does not warn about re-adoption by tags: %+v", rep.Rules)
	}
}

func TestCSIVolume(t *testing.T) {
	c := fakecloud.New(t)
	kube := cp.Kube(t)
	pv := func(name, handle string, policy corev1.PersistentVolumeReclaimPolicy, live bool) {
		fixture.Create(t, kube.CoreV1().PersistentVolumes(), &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"external-provisioner.volume.kubernetes.io/finalizer"}},
			Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resourceQuantity("1Gi")}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: policy, PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: handle}}}}, !live)
	}
	pv("presets-control", "live-vol", corev1.PersistentVolumeReclaimDelete, true)
	pv("presets-gone", "deleted-vol-1", corev1.PersistentVolumeReclaimDelete, false)
	pv("presets-present", "vol-2", corev1.PersistentVolumeReclaimDelete, false)
	pv("presets-retain", "deleted-vol-3", corev1.PersistentVolumeReclaimRetain, false)
	// The external-provisioner's finalizer is in a domain Kubernetes reserves
	// (volume.kubernetes.io): a system finalizer, which the rule must allow.
	actions, _, _ := pass(t, rule(c, "volumes", "csi-volume", "persistentvolumes", "volumeHandle", ""))
	if a := actions["presets-gone"]; a.Result != finalizev1alpha1.ResultKept || a.Verdict != finalizev1alpha1.VerdictGone || !strings.Contains(a.Message, "it is a system finalizer") {
		t.Errorf("without allowSystem: %+v", a)
	}
	actions, _, _ = pass(t, rule(c, "volumes", "csi-volume", "persistentvolumes", "volumeHandle", "  allowSystem: true\n"))
	want(t, actions, "presets-gone", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "/instances/deleted-vol-1: 404")
	want(t, actions, "presets-present", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictPresent, "/instances/vol-2: 200")
	want(t, actions, "presets-retain", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictRetained, "spec.persistentVolumeReclaimPolicy: Retain")

	// The doctor names what to look up.
	r := cli.Run(t, cp.AdminKubeconfig, "doctor", "persistentvolume/presets-retain", "-o", "json")
	var d finalizev1alpha1.Diagnosis
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil || len(d.Items) == 0 || d.Items[0].Cause == nil || d.Items[0].Cause.External == nil {
		t.Fatalf("doctor: %v %s %s", err, r.Stdout, r.Stderr)
	}
	ext := d.Items[0].Cause.External
	if ext.Preset != "csi-volume" || ext.Identity["volumeHandle"] != "deleted-vol-3" || ext.Identity["driver"] != "ebs.csi.aws.com" || ext.Retained != "spec.persistentVolumeReclaimPolicy: Retain" ||
		!strings.Contains(d.Items[0].Cause.Message, "its external resource (preset csi-volume) is driver=ebs.csi.aws.com, volumeHandle=deleted-vol-3; it is meant to outlive the object") {
		t.Errorf("doctor: %+v\n%s", ext, d.Items[0].Cause.Message)
	}
}

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// ruleStatus finds the report's status of a rule.
func ruleStatus(rep *finalizev1alpha1.ReconcileReport, name string) finalizev1alpha1.RuleStatus {
	for _, st := range rep.Rules {
		if st.Rule == name {
			return st
		}
	}
	return finalizev1alpha1.RuleStatus{}
}

// TestAControlTheObjectDecidesProvesNothing: the rule's URL has a typo that makes every
// answer 404, and its one live control says deletionPolicy: Orphan. Retained is what the
// object says of itself, without the provider: it proves nothing, so the rule is not
// trusted, and as none of its controls could be checked while a Gone waits, it cannot
// verify: the pass fails rather than stay green removing nothing. With a second live
// control drawn in its place, the typo shows: the rule is broken, and the pass fails.
func TestAControlTheObjectDecidesProvesNothing(t *testing.T) {
	w := newWorld(t)
	w.manager = upjetProvider
	c := fakecloud.New(t)
	kinds["topics"] = "Topic"
	gvr := w.crd("earned.presets.upbound.io", "Topic", "topics", true)
	const fin = "finalizer.managedresource.crossplane.io"
	name := func(n string) map[string]string { return map[string]string{"crossplane.io/external-name": n} }
	w.object(gvr, "", "a-orphaned-control", fin, name("live-topic-1"), map[string]any{"deletionPolicy": "Orphan"}, nil, true)
	w.object(gvr, "", "stuck", fin, name("topic-9"), nil, nil, false)
	typo := func(controls string) string {
		return fmt.Sprintf(`- name: topics
  preset: crossplane-managed
  resources: [topics.earned.presets.upbound.io]
  verify:
    http:
      url: "%s/instances/deleted-{identity.externalName}"
      tls: {caFile: %q}
%s`, c.URL, c.CAFile, controls)
	}
	actions, rep, r := pass(t, typo(""))
	want(t, actions, "stuck", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictGone, "proves nothing about the provider")
	if st := ruleStatus(rep, "topics"); st.Broken || !strings.Contains(st.Distrust, "retained by design: spec.deletionPolicy: Orphan") ||
		!strings.Contains(st.CannotVerify, "no live control of topics.earned.presets.upbound.io could be asked, so the Gone of topics.earned.presets.upbound.io/stuck was held back") {
		t.Errorf("rule status %+v", st)
	}
	notAsked(t, c, "deleted-live-topic-1")
	exits(t, r, 1, "rule topics cannot verify: no live control of topics.earned.presets.upbound.io could be asked")

	// One control a rule: the retained one is skipped, and the next live object drawn.
	w.object(gvr, "", "b-control", fin, name("live-topic-2"), nil, nil, true)
	actions, rep, r = pass(t, typo("  controls: {count: 1}\n"))
	want(t, actions, "stuck", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictGone, "the provider is broken: it called topics.earned.presets.upbound.io/b-control")
	if st := ruleStatus(rep, "topics"); !st.Broken || len(st.Controls) != 1 || st.Controls[0].Target.Name != "b-control" {
		t.Errorf("rule status %+v", st)
	}
	exits(t, r, 1, "rule topics is broken")
}

// TestControlsArePerType: a rule spans two types. Its provider answers well for the live
// object of one type; nothing checks it for the other, so a Gone of that other type is
// not trusted, while a Gone of the checked type is. The rule cannot verify the other
// type, and says so: the pass fails.
func TestControlsArePerType(t *testing.T) {
	w := newWorld(t)
	w.manager = upjetProvider
	c := fakecloud.New(t)
	kinds["tables"], kinds["streams"] = "Table", "Stream"
	tables := w.crd("pertype.presets.upbound.io", "Table", "tables", true)
	streams := w.crd("pertype.presets.upbound.io", "Stream", "streams", true)
	const fin = "finalizer.managedresource.crossplane.io"
	name := func(n string) map[string]string { return map[string]string{"crossplane.io/external-name": n} }
	w.object(tables, "", "table-control", fin, name("live-table"), nil, nil, true)
	w.object(tables, "", "table-gone", fin, name("deleted-table-1"), nil, nil, false)
	w.object(streams, "", "stream-gone", fin, name("deleted-stream-1"), nil, nil, false)
	actions, rep, r := pass(t, rule(c, "data", "crossplane-managed", "tables.pertype.presets.upbound.io, streams.pertype.presets.upbound.io", "externalName", ""))
	want(t, actions, "table-gone", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "/instances/deleted-table-1: 404")
	want(t, actions, "stream-gone", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictGone, "no live object carries a finalizer this rule matches among streams.pertype.presets.upbound.io")
	if st := ruleStatus(rep, "data"); st.Broken || !strings.Contains(st.Distrust, "streams.pertype.presets.upbound.io") ||
		!strings.Contains(st.CannotVerify, "no live control of streams.pertype.presets.upbound.io could be asked") || strings.Contains(st.CannotVerify, "tables") {
		t.Errorf("rule status %+v", st)
	}
	exits(t, r, 1, "rule data cannot verify: no live control of streams.pertype.presets.upbound.io could be asked")
}

// TestTheIdentityIsTheOperators: an external name the operator wrote is trusted; one
// written with `kubectl annotate` on the stuck object, or applied by a GitOps tool, is
// not: Unknown, naming who wrote it, and no request about it. A rule that opts out
// trusts any writer.
func TestTheIdentityIsTheOperators(t *testing.T) {
	w := newWorld(t)
	w.manager = upjetProvider
	c := fakecloud.New(t)
	kinds["subscriptions"] = "Subscription"
	gvr := w.crd("identity.presets.upbound.io", "Subscription", "subscriptions", true)
	const fin = "finalizer.managedresource.crossplane.io"
	name := func(n string) map[string]string { return map[string]string{"crossplane.io/external-name": n} }
	w.object(gvr, "", "control", fin, name("live-sub"), nil, nil, true)
	w.object(gvr, "", "by-operator", fin, name("deleted-sub-1"), nil, nil, false)
	w.object(gvr, "", "annotated", fin, name("sub-2"), nil, nil, false)
	cli.Kubectl(cp, "annotate", "--overwrite", "subscriptions.identity.presets.upbound.io/annotated", "crossplane.io/external-name=deleted-typo").Succeed(t)
	// A client that names itself: kubectl with --field-manager, or curl through kubectl
	// proxy (its user agent, "curl", is its field manager). No blocklist knows these names;
	// neither wrote the finalizer, so neither is the operator.
	w.object(gvr, "", "helped", fin, name("sub-4"), nil, nil, false)
	cli.Kubectl(cp, "annotate", "--overwrite", "--field-manager=crossplane-helper",
		"subscriptions.identity.presets.upbound.io/helped", "crossplane.io/external-name=deleted-helper-typo").Succeed(t)
	w.object(gvr, "", "curled", fin, name("sub-5"), nil, nil, false)
	if _, err := w.dyn.Resource(gvr).Patch(t.Context(), "curled", types.MergePatchType, []byte(`{"metadata":{"annotations":{"crossplane.io/external-name":"deleted-curl-typo"}}}`),
		metav1.PatchOptions{FieldManager: "curl"}); err != nil {
		t.Fatal(err)
	}
	w.manager = "argocd-controller"
	w.object(gvr, "", "applied", fin, name("deleted-sub-3"), nil, nil, false)

	rules := rule(c, "subs", "crossplane-managed", "subscriptions.identity.presets.upbound.io", "externalName", "")
	actions, _, r := pass(t, rules)
	want(t, actions, "by-operator", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "/instances/deleted-sub-1: 404")
	want(t, actions, "annotated", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown, "annotation crossplane.io/external-name was last written by kubectl-annotate")
	want(t, actions, "applied", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown, "annotation crossplane.io/external-name was last written by argocd-controller")
	want(t, actions, "helped", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown,
		"annotation crossplane.io/external-name was last written by crossplane-helper, not by the operator, whose field managers are provider, crossplane-*-provider or crossplane-provider-*")
	want(t, actions, "curled", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown, "annotation crossplane.io/external-name was last written by curl, not by the operator")
	notAsked(t, c, "deleted-typo", "deleted-sub-3", "deleted-helper-typo", "deleted-curl-typo")
	exits(t, r, 0, "")

	// The rule opts out, and says so in its warnings.
	actions, _, r = pass(t, rule(c, "subs", "crossplane-managed", "subscriptions.identity.presets.upbound.io", "externalName", "  trustIdentityFromAnyWriter: true\n"))
	want(t, actions, "annotated", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "/instances/deleted-typo: 404")
	want(t, actions, "applied", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "/instances/deleted-sub-3: 404")
	want(t, actions, "helped", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "/instances/deleted-helper-typo: 404")
	if !strings.Contains(r.Stderr, "trustIdentityFromAnyWriter") {
		t.Errorf("no warning about trustIdentityFromAnyWriter: %s", r.Stderr)
	}
}

// TestAScriptThatWroteStatusIsNotTheOperator: the finalizer came from a manifest
// (kubectl create), and a script that calls itself ops-script wrote the external name
// and the status, through a patch and the status subresource. Whoever wrote status is
// not thereby the operator: only the field managers the preset names for its operator
// are, so the identity is Unknown, naming ops-script and those names, and no request
// is made about it.
func TestAScriptThatWroteStatusIsNotTheOperator(t *testing.T) {
	w := newWorld(t)
	w.manager = upjetProvider
	c := fakecloud.New(t)
	kinds["queues"] = "Queue"
	gvr := w.crd("script.presets.upbound.io", "Queue", "queues", true)
	const fin = "finalizer.managedresource.crossplane.io"
	w.object(gvr, "", "control", fin, map[string]string{"crossplane.io/external-name": "live-queue"}, nil, nil, true)

	manifest := fmt.Sprintf("apiVersion: %s\nkind: Queue\nmetadata:\n  name: scripted\n  finalizers: [%s]\n", gvr.GroupVersion(), fin)
	create := cli.Kubectl(cp, "create", "-f", "-")
	create.Stdin = manifest
	create.Succeed(t)
	queues := w.dyn.Resource(gvr)
	t.Cleanup(func() {
		// t's context is done by now.
		_, _ = queues.Patch(context.Background(), "scripted", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = queues.Delete(context.Background(), "scripted", metav1.DeleteOptions{})
	})
	if _, err := queues.Patch(t.Context(), "scripted", types.MergePatchType, []byte(`{"metadata":{"annotations":{"crossplane.io/external-name":"deleted-queue-1"}}}`),
		metav1.PatchOptions{FieldManager: "ops-script"}); err != nil {
		t.Fatal(err)
	}
	if _, err := queues.Patch(t.Context(), "scripted", types.MergePatchType, []byte(`{"status":{"atProvider":{"id":"deleted-queue-1"}}}`),
		metav1.PatchOptions{FieldManager: "ops-script"}, "status"); err != nil {
		t.Fatal(err)
	}
	fixture.Delete(t, fixture.Resource(w.dyn, gvr, ""), "scripted")

	actions, _, r := pass(t, rule(c, "queues", "crossplane-managed", "queues.script.presets.upbound.io", "externalName", ""))
	want(t, actions, "scripted", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown,
		"annotation crossplane.io/external-name was last written by ops-script, not by the operator, whose field managers are provider, crossplane-*-provider or crossplane-provider-*")
	notAsked(t, c, "deleted-queue-1")
	exits(t, r, 0, "")
}

// TestAnOperatorWhoseNameNoRuleKnowsFailsThePass: the operator was upgraded and writes
// under a field manager the preset does not name (upbound-provider-family-aws, not
// provider or crossplane-*-provider). Every identity, of the live control and of the
// stuck object, is then one the operator did not write, by the rule's names: each is
// Unknown and nothing is asked, pass after pass. Nothing shows the rule can verify
// anything, so the pass fails naming it, instead of staying green while it keeps all.
func TestAnOperatorWhoseNameNoRuleKnowsFailsThePass(t *testing.T) {
	w := newWorld(t)
	w.manager = "upbound-provider-family-aws"
	c := fakecloud.New(t)
	kinds["topics"] = "Topic"
	gvr := w.crd("renamed.presets.upbound.io", "Topic", "topics", true)
	const fin = "finalizer.managedresource.crossplane.io"
	w.object(gvr, "", "control", fin, map[string]string{"crossplane.io/external-name": "live-topic"}, nil, nil, true)
	w.object(gvr, "", "stuck", fin, map[string]string{"crossplane.io/external-name": "deleted-topic-1"}, nil, nil, false)
	actions, rep, r := pass(t, rule(c, "topics", "crossplane-managed", "topics.renamed.presets.upbound.io", "externalName", ""))
	want(t, actions, "stuck", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown, "was last written by upbound-provider-family-aws, not by the operator")
	notAsked(t, c, "live-topic", "deleted-topic-1")
	exits(t, r, 1, "rule topics cannot verify: ")
	if st := ruleStatus(rep, "topics"); st.CannotVerify == "" {
		t.Errorf("rules %+v", rep.Rules)
	}
}

// TestAGlobOfTheOperatorsNamesNeverTrustsAGenericApplier: a rule names its operator's
// field managers with a glob, "*-agent" (the operator runs as db-agent), which also
// matches fleet-agent, Rancher Fleet's applier of manifests from git, and a stuck object
// whose external name fleet-agent applied (a typo in git) waits. The policy is refused
// (exit 2), naming fleet-agent, and nothing is asked or removed. Named exactly, db-agent's
// external name is trusted, and fleet-agent's is not: a generic client is never the
// operator.
func TestAGlobOfTheOperatorsNamesNeverTrustsAGenericApplier(t *testing.T) {
	w := newWorld(t)
	w.manager = "db-agent"
	c := fakecloud.New(t)
	kinds["tables"] = "Table"
	gvr := w.crd("glob.presets.upbound.io", "Table", "tables", true)
	const fin = "finalizer.managedresource.crossplane.io"
	name := func(n string) map[string]string { return map[string]string{"crossplane.io/external-name": n} }
	w.object(gvr, "", "control", fin, name("live-table"), nil, nil, true)
	w.object(gvr, "", "by-operator", fin, name("deleted-table-1"), nil, nil, false)
	w.manager = "fleet-agent"
	w.object(gvr, "", "applied", fin, name("deleted-table-typo"), nil, nil, false)
	tables := func(managers string) string {
		return rule(c, "tables", "crossplane-managed", "tables.glob.presets.upbound.io", "externalName", "  operatorManagers: ["+managers+"]\n")
	}

	path := filepath.Join(t.TempDir(), "policy.yaml")
	doc := "apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nminAge: 0s\nrules:\n" + tables(`"*-agent"`)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--policy", path, "-o", "json")
	exits(t, r, 2, `rules[0].operatorManagers[0]: Invalid value: "*-agent"`)
	exits(t, r, 2, "matches fleet-agent, a generic client")
	if len(c.Asked()) != 0 {
		t.Errorf("a refused policy asked the cloud: %v", c.Asked())
	}

	actions, _, r := pass(t, tables(`db-agent`))
	want(t, actions, "by-operator", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "/instances/deleted-table-1: 404")
	want(t, actions, "applied", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown, "annotation crossplane.io/external-name was last written by fleet-agent")
	notAsked(t, c, "deleted-table-typo")
	exits(t, r, 0, "")
}

// TestAPresetsIdentityIsReadOnlyThroughThePreset: a rule with preset crossplane-managed
// reads the external name in its URL as a template of its own,
// {.metadata.annotations['crossplane\.io/external-name']}, instead of
// {identity.externalName}, and a stuck object's external name was rewritten with
// `kubectl annotate` (a typo). Read that way, the value's writer was never checked, and
// the typo's 404 removed the finalizer. In a rule with a preset, a field the preset reads
// an identity from is read only as that identity: the policy is refused (exit 2), naming
// {identity.externalName}, and nothing is asked.
func TestAPresetsIdentityIsReadOnlyThroughThePreset(t *testing.T) {
	w := newWorld(t)
	w.manager = upjetProvider
	c := fakecloud.New(t)
	kinds["topics"] = "Topic"
	gvr := w.crd("raw.presets.upbound.io", "Topic", "topics", true)
	const fin = "finalizer.managedresource.crossplane.io"
	name := func(n string) map[string]string { return map[string]string{"crossplane.io/external-name": n} }
	w.object(gvr, "", "control", fin, name("live-topic"), nil, nil, true)
	w.object(gvr, "", "annotated", fin, name("topic-2"), nil, nil, false)
	cli.Kubectl(cp, "annotate", "--overwrite", "topics.raw.presets.upbound.io/annotated", "crossplane.io/external-name=deleted-topic-typo").Succeed(t)
	rules := fmt.Sprintf(`- name: topics
  preset: crossplane-managed
  resources: [topics.raw.presets.upbound.io]
  verify:
    http:
      url: "%s/instances/{.metadata.annotations['crossplane\\.io/external-name']}"
      tls: {caFile: %q}
      response: {jsonPath: "{.state}", gone: [deleted]}
`, c.URL, c.CAFile)
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nminAge: 0s\nrules:\n"+rules), 0o600); err != nil {
		t.Fatal(err)
	}
	r := cli.Run(t, cp.AdminKubeconfig, "reconcile", "--once", "--policy", path, "-o", "json")
	exits(t, r, 2, "rules[0].verify.http.url")
	exits(t, r, 2, "{identity.externalName}")
	notAsked(t, c, "deleted-topic-typo")
	if _, err := w.dyn.Resource(gvr).Get(t.Context(), "annotated", metav1.GetOptions{}); err != nil {
		t.Errorf("the object whose external name kubectl wrote is gone: %v", err)
	}
}

// TestProviderKubernetesObjectsAreVerifiedByTheirManifest: Crossplane's
// provider-kubernetes names the resource behind an Object by its manifest's object, not
// by the crossplane.io/external-name annotation, which the runtime sets to the Object's
// own name (#38). An Object whose manifest names another object is verified by that
// object: with {identity.manifestName}, asked of this cluster by the kubernetes provider,
// the one whose target is gone loses its finalizer and the one whose target exists keeps
// it; a rule asking by {identity.externalName} removes nothing, and says why. The
// provider's records count, not the spec: an Object renamed, or moved to another
// ProviderConfig, after the provider last acted is Unknown, and so is every Gone of an
// http rule, whose answers cannot show that its controls found the objects the provider
// made. test/operators runs the same against the real provider.
func TestProviderKubernetesObjectsAreVerifiedByTheirManifest(t *testing.T) {
	w := newWorld(t)
	w.manager = "crossplane-kubernetes-provider"
	c := fakecloud.New(t)
	kinds["objects"] = "Object"
	kinds["providerconfigusages"] = "ProviderConfigUsage"
	gvr := w.crd("kubernetes.crossplane.io", "Object", "objects", true)
	usages := w.crd("kubernetes.crossplane.io", "ProviderConfigUsage", "providerconfigusages", true)
	const fin, ns = "finalizer.managedresource.crossplane.io", "presets-manifests"
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if _, err := w.dyn.Resource(namespaces).Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.dyn.Resource(namespaces).Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	// made are the ConfigMaps the provider made, by name: the control's and one a stuck
	// Object names; the others are gone.
	made := map[string]types.UID{}
	for _, name := range []string{"live-target", "target-2", "target-3"} {
		cm, err := w.dyn.Resource(configMaps).Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		made[name] = cm.GetUID()
	}
	// recorded is the object the provider last observed, as it records it in
	// status.atProvider.manifest (its UID included); the spec's manifest names target,
	// and its providerConfigRef spec, while the provider's ProviderConfigUsage names
	// used.
	object := func(name, target, recorded, spec, used string, live bool) {
		manifest := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": ns}}
		if target != "" {
			manifest["metadata"].(map[string]any)["name"] = target
		}
		uid := string(made[recorded])
		if uid == "" {
			uid = "uid-of-deleted-" + recorded
		}
		// It reports the object it found after it made its usage (below, within the
		// minute).
		status := map[string]any{"atProvider": map[string]any{"manifest": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": recorded, "namespace": ns, "uid": uid}}},
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": time.Now().Add(time.Minute).UTC().Format(time.RFC3339)}}}
		w.object(gvr, "", name, fin, map[string]string{"crossplane.io/external-name": name},
			map[string]any{"forProvider": map[string]any{"manifest": manifest}, "providerConfigRef": map[string]any{"name": spec}}, status, true)
		o, err := w.dyn.Resource(gvr).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		usage := &unstructured.Unstructured{Object: map[string]any{"apiVersion": usages.GroupVersion().String(), "kind": "ProviderConfigUsage",
			"metadata":          map[string]any{"name": string(o.GetUID())},
			"providerConfigRef": map[string]any{"name": used},
			"resourceRef":       map[string]any{"apiVersion": o.GetAPIVersion(), "kind": "Object", "name": name}}}
		usage.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(o, o.GroupVersionKind())})
		if _, err := w.dyn.Resource(usages).Create(t.Context(), usage, metav1.CreateOptions{FieldManager: w.manager}); err != nil {
			t.Fatal(err)
		}
		if !live {
			fixture.Delete(t, fixture.Resource(w.dyn, gvr, ""), name)
		}
	}
	object("control", "live-target", "live-target", "workload", "workload", true)
	object("names-a-gone-object", "deleted-target-1", "deleted-target-1", "workload", "workload", false)
	object("names-a-live-object", "target-2", "target-2", "workload", "workload", false)
	// No name in the manifest: the provider names it after the Object.
	object("deleted-unnamed", "", "deleted-unnamed", "workload", "workload", false)
	// Renamed after the provider last acted: the object it made is target-3, and the
	// manifest now names one that never existed.
	object("renamed-after-the-provider-stopped", "deleted-target-4", "target-3", "workload", "workload", false)
	// Moved to the control's ProviderConfig after the provider last acted through
	// another: its object is in that other cluster, not in this one.
	object("moved-after-the-provider-stopped", "deleted-target-5", "deleted-target-5", "workload", "elsewhere", false)

	actions, rep, r := pass(t, rule(c, "objects", "crossplane-managed", "objects.kubernetes.crossplane.io", "externalName", ""))
	for _, name := range []string{"names-a-gone-object", "names-a-live-object", "deleted-unnamed", "renamed-after-the-provider-stopped"} {
		want(t, actions, name, finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown,
			"{identity.externalName} does not name the external resource of objects of provider-kubernetes")
	}
	notAsked(t, c, "names-a-gone-object", "names-a-live-object", "deleted-unnamed", "renamed-after-the-provider-stopped")
	t.Logf("asking by externalName: exit %d, rule %+v", r.Code, ruleStatus(rep, "objects"))

	// An http rule asks by the manifest's name, but its control's answer cannot say which
	// object it found: no Gone is vouched for.
	actions, _, _ = pass(t, rule(c, "objects", "crossplane-managed", "objects.kubernetes.crossplane.io", "manifestName", ""))
	want(t, actions, "names-a-gone-object", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown, "the provider does not say which object it found")
	want(t, actions, "names-a-live-object", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictPresent, "/instances/target-2: 200 OK")

	actions, _, r = pass(t, `- name: objects
  preset: crossplane-managed
  resources: [objects.kubernetes.crossplane.io]
  verify:
    kubernetes:
      resource: configmaps
      namespace: "{identity.manifestNamespace}"
      name: "{identity.manifestName}"
`)
	want(t, actions, "names-a-gone-object", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "configmaps/deleted-target-1 -n "+ns+" not found in this cluster")
	want(t, actions, "names-a-live-object", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictPresent, "configmaps/target-2 -n "+ns+" exists in this cluster")
	want(t, actions, "deleted-unnamed", finalizev1alpha1.ResultRemoved, finalizev1alpha1.VerdictGone, "configmaps/deleted-unnamed -n "+ns+" not found in this cluster")
	want(t, actions, "renamed-after-the-provider-stopped", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown,
		`spec.forProvider.manifest.metadata.name, else the Object's name is "deleted-target-4", but the operator last acted on "target-3" (status.atProvider.manifest.metadata.name)`)
	want(t, actions, "moved-after-the-provider-stopped", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown,
		"the spec names ProviderConfig workload, but its operator last acted through ProviderConfig elsewhere")
	exits(t, r, 0, "")
}

// TestAProviderThePresetDoesNotKnowIsNotVerified: a managed resource of an API group of
// no family crossplane-managed knows keeps its finalizer, whatever its external-name
// says, and the row says why (#38).
func TestAProviderThePresetDoesNotKnowIsNotVerified(t *testing.T) {
	w := newWorld(t)
	w.manager = upjetProvider
	c := fakecloud.New(t)
	kinds["widgets"] = "Widget"
	gvr := w.crd("unknown.presets.example", "Widget", "widgets", true)
	const fin = "finalizer.managedresource.crossplane.io"
	w.object(gvr, "", "control", fin, map[string]string{"crossplane.io/external-name": "live-widget"}, nil, nil, true)
	w.object(gvr, "", "gone", fin, map[string]string{"crossplane.io/external-name": "deleted-widget-1"}, nil, nil, false)
	actions, _, _ := pass(t, rule(c, "widgets", "crossplane-managed", "widgets.unknown.presets.example", "externalName", ""))
	want(t, actions, "gone", finalizev1alpha1.ResultKept, finalizev1alpha1.VerdictUnknown,
		"preset crossplane-managed does not know where the operator of API group unknown.presets.example takes the identity of its external resource")
	notAsked(t, c, "deleted-widget-1")
}
