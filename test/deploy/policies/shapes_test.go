package policies

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// Where the pod finds what the policies name: the paths are the pod's, as a user's
// policy names them.
const (
	cloudCA      = "/etc/fakecloud/ca.crt"
	tokenFile    = "/var/run/secrets/dbapi/token"
	execBinary   = "/opt/provider/exec-provider"
	inventory    = "/inventory/databases.json"
	workloadFile = "/etc/workload/kubeconfig"
)

// shape is one policy the docs show. setup makes its objects, some stuck with their
// external resource gone, some stuck while it still exists (kept), and live controls;
// it returns the policy's head and rules, and says what the pod needs beyond the policy.
type shape struct {
	name, docs string
	setup      func(t *testing.T, w *world) (head, rules string)
}

// world is what one shape's pass is checked against.
type world struct {
	cloud *fakecloud.Cloud
	// removed are the objects whose finalizer the pass removes, and kept those it
	// keeps, each with a piece of the evidence that says why ("" for a removal: any).
	removed, kept map[string]string
	// pod adds to the reconcile pod what the policy needs: a CA, a token, a provider.
	pod []func(t *testing.T, a account, pod *corev1.Pod)
	// users are other identities whose requests must not be refused either.
	users []string
	// inventory is what cloudcli, the stand-in of the docs' check-* programs, answers:
	// set, the pod gets cloudcli in /usr/local/bin under each program's name.
	inventory map[string][]cloudCall
	// logSays are what the pod's log must say, besides the report.
	logSays []string
	// after are the checks of what the shape's own servers saw, once the pass is over.
	after []func(t *testing.T)
}

func newWorld(t *testing.T) *world {
	return &world{cloud: fakecloud.New(t), removed: map[string]string{}, kept: map[string]string{}}
}

// shapes are every policy shape the docs show and every preset of `kubectl finalize
// policy presets`, each with where the docs show it:
//
//	shape                                     docs
//	the example policy                        docs/deploy/base/policy.yaml (http, a header from a file, gone by status, exclude, maxRemovals)
//	the policy reference                      docs/policy.md (namespaces glob, selector, a header from env, exclude resources, controls, rateLimit)
//	http, every field                         docs/providers.md http (method, templated header, query from env, redirects, gone, present, response, tls, timeout)
//	http, a client certificate                docs/providers.md http (tls.caFile, certFile, keyFile: mutual TLS, from a Secret)
//	exec                                      docs/providers.md exec, docs/examples/exec-provider (env, timeout)
//	exec, a Secret's values                   docs/providers.md exec (secretData: true)
//	kubernetes provider, selector             docs/providers.md kubernetes (resource.group, namespace, selector, timeout)
//	kubernetes provider, another cluster      docs/providers.md kubernetes (kubeconfig, context)
//	kubernetes provider, resource forms       docs/providers.md ("a kubectl type": singular, Kind, short name)
//	glob resources                            docs/policy.md (resources: "resource.group names or globs")
//	preset crossplane-managed                 docs/presets.md s3-buckets (exec check-s3 {identity.externalName}, timeout)
//	preset ack                                docs/presets.md rds-instances (exec check-rds {identity.region} {identity.arn}; the namespace's deletion-policy annotation)
//	preset config-connector                   docs/presets.md cloud-sql (exec check-gcloud-sql {identity.projectID} {identity.resourceID})
//	preset aws-load-balancer                  docs/presets.md service-load-balancers (exec check-elb {identity.hostname})
//	preset csi-volume                         docs/presets.md ebs-volumes (exec check-ebs {identity.volumeHandle})
//	allowRetained                             docs/policy.md, docs/presets.md (a rule with allowRetained: true beside one without)
//	a namespace's own finalizer               docs/reconcile.md, docs/policy.md (allowSystem: true, /finalize)
//
// The presets' rules are read from docs/presets.md, as written there; their objects are
// made as each operator makes them (its field manager writes the finalizer, the
// annotations and status the preset reads), and keep the identity where the operator
// keeps it, never equal to the object's name. The docs' check-* scripts wrap the AWS and
// gcloud CLIs, whose clouds are not on loopback: cloudcli stands in for them at the same
// paths, answering from an inventory only calls made with the right arguments and the
// right identity (see cloudcli). Not run as written: minAge 15m and 30m (a test's
// objects are seconds old: every policy here has minAge 0s, which changes no request).
// docs/fleets.md and docs/examples show no other policy. docs/reconcile.md's
// --metrics-push-url and --metrics-textfile are flags of the pass, not policy shapes.
func shapes() []shape {
	return []shape{
		{"the example policy", "docs/deploy/base/policy.yaml", examplePolicy},
		{"the policy reference", "docs/policy.md", policyReference},
		{"http, every field", "docs/providers.md", httpEveryField},
		{"http, a client certificate", "docs/providers.md", mutualTLS},
		{"exec", "docs/providers.md, docs/examples/exec-provider", execShape},
		{"exec, a Secret's values", "docs/providers.md", secretData},
		{"kubernetes provider, selector", "docs/providers.md", func(t *testing.T, w *world) (string, string) { return machines(t, w, false) }},
		{"kubernetes provider, another cluster", "docs/providers.md", func(t *testing.T, w *world) (string, string) { return machines(t, w, true) }},
		{"kubernetes provider, a singular", "docs/providers.md", func(t *testing.T, w *world) (string, string) { return backends(t, w, "backend") }},
		{"kubernetes provider, a Kind", "docs/providers.md", func(t *testing.T, w *world) (string, string) { return backends(t, w, "Backend") }},
		{"kubernetes provider, a short name", "docs/providers.md", func(t *testing.T, w *world) (string, string) { return backends(t, w, "kfbe") }},
		{"glob resources", "docs/policy.md", globResources},
		{"preset crossplane-managed", "docs/presets.md", crossplane},
		{"preset ack", "docs/presets.md", ack},
		{"preset config-connector", "docs/presets.md", configConnector},
		{"preset aws-load-balancer", "docs/presets.md", awsLoadBalancer},
		{"preset csi-volume", "docs/presets.md", csiVolume},
		{"allowRetained", "docs/policy.md, docs/presets.md", allowRetained},
		{"a namespace's own finalizer", "docs/reconcile.md", namespaceFinalizer},
	}
}

// TestEveryDocumentedPolicyShapeRunsInAPodOnItsGeneratedRBAC: each shape's pass, in a pod
// on the node as a ServiceAccount bound to exactly the RBAC `kubectl finalize rbac`
// generated for it, exits 0, removes what is gone and keeps what is not, and the API
// server refused none of its requests.
func TestEveryDocumentedPolicyShapeRunsInAPodOnItsGeneratedRBAC(t *testing.T) {
	for _, s := range shapes() {
		t.Run(s.name, func(t *testing.T) {
			w := newWorld(t)
			head, rules := s.setup(t, w)
			policy := cli.WritePolicy(t, head, rules)
			a := generatedRBAC(t, policy, nil)
			code, log, text := pass(t, s, w, a, policy)
			if code != 0 {
				t.Errorf("the pass exited %d, want 0", code)
			}
			rep := report(t, log)
			for name, why := range w.removed {
				if a := action(t, rep, name); a.Result != finalizev1alpha1.ResultRemoved || !strings.Contains(a.Evidence+" "+a.Message, why) {
					t.Errorf("%s: %s %s: %s %s; want Removed: %s", name, a.Result, a.Verdict, a.Message, a.Evidence, why)
				}
			}
			for name, why := range w.kept {
				if a := action(t, rep, name); a.Result != finalizev1alpha1.ResultKept || !strings.Contains(a.Evidence+" "+a.Message, why) {
					t.Errorf("%s: %s %s: %s %s; want Kept: %s", name, a.Result, a.Verdict, a.Message, a.Evidence, why)
				}
			}
			for _, says := range w.logSays {
				if !strings.Contains(log, says) {
					t.Errorf("the pod's log does not say %q", says)
				}
			}
			for _, check := range w.after {
				check(t)
			}
			if t.Failed() {
				t.Logf("the policy:\n%s\nthe generated RBAC:\n%s\nthe pod's log:\n%s", text, a.manifests, log)
			}
		})
	}
}

// pass runs the shape's pass in its pod as a, and checks that the API server refused no
// request of a (nor of the shape's other users) and that it saw some: it returns the
// container's exit code, the pod's log and the policy's text.
func pass(t *testing.T, s shape, w *world, a account, policy string) (code int32, log, text string) {
	t.Helper()
	b, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	configMap(t, a.namespace, "kubectl-finalize-policy", map[string]string{"policy.yaml": string(b)})
	pod := reconcilePod(t, a)
	for _, add := range w.pod {
		add(t, a, pod)
	}
	offset := auditLog.Size(t)
	began := time.Now()
	code, log = run(t, pod)
	t.Logf("%s (%s): the pod ran in %s", s.name, s.docs, time.Since(began).Round(time.Millisecond))
	for _, user := range append([]string{a.user()}, w.users...) {
		requests, refused := audited(t, offset, user)
		if requests == 0 {
			t.Errorf("the audit log holds no request of %s: the pass did not run as it", user)
		}
		for _, r := range refused {
			t.Errorf("refused to %s: %s", user, r)
		}
	}
	for _, line := range denied(log) {
		t.Errorf("the pass was denied something: %s", line)
	}
	return code, log, string(b)
}

// denied are the lines of a pass's log that say the API server refused it something, or
// that the pass did not try what its access review said it may not do.
func denied(log string) []string {
	var out []string
	for line := range strings.SplitSeq(log, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(l, "forbidden") || strings.Contains(l, "unauthorized") || strings.Contains(l, "may not ") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// A role short of one verb is what this package is here to catch: with the patch and
// update of configmaps taken out of the generated RBAC, the example policy's removal is
// not made, the pass does not exit 0, and denied finds it in the pod's log.
func TestAPodShortOfItsGeneratedRBACIsCaught(t *testing.T) {
	s := shapes()[0]
	w := newWorld(t)
	head, rules := s.setup(t, w)
	policy := cli.WritePolicy(t, head, rules)
	var dropped bool
	a := generatedRBAC(t, policy, func(m string) string {
		var out []string
		for doc := range strings.SplitSeq(m, "\n---\n") {
			var role rbacv1.ClusterRole
			if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
				t.Fatal(err)
			}
			if role.Kind == "ClusterRole" || role.Kind == "Role" {
				for i, r := range role.Rules {
					if slices.Contains(r.Resources, "configmaps") {
						role.Rules[i].Verbs = slices.DeleteFunc(r.Verbs, func(v string) bool { return v == "patch" || v == "update" })
						dropped = dropped || len(role.Rules[i].Verbs) < len(r.Verbs)
					}
				}
				b, err := yaml.Marshal(role)
				if err != nil {
					t.Fatal(err)
				}
				doc = string(b)
			}
			out = append(out, doc)
		}
		return strings.Join(out, "\n---\n")
	})
	if !dropped {
		t.Fatalf("no patch or update of configmaps in the generated RBAC:\n%s", a.manifests)
	}
	b, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	configMap(t, a.namespace, "kubectl-finalize-policy", map[string]string{"policy.yaml": string(b)})
	pod := reconcilePod(t, a)
	for _, add := range w.pod {
		add(t, a, pod)
	}
	offset := auditLog.Size(t)
	code, log := run(t, pod)
	// A pass asks the API server what it may do before it writes (a
	// SelfSubjectAccessReview), so the missing verb shows in the report, not as a 403.
	_, refused := audited(t, offset, a.user())
	if code == 0 || (len(refused) == 0 && !strings.Contains(log, "it may not patch configmaps")) {
		t.Fatalf("a role without patch and update on configmaps: exit %d, refused %v; want a failed pass that says what it may not do\n%s\n%s", code, refused, a.manifests, log)
	}
	if bad := denied(log); len(bad) == 0 {
		t.Errorf("the check of the pod's log finds no denial in:\n%s", log)
	}
}

// action finds the report's action about an object.
func action(t *testing.T, rep *finalizev1alpha1.ReconcileReport, name string) finalizev1alpha1.Removal {
	t.Helper()
	for _, a := range rep.Actions {
		if a.Target.Name == name {
			return a
		}
	}
	t.Fatalf("no action about %s in %+v", name, rep.Actions)
	return finalizev1alpha1.Removal{}
}

// withCloudCA mounts the fake cloud's CA where the policy's tls.caFile names it.
func (w *world) withCloudCA() {
	w.pod = append(w.pod, func(t *testing.T, a account, pod *corev1.Pod) {
		ca, err := os.ReadFile(w.cloud.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		configMap(t, a.namespace, "fakecloud-ca", map[string]string{"ca.crt": string(ca)})
		mount(pod, configMapVolume("fakecloud-ca", "fakecloud-ca"), "/etc/fakecloud")
	})
}

// configMaps makes, in a namespace of the test, a live control whose instance exists,
// an object stuck whose instance is gone (removed) and one stuck whose instance exists
// (kept), each with finalizer fin and labels.
func (w *world) configMaps(t *testing.T, ns, fin string, labels map[string]string, live []string) {
	t.Helper()
	kube := cp.Kube(t)
	for _, o := range []struct {
		name, instance string
		stuck          bool
	}{{"control", live[0], false}, {"gone", "deleted-1", true}, {"kept", live[1], true}} {
		cm := fixture.ConfigMap(o.name, map[string]string{"instance": o.instance}, fin)
		cm.Labels = labels
		fixture.Create(t, kube.CoreV1().ConfigMaps(ns), cm, o.stuck)
	}
	w.removed["gone"] = ""
	w.kept["kept"] = "Present"
}

func examplePolicy(t *testing.T, w *world) (string, string) {
	fin := controlplane.FinalizerOf(t)
	w.cloud.Token = "the-dbapi-token"
	w.configMaps(t, cp.Namespace(t), fin, nil, []string{"live", "live-kept"})
	w.withCloudCA()
	w.pod = append(w.pod, func(t *testing.T, a account, pod *corev1.Pod) {
		secret(t, a.namespace, "dbapi", map[string]string{"token": w.cloud.Token})
		mount(pod, corev1.Volume{Name: "dbapi", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "dbapi"}}}, "/var/run/secrets/dbapi")
	})
	// Without the token /private answers 404 for the live instance too: the control
	// would read Gone and the rule would stop, so a Removed "gone" proves the header.
	return `maxRemovals: 20
exclude:
  namespaces: ["kube-system", "kube-public", "kube-node-lease"]
  selectors: ["kubectl-finalize.github.io/ignore=true"]
`, fmt.Sprintf(`- name: managed-databases
  finalizers: ["%s"]
  resources: ["configmaps"]
  verify:
    http:
      url: "%s/private/instances/{.metadata.annotations.instance}"
      headers:
      - name: Authorization
        valueFrom: {file: %s, prefix: "Bearer "}
      gone: [404, 410]
      timeout: 10s
      tls: {caFile: %s}
  controls: {count: 3}
`, fin, w.cloud.URL, tokenFile, cloudCA)
}

func policyReference(t *testing.T, w *world) (string, string) {
	fin := controlplane.FinalizerOf(t)
	w.cloud.Token = "the-env-token"
	ns := cp.Namespace(t)
	w.configMaps(t, ns, fin, map[string]string{"team": "data"}, []string{"live", "live-kept"})
	// Another team's stuck object: the selector leaves it alone.
	fixture.Create(t, cp.Kube(t).CoreV1().ConfigMaps(ns), fixture.ConfigMap("other-team", map[string]string{"instance": "deleted-2"}, fin), true)
	w.withCloudCA()
	w.pod = append(w.pod, func(t *testing.T, a account, pod *corev1.Pod) {
		secret(t, a.namespace, "dbapi", map[string]string{"token": w.cloud.Token})
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "DBAPI_TOKEN", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "dbapi"}, Key: "token"},
		}})
	})
	return `maxRemovals: 20
exclude:
  namespaces: ["kube-system", "kube-public"]
  resources: ["secrets"]
  selectors: ["kubectl-finalize.github.io/ignore=true"]
`, fmt.Sprintf(`- name: managed-databases
  finalizers: ["%s"]
  resources: ["configmaps"]
  namespaces: ["%s*"]
  selector: "team=data"
  minAge: 0s
  verify:
    http:
      url: "%s/private/instances/{.metadata.annotations.instance}"
      headers:
      - name: Authorization
        valueFrom: {env: DBAPI_TOKEN, prefix: "Bearer "}
      tls: {caFile: %s}
  controls: {count: 3, requireLive: true}
  rateLimit: {qps: 50, burst: 100}
`, fin, ns[:len(ns)-2], w.cloud.URL, cloudCA)
}

func httpEveryField(t *testing.T, w *world) (string, string) {
	fin := controlplane.FinalizerOf(t)
	w.cloud.APIKey = "the-api-key"
	w.configMaps(t, cp.Namespace(t), fin, nil, []string{"live", "live-kept"})
	w.withCloudCA()
	w.pod = append(w.pod, func(t *testing.T, a account, pod *corev1.Pod) {
		secret(t, a.namespace, "dbapi", map[string]string{"key": w.cloud.APIKey})
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "DBAPI_KEY", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "dbapi"}, Key: "key"},
		}})
	})
	return "", fmt.Sprintf(`- name: every-field
  finalizers: ["%s"]
  resources: ["configmaps"]
  verify:
    http:
      url: "%s/keyed/instances/{.metadata.annotations.instance}"
      method: GET
      headers:
      - name: X-Requested-By
        value: "kubectl-finalize {.metadata.namespace}/{.metadata.name}"
      query:
      - name: api_key
        valueFrom: {env: DBAPI_KEY}
      - name: view
        value: "summary"
      redirects: Refuse
      gone: [404, 410]
      present: [200]
      response:
        jsonPath: "{.state}"
        gone: ["deleted"]
        present: ["available"]
      tls:
        caFile: %s
      timeout: 10s
`, fin, w.cloud.URL, cloudCA)
}

func execShape(t *testing.T, w *world) (string, string) {
	fin := controlplane.FinalizerOf(t)
	w.configMaps(t, cp.Namespace(t), fin, nil, []string{"live", "live-kept"})
	w.pod = append(w.pod, func(t *testing.T, a account, pod *corev1.Pod) {
		configMap(t, a.namespace, "inventory", map[string]string{"databases.json": `["live", "live-kept"]`})
		mount(pod, configMapVolume("inventory", "inventory"), "/inventory")
		mount(pod, corev1.Volume{Name: "provider", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, "/opt/provider")
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
			Name:            "exec-provider",
			Image:           providers(t),
			ImagePullPolicy: corev1.PullNever,
			Args:            []string{"/exec-provider", execBinary},
			SecurityContext: restricted(),
			VolumeMounts:    []corev1.VolumeMount{{Name: "provider", MountPath: "/opt/provider"}},
		})
	})
	return "", fmt.Sprintf(`- name: inventory
  finalizers: ["%s"]
  resources: ["configmaps"]
  verify:
    exec:
      command: ["%s", "--inventory", "%s", "--max-age", "1h", "{.metadata.annotations.instance}"]
      env:
      - {name: AWS_PAGER, value: ""}
      timeout: 30s
`, fin, execBinary, inventory)
}

var (
	machineCRD = seed.CRD{Group: "cluster.x-k8s.io", Kind: "Machine", Plural: "machines", Singular: "machine", Versions: []string{"v1beta1"}}
	backendCRD = seed.CRD{Group: "policies-shapes.kubectl-finalize.test", Kind: "Backend", Plural: "backends", Singular: "backend", Short: []string{"kfbe"}, Versions: []string{"v1"}}
	widgetCRD  = seed.CRD{Group: "widgets.policies-glob.kubectl-finalize.test", Kind: "Widget", Plural: "widgets", Singular: "widget", Versions: []string{"v1"}}
	gadgetCRD  = seed.CRD{Group: "gadgets.policies-glob.kubectl-finalize.test", Kind: "Gadget", Plural: "gadgets", Singular: "gadget", Versions: []string{"v1"}}
	dbInstance = seed.CRD{Group: "rds.services.k8s.aws", Kind: "DBInstance", Plural: "dbinstances", Singular: "dbinstance", Versions: []string{"v1alpha1"}}
	bucketCRD  = seed.CRD{Group: "s3.aws.upbound.io", Kind: "Bucket", Plural: "buckets", Singular: "bucket", Cluster: true, Versions: []string{"v1beta1"}}
	sqlCRD     = seed.CRD{Group: "sql.cnrm.cloud.google.com", Kind: "SQLInstance", Plural: "sqlinstances", Singular: "sqlinstance", Versions: []string{"v1beta1"}}
)

// machines is docs/providers.md's kubernetes provider: a workload cluster is gone when
// no Machine carries its name. remote reads the Machines through a kubeconfig of
// another identity (its own ServiceAccount, able to list Machines and nothing else) from
// a Secret, as another cluster's credentials are; the generated RBAC then needs no
// Machine at all.
func machines(t *testing.T, w *world, remote bool) (string, string) {
	fin := controlplane.FinalizerOf(t)
	ns := cp.Namespace(t)
	gvr := fixture.CRD(t, cp.Config, machineCRD)
	kube := cp.Kube(t)
	for _, o := range []struct {
		name  string
		stuck bool
	}{{"control", false}, {"gone", true}, {"kept", true}} {
		fixture.Create(t, kube.CoreV1().ConfigMaps(ns), fixture.ConfigMap(o.name, nil, fin), o.stuck)
		if o.name != "gone" {
			fixture.Instance(t, cp.Config, gvr, "Machine", ns, o.name+"-md-0", nil, map[string]string{"cluster.x-k8s.io/cluster-name": o.name}, false)
		}
	}
	w.removed["gone"] = ""
	w.kept["kept"] = "Present"
	extra := ""
	if remote {
		extra = "\n      kubeconfig: " + workloadFile + "\n      context: workload"
		reader := remoteReader(t, w)
		w.pod = append(w.pod, func(t *testing.T, a account, pod *corev1.Pod) {
			secret(t, a.namespace, "workload-kubeconfig", map[string]string{"kubeconfig": reader})
			mount(pod, corev1.Volume{Name: "workload", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "workload-kubeconfig"}}}, "/etc/workload")
		})
	}
	return "", fmt.Sprintf(`- name: workload-clusters
  finalizers: ["%s"]
  resources: ["configmaps"]
  verify:
    kubernetes:
      resource: machines.cluster.x-k8s.io
      namespace: "{.metadata.namespace}"
      selector: "cluster.x-k8s.io/cluster-name={.metadata.name}"%s
      timeout: 10s
`, fin, extra)
}

// remoteReader is the kubeconfig of the "workload cluster": the API server on loopback,
// as a ServiceAccount that may read Machines; its requests are checked too.
func remoteReader(t *testing.T, w *world) string {
	t.Helper()
	ns, name := cp.Namespace(t), "machine-reader"
	kube := cp.Kube(t)
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{machineCRD.Group}, Resources: []string{"machines"}, Verbs: []string{"get", "list"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	if _, err := kube.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoles().Delete(t.Context(), ns, metav1.DeleteOptions{})
		_ = kube.RbacV1().ClusterRoleBindings().Delete(t.Context(), ns, metav1.DeleteOptions{})
	})
	cfg, err := cp.ServiceAccountConfig(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.Host, "https://127.0.0.1:") {
		t.Fatalf("the workload kubeconfig would point at %s, not loopback", cfg.Host)
	}
	path := t.TempDir() + "/kubeconfig"
	if err := controlplane.WriteKubeconfigContexts(path, "workload", map[string]*rest.Config{"workload": cfg}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	waitGranted(t, account{namespace: ns, name: name, manifests: "kind: ClusterRole\nrules:\n- apiGroups: [" + machineCRD.Group + "]\n  resources: [machines]\n  verbs: [list]\n"})
	w.users = append(w.users, account{namespace: ns, name: name}.user())
	return string(b)
}

// backends is the kubernetes provider with its resource written as typ (a
// singular, a Kind or a short name): a stuck object is gone when no Backend named by its
// instance annotation exists.
func backends(t *testing.T, w *world, typ string) (string, string) {
	fin := controlplane.FinalizerOf(t)
	gvr := fixture.CRD(t, cp.Config, backendCRD)
	ns := cp.Namespace(t)
	for _, b := range []string{"backend-live", "backend-kept"} {
		fixture.Instance(t, cp.Config, gvr, "Backend", ns, b, nil, nil, false)
	}
	w.configMaps(t, ns, fin, nil, []string{"backend-live", "backend-kept"})
	return "", fmt.Sprintf(`- name: backends
  finalizers: ["%s"]
  resources: ["configmaps"]
  verify:
    kubernetes: {resource: %s, namespace: "{.metadata.namespace}", name: "{.metadata.annotations.instance}"}
`, fin, typ)
}

// httpRule asks the cloud about the instance the template id names.
func (w *world) httpRule(name, head, id string) string {
	w.withCloudCA()
	return fmt.Sprintf(`- name: %s
%s  verify:
    http:
      url: "%s/instances/%s"
      tls: {caFile: %s}
      timeout: 3s
      response: {jsonPath: "{.state}", gone: [deleted]}
`, name, head, w.cloud.URL, id, cloudCA)
}

func globResources(t *testing.T, w *world) (string, string) {
	ns, fin := cp.Namespace(t), controlplane.FinalizerOf(t)
	for _, crd := range []seed.CRD{widgetCRD, gadgetCRD} {
		gvr := fixture.CRD(t, cp.Config, crd)
		fixture.Instance(t, cp.Config, gvr, crd.Kind, ns, "live-"+crd.Singular, []string{fin}, nil, false)
		fixture.Instance(t, cp.Config, gvr, crd.Kind, ns, "deleted-"+crd.Singular, []string{fin}, nil, true)
		fixture.Instance(t, cp.Config, gvr, crd.Kind, ns, "kept-"+crd.Singular, []string{fin}, nil, true)
		w.removed["deleted-"+crd.Singular] = ""
		w.kept["kept-"+crd.Singular] = "Present"
	}
	return "", w.httpRule("globbed", "  finalizers: [\""+fin+"\"]\n  resources: [\"*.policies-glob.kubectl-finalize.test\"]\n", "{.metadata.annotations.instance}")
}

// namespaceFinalizer: a deleted namespace's own "kubernetes" finalizer, verified gone by
// a Secret that was never created, removed through /finalize. The namespace controller
// is not running, so the finalizer waits for the pass; what the node's controllers put
// into every namespace (its default ServiceAccount, kube-root-ca.crt) is deleted, since
// a namespace that may hold objects keeps its finalizer.
func namespaceFinalizer(t *testing.T, w *world) (string, string) {
	empty := cp.Namespace(t)
	kube := cp.Kube(t)
	if _, err := kube.CoreV1().Namespaces().Patch(t.Context(), empty, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"kubectl-finalize.test/policies-shape":"namespace"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Namespaces().Delete(t.Context(), empty, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sas, err := kube.CoreV1().ServiceAccounts(empty).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		cms, err := kube.CoreV1().ConfigMaps(empty).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, sa := range sas.Items {
			_ = kube.CoreV1().ServiceAccounts(empty).Delete(ctx, sa.Name, metav1.DeleteOptions{})
		}
		for _, cm := range cms.Items {
			_ = kube.CoreV1().ConfigMaps(empty).Delete(ctx, cm.Name, metav1.DeleteOptions{})
		}
		return len(sas.Items) == 0 && len(cms.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("emptying namespace %s: %v", empty, err)
	}
	w.removed[empty] = ""
	return "", `- name: namespaces
  finalizers: [kubernetes]
  resources: [namespaces]
  selector: "kubectl-finalize.test/policies-shape=namespace"
  allowSystem: true
  verify:
    kubernetes: {resource: secrets, namespace: "{.metadata.name}", name: never-created}
  controls: {count: 0}
`
}
