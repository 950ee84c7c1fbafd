package policies

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

// docsRules are the rules of the policy docs/presets.md shows in the section of preset,
// as written there: read from the page, so that the shape runs what a reader copies, and
// fails when the page changes it into something that does not run.
func docsRules(t *testing.T, preset string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile("../../../docs/presets.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	start := strings.Index(page, "\n## "+preset+": ")
	if start < 0 {
		t.Fatalf("docs/presets.md has no section ## %s", preset)
	}
	section := page[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	m := regexp.MustCompile("(?s)```yaml\n(apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\n.*?)```").FindStringSubmatch(section)
	if m == nil {
		t.Fatalf("the section ## %s of docs/presets.md shows no policy", preset)
	}
	var policy struct {
		Rules []map[string]any `json:"rules"`
	}
	if err := yaml.Unmarshal([]byte(m[1]), &policy); err != nil {
		t.Fatalf("the policy of ## %s in docs/presets.md: %v", preset, err)
	}
	if len(policy.Rules) == 0 {
		t.Fatalf("the policy of ## %s in docs/presets.md has no rule", preset)
	}
	return policy.Rules
}

// rulesText is rules as the rules: list of a policy.
func rulesText(t *testing.T, rules ...map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// cloudCall is one call cloudcli answers: a program's arguments, the identity its
// VerifyRequest must carry, and whether that resource exists (cloudcli.Call).
type cloudCall struct {
	Args     []string          `json:"args"`
	Identity map[string]string `json:"identity,omitempty"`
	Exists   bool              `json:"exists"`
}

// ask has cloudcli's program answer a call with args about an object whose identity is
// identity: Present when exists, else Gone. Any other call of the shape fails.
func (w *world) ask(program string, identity map[string]string, exists bool, args ...string) {
	if w.inventory == nil {
		w.inventory = map[string][]cloudCall{}
		w.pod = append(w.pod, w.withCloudCLI)
	}
	w.inventory[program] = append(w.inventory[program], cloudCall{Args: args, Identity: identity, Exists: exists})
}

// withCloudCLI installs cloudcli in the pod where the docs' rules run their programs,
// /usr/local/bin, under the name of each program the shape asks, with its inventory: an
// init container of the providers' image copies it into an emptyDir, which the reconcile
// container mounts read-only, so the release image runs as released.
func (w *world) withCloudCLI(t *testing.T, a account, pod *corev1.Pod) {
	b, err := json.Marshal(w.inventory)
	if err != nil {
		t.Fatal(err)
	}
	configMap(t, a.namespace, "cloudcli-inventory", map[string]string{"inventory.json": string(b)})
	mount(pod, configMapVolume("cloudcli-inventory", "cloudcli-inventory"), "/etc/cloudcli")
	mount(pod, corev1.Volume{Name: "bin", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, "/usr/local/bin")
	args := []string{"/cloudcli"}
	for _, program := range slices.Sorted(maps.Keys(w.inventory)) {
		args = append(args, "/usr/local/bin/"+program)
	}
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
		Name:            "cloudcli",
		Image:           providers(t),
		ImagePullPolicy: corev1.PullNever,
		Args:            args,
		SecurityContext: restricted(),
		VolumeMounts:    []corev1.VolumeMount{{Name: "bin", MountPath: "/usr/local/bin"}},
	})
}

// external is one object of a preset's shape: its name, the name its operator gave the
// external resource (never the object's), whether that resource exists, and whether
// the object is stuck or a live control.
type external struct {
	name, id      string
	exists, stuck bool
}

// threeOf are a preset shape's objects: a live control whose resource exists, a stuck
// object whose resource is gone (removed), and a stuck one whose resource exists (kept).
func threeOf(kind, live, gone, kept string) []external {
	return []external{{"live-" + kind, live, true, false}, {"deleted-" + kind, gone, false, true}, {"kept-" + kind, kept, true, true}}
}

// expect says what the pass does with o, whose program was called as asked: a stuck
// object is removed when its resource is gone, kept when it exists; a live control
// must be answered Present, or the rule could not verify and the pass would not exit 0.
func (w *world) expect(o external, asked string) {
	switch {
	case !o.stuck:
	case o.exists:
		w.kept[o.name] = asked + ": exists"
	default:
		w.removed[o.name] = asked + ": not found"
	}
}

// operated creates an object of gvr as its operator does, as field manager manager: the
// object with the operator's finalizer, annotations and spec, then its status through
// the status subresource. It is deleted when stuck is set. The managedFields are what
// make a preset trust an identity it reads from an annotation or status.
func operated(t *testing.T, gvr schema.GroupVersionResource, kind, ns, name, finalizer, manager string, annotations map[string]string, spec, status map[string]any, stuck bool) {
	t.Helper()
	u := fixture.Custom(gvr, kind, ns, name, finalizer)
	u.SetAnnotations(annotations)
	u.Object["spec"] = spec
	c := fixture.Resource(dynamic.NewForConfigOrDie(cp.Config), gvr, ns)
	c.Manager = manager
	created := fixture.Held(t, c, u)
	created.Object["status"] = status
	if _, err := c.UpdateStatus(t.Context(), created, metav1.UpdateOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
	if stuck {
		fixture.Delete(t, c, name)
	}
}

// crossplane runs docs/presets.md's s3-buckets rule, read from the page: the provider
// keeps the bucket's name in the crossplane.io/external-name annotation, its ARN and ID
// in status.atProvider.
func crossplane(t *testing.T, w *world) (string, string) {
	gvr := fixture.CRD(t, cp.Config, bucketCRD)
	for _, o := range threeOf("bucket", "orders-archive", "orders-archive-2019", "orders-exports") {
		arn := "arn:aws:s3:::" + o.id
		// An upjet provider (provider-aws-s3) runs as /usr/local/bin/provider, and its
		// client names no field manager: "provider" (pkg/preset/builtin.go).
		operated(t, gvr, bucketCRD.Kind, "", o.name, "finalizer.managedresource.crossplane.io", "provider",
			map[string]string{"crossplane.io/external-name": o.id},
			map[string]any{"deletionPolicy": "Delete", "forProvider": map[string]any{"region": "eu-west-1"}},
			map[string]any{"atProvider": map[string]any{"arn": arn, "id": o.id}}, o.stuck)
		w.ask("check-s3", map[string]string{"externalName": o.id, "arn": arn, "id": o.id, "region": "eu-west-1"}, o.exists, o.id)
		w.expect(o, "check-s3 "+o.id)
	}
	return "", rulesText(t, docsRules(t, "crossplane-managed")...)
}

// ack runs docs/presets.md's rds-instances rule, read from the page: the controller keeps
// the ARN, account and region in status.ackResourceMetadata; the service comes from the
// finalizer. A namespace annotated to retain keeps what is in it, without a call.
func ack(t *testing.T, w *world) (string, string) {
	deleting, retaining := cp.Namespace(t), cp.Namespace(t)
	kube := cp.Kube(t)
	for ns, policy := range map[string]string{deleting: "delete", retaining: "retain"} {
		if _, err := kube.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"rds.services.k8s.aws/deletion-policy":"`+policy+`"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gvr := fixture.CRD(t, cp.Config, dbInstance)
	const fin = "finalizers.rds.services.k8s.aws/DBInstance"
	instance := func(ns string, o external) {
		arn := "arn:aws:rds:eu-west-1:123456789012:db:" + o.id
		// An ACK service controller runs as /bin/controller, and its client names no
		// field manager: "controller" (pkg/preset/builtin.go).
		operated(t, gvr, dbInstance.Kind, ns, o.name, fin, "controller", nil,
			map[string]any{"dbInstanceIdentifier": o.id, "engine": "postgres"},
			map[string]any{"ackResourceMetadata": map[string]any{"arn": arn, "ownerAccountID": "123456789012", "region": "eu-west-1"}}, o.stuck)
		if ns == deleting {
			w.ask("check-rds", map[string]string{"arn": arn, "ownerAccountID": "123456789012", "region": "eu-west-1", "service": "rds"}, o.exists, "eu-west-1", arn)
			w.expect(o, "check-rds eu-west-1 "+arn)
		}
	}
	for _, o := range threeOf("dbinstance", "orders", "orders-2019", "orders-replica") {
		instance(deleting, o)
	}
	// Retained by its namespace: kept without a call, which cloudcli would fail.
	instance(retaining, external{"deleted-retained", "orders-2018", false, true})
	w.kept["deleted-retained"] = "retained by design: namespace " + retaining + " annotation rds.services.k8s.aws/deletion-policy: retain"
	return "", rulesText(t, docsRules(t, "ack")...)
}

// configConnector runs docs/presets.md's cloud-sql rule, read from the page: the
// instance's name in
// spec.resourceID, the project in the cnrm.cloud.google.com/project-id annotation
// (which Config Connector writes), and status.externalRef and selfLink, which an exec
// provider receives too.
func configConnector(t *testing.T, w *world) (string, string) {
	ns := cp.Namespace(t)
	gvr := fixture.CRD(t, cp.Config, sqlCRD)
	const project = "shop-prod"
	for _, o := range threeOf("sqlinstance", "orders-db", "orders-db-2019", "orders-db-replica") {
		ref := "projects/" + project + "/instances/" + o.id
		selfLink := "https://sqladmin.googleapis.com/sql/v1beta4/" + ref
		operated(t, gvr, sqlCRD.Kind, ns, o.name, "cnrm.cloud.google.com/finalizer", "cnrm-controller-manager",
			map[string]string{"cnrm.cloud.google.com/project-id": project},
			map[string]any{"resourceID": o.id, "databaseVersion": "POSTGRES_16", "region": "europe-west1"},
			map[string]any{"externalRef": ref, "selfLink": selfLink}, o.stuck)
		w.ask("check-gcloud-sql", map[string]string{"resourceID": o.id, "projectID": project, "externalRef": ref, "selfLink": selfLink}, o.exists, project, o.id)
		w.expect(o, "check-gcloud-sql "+project+" "+o.id)
	}
	return "", rulesText(t, docsRules(t, "config-connector")...)
}

// awsLoadBalancer runs docs/presets.md's service-load-balancers rule, read from the
// page: a person creates
// the Service, the controller adds its finalizer and writes the load balancer's DNS
// name into status.loadBalancer.ingress.
func awsLoadBalancer(t *testing.T, w *world) (string, string) {
	ns := cp.Namespace(t)
	services := cp.Kube(t).CoreV1().Services(ns)
	// The controller runs as /controller, and its client names no field manager:
	// "controller" (pkg/preset/builtin.go).
	const controller = "controller"
	for _, o := range threeOf("lb", "k8s-shop-web-0a1b2c3d4e.elb.eu-west-1.amazonaws.com", "k8s-shop-old-5f6a7b8c9d.elb.eu-west-1.amazonaws.com", "k8s-shop-api-1e2d3c4b5a.elb.eu-west-1.amazonaws.com") {
		fixture.Held(t, services, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: o.name},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443}}},
		})
		svc, err := services.Patch(t.Context(), o.name, types.MergePatchType, []byte(`{"metadata":{"finalizers":["service.k8s.aws/resources"]}}`), metav1.PatchOptions{FieldManager: controller})
		if err != nil {
			t.Fatal(err)
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: o.id}}
		if _, err := services.UpdateStatus(t.Context(), svc, metav1.UpdateOptions{FieldManager: controller}); err != nil {
			t.Fatal(err)
		}
		if o.stuck {
			fixture.Delete(t, services, o.name)
		}
		w.ask("check-elb", map[string]string{"hostname": o.id, "stack": ns + "/" + o.name}, o.exists, o.id)
		w.expect(o, "check-elb "+o.id)
	}
	return "", rulesText(t, docsRules(t, "aws-load-balancer")...)
}

// volume makes a CSI PersistentVolume of handle, as the external-provisioner does,
// labelled labels, deleted when stuck is set.
func volume(t *testing.T, name, handle string, policy corev1.PersistentVolumeReclaimPolicy, labels map[string]string, stuck bool) {
	t.Helper()
	fixture.Create(t, cp.Kube(t).CoreV1().PersistentVolumes(), &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Finalizers: []string{"external-provisioner.volume.kubernetes.io/finalizer"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: policy,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: handle}},
		},
	}, stuck)
}

// csiVolume runs docs/presets.md's ebs-volumes rule, read from the page: the volume's ID
// is spec.csi.volumeHandle. Delete is the reclaim policy: Retain would read Retained.
func csiVolume(t *testing.T, w *world) (string, string) {
	for _, o := range threeOf("pv", "vol-0a1b2c3d4e5f60718", "vol-0b2c3d4e5f6071829", "vol-0c3d4e5f607182930") {
		volume(t, o.name, o.id, corev1.PersistentVolumeReclaimDelete, nil, o.stuck)
		w.ask("check-ebs", map[string]string{"driver": "ebs.csi.aws.com", "volumeHandle": o.id}, o.exists, o.id)
		w.expect(o, "check-ebs "+o.id)
	}
	return "", rulesText(t, docsRules(t, "csi-volume")...)
}

// allowRetained: volumes whose reclaim policy is Retain are Retained, without a call.
// Under a rule with allowRetained: true (docs/policy.md: "a Retained verdict removes
// the finalizer"; docs/presets.md: "a person agreed that these resources stay") the
// finalizer goes; under the same rule without it, it stays. Each rule has a live control
// and a volume whose resource is gone, so that each rule's provider is seen to work.
func allowRetained(t *testing.T, w *world) (string, string) {
	const selector = "kubectl-finalize.test/retain=agreed"
	agreed := map[string]string{"kubectl-finalize.test/retain": "agreed"}
	for _, rule := range []struct {
		prefix string
		labels map[string]string
	}{{"agreed", agreed}, {"other", nil}} {
		for _, o := range []external{
			{rule.prefix + "-live", "vol-" + rule.prefix + "-0001", true, false},
			{rule.prefix + "-deleted", "vol-" + rule.prefix + "-0002", false, true},
		} {
			volume(t, o.name, o.id, corev1.PersistentVolumeReclaimDelete, rule.labels, o.stuck)
			w.ask("check-ebs", map[string]string{"driver": "ebs.csi.aws.com", "volumeHandle": o.id}, o.exists, o.id)
			w.expect(o, "check-ebs "+o.id)
		}
		// Not in cloudcli's inventory: a call about it would fail.
		volume(t, rule.prefix+"-retained", "vol-"+rule.prefix+"-0003", corev1.PersistentVolumeReclaimRetain, rule.labels, true)
	}
	const retained = "retained by design: spec.persistentVolumeReclaimPolicy: Retain"
	w.removed["agreed-retained"] = retained
	w.kept["other-retained"] = retained
	// The docs' ebs-volumes rule, and before it the same rule for the volumes people
	// agreed to keep.
	ebs := docsRules(t, "csi-volume")[0]
	agreedToStay := maps.Clone(ebs)
	agreedToStay["name"], agreedToStay["selector"], agreedToStay["allowRetained"] = "agreed-to-stay", selector, true
	return "", rulesText(t, agreedToStay, ebs)
}
