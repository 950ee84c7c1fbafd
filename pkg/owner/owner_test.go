package owner

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

func TestCatalogCoversTheLandscape(t *testing.T) {
	// One name per well-known finalizer of the built-in catalogue (docs/doctor.md, "who
	// owns each finalizer"), expanded where an entry is a family of names.
	tests := []struct {
		finalizer, owner string
		controlPlane     bool
	}{
		{"kubernetes", "namespace controller (kube-controller-manager)", true},
		{"orphan", "garbage collector (kube-controller-manager)", true},
		{"foregroundDeletion", "garbage collector (kube-controller-manager)", true},
		{"kubernetes.io/pvc-protection", "pvc-protection controller (kube-controller-manager)", true},
		{"kubernetes.io/pv-protection", "pv-protection controller (kube-controller-manager)", true},
		{"customresourcecleanup.apiextensions.k8s.io", "CRD finalizer controller (kube-apiserver)", true},
		{"service.kubernetes.io/load-balancer-cleanup", "service controller (cloud-controller-manager)", true},
		{"batch.kubernetes.io/job-tracking", "job controller (kube-controller-manager)", true},
		{"resource.kubernetes.io/delete-protection", "resourceclaim controller (kube-controller-manager)", true},
		{"networking.k8s.io/service-cidr-finalizer", "servicecidrs controller (kube-controller-manager)", true},
		{"kubernetes.io/vac-protection", "volumeattributesclass-protection controller (kube-controller-manager)", true},
		{"kubernetes.io/pv-controller", "persistentvolume-binder controller (kube-controller-manager)", true},
		{"scheduling.k8s.io/podgroup-protection", "podgroup-protection controller (kube-controller-manager)", true},
		{"external-provisioner.volume.kubernetes.io/finalizer", "CSI external-provisioner", false},
		{"provisioner.storage.kubernetes.io/cloning-protection", "CSI external-provisioner", false},
		{"provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection", "CSI external-provisioner", false},
		{"external-attacher/ebs-csi-aws-com", "CSI external-attacher", false},
		{"snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection", "snapshot-controller", false},
		{"snapshot.storage.kubernetes.io/volumesnapshot-bound-protection", "snapshot-controller", false},
		{"snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection", "snapshot-controller", false},
		{"snapshot.storage.kubernetes.io/pvc-as-source-protection", "snapshot-controller", false},
		{"gateway-exists-finalizer.gateway.networking.k8s.io", "the Gateway API implementation of this GatewayClass", false},
		{"ingress.k8s.aws/resources", "aws-load-balancer-controller", false},
		{"group.ingress.k8s.aws/shared-alb", "aws-load-balancer-controller", false},
		{"service.k8s.aws/resources", "aws-load-balancer-controller", false},
		{"elbv2.k8s.aws/resources", "aws-load-balancer-controller", false},
		{"gateway.k8s.aws/nlb", "aws-load-balancer-controller (gateway)", false},
		{"networking.gke.io/ingress-finalizer-V2", "GKE ingress controller (ingress-gce)", false},
		{"gke.networking.io/l4-netlb-v3", "GKE L4 load balancer controller", false},
		{"networking.gke.io/neg-finalizer", "GKE NEG controller", false},
		{"resources-finalizer.argocd.argoproj.io", "argocd-application-controller", false},
		{"resources-finalizer.argocd.argoproj.io/foreground", "argocd-application-controller", false},
		{"post-delete-finalizer.argocd.argoproj.io/cleanup", "argocd-application-controller", false},
		{"argocd.argoproj.io/hook-finalizer", "argocd-application-controller (gitops-engine)", false},
		{"finalizers.fluxcd.io", "the Flux controller of this kind (kustomize-controller, helm-controller, ...)", false},
		{"finalizer.managedresource.crossplane.io", "the Crossplane provider of this managed resource", false},
		{"in-use.crossplane.io", "the Crossplane provider of this ProviderConfig", false},
		{"composite.apiextensions.crossplane.io", "crossplane", false},
		{"lock.pkg.crossplane.io", "crossplane package manager", false},
		{"cnrm.cloud.google.com/finalizer", "Config Connector controller", false},
		{"cnrm.cloud.google.com/deletion-defender", "Config Connector deletion-defender", false},
		{"finalizers.s3.services.k8s.aws/Bucket", "the ACK service controller of this API group", false},
		{"finalizers.services.k8s.aws/FieldExport", "ACK runtime (FieldExport)", false},
		{"karpenter.sh/termination", "karpenter", false},
		{"machine.cluster.x-k8s.io", "Cluster API controller manager (machine)", false},
		{"wrangler.cattle.io/on-helm-chart-remove", "the Rancher (wrangler) controller named after the slash", false},
		{"uninstall-helm-release", "the helm-operator that manages this resource", false},
		{"kopf.zalando.org/KopfFinalizerMarker", "the Kopf operator that handles this kind", false},
		{"acme.cert-manager.io/finalizer", "cert-manager (challenges controller)", false},
		{"externalsecrets.external-secrets.io/externalsecret-cleanup", "external-secrets", false},
		{"finalizer.keda.sh", "keda-operator", false},
		{"kueue.x-k8s.io/resource-in-use", "kueue-controller-manager", false},
		{"ray.io/rayjob-finalizer", "kuberay-operator", false},
		{"finalizers.gatekeeper.sh/sync", "gatekeeper-controller-manager", false},
		{"restores.velero.io/external-resources-finalizer", "velero (restore controller)", false},
		{"velero.io/pod-volume-finalizer", "velero node-agent", false},
		{"ceph.rook.io/disaster-protection", "rook-ceph-operator", false},
		{"cephcluster.ceph.rook.io", "rook-ceph-operator", false},
		{"longhorn.io", "longhorn-manager", false},
		{"kubevirt.io/virtualMachineControllerFinalize", "virt-controller", false},
		{"snapshot.kubevirt.io/vmsnapshot-protection", "virt-controller (snapshot)", false},
		{"strimzi.io/topic-operator", "strimzi topic operator (entity-operator)", false},
		{"tigera.io/operator-cleanup", "tigera-operator", false},
		{"istio-finalizer.install.istio.io", "in-cluster Istio operator (removed in Istio 1.24)", false},
		{"openshift.io/origin", "OpenShift origin namespace controller", false},
		{"operatorframework.io/delete-custom-resources", "olm-operator", false},
		// 2025-26 (#34).
		{"operators.coreos.com/csv-cleanup", "olm-operator", false},
		{"olm.operatorframework.io/cleanup-unpack-cache", "operator-controller-controller-manager", false},
		{"olm.operatorframework.io/cleanup-contentmanager-cache", "operator-controller-controller-manager", false},
		{"olm.operatorframework.io/teardown", "operator-controller-controller-manager", false},
		{"olm.operatorframework.io/delete-server-cache", "catalogd-controller-manager", false},
		{"objectstorage.k8s.io/protection", "the COSI controller, or the COSI sidecar of the bucket's driver", false},
		{"cosi.objectstorage.k8s.io/bucketaccess-protection", "the COSI provisioner sidecar of the bucket's driver", false},
		{"karpenter.k8s.aws/termination", "karpenter", false},
		{"machinepool.cluster.x-k8s.io", "Cluster API controller manager (machinepool)", false},
		{"machineset.topology.cluster.x-k8s.io", "Cluster API controller manager (topology)", false},
		{"machinedeployment.topology.cluster.x-k8s.io", "Cluster API controller manager (topology)", false},
		{"ipam.cluster.x-k8s.io/ReleaseAddress", "the Cluster API IPAM provider of the claim's pool", false},
		{"ipam.cluster.x-k8s.io/ProtectAddress", "the Cluster API IPAM provider of the address's pool", false},
		{"workflows.argoproj.io/artifact-gc", "workflow-controller", false},
		{"workflows.argoproj.io/status", "workflow-controller", false},
		{"cnpg.io/deleteDatabase", "the CloudNativePG instance manager of the cluster's primary", false},
		{"cnpg.io/deletePublication", "the CloudNativePG instance manager of the cluster's primary", false},
		{"cnpg.io/deleteSubscription", "the CloudNativePG instance manager of the cluster's primary", false},
		{"strimzi.io/auto-rebalancing", "strimzi-cluster-operator", false},
		{"chains.tekton.dev", "tekton-chains-controller", false},
		{"chains.tekton.dev/pipelinerun", "tekton-chains-controller", false},
		{"pipelinesascode.tekton.dev", "pipelines-as-code-watcher", false},
		{"sailoperator.io/sail-operator", "sail-operator", false},
	}
	c := Builtin()
	for _, tt := range tests {
		e, ok := c.Lookup(tt.finalizer)
		if !ok {
			t.Errorf("%s: not in the catalogue", tt.finalizer)
			continue
		}
		if e.Owner != tt.owner || e.ControlPlane != tt.controlPlane {
			t.Errorf("%s: owner %q controlPlane %v, want %q %v", tt.finalizer, e.Owner, e.ControlPlane, tt.owner, tt.controlPlane)
		}
		if e.Purpose == "" || e.Source == "" || e.Project == "" {
			t.Errorf("%s: every entry says its purpose, project and source", tt.finalizer)
		}
	}
	if c.Len() < 68 {
		t.Errorf("the catalogue has %d entries, want at least 68", c.Len())
	}
	if _, ok := c.Lookup("db.example.com/finalizer"); ok {
		t.Error("an unknown finalizer must not be in the catalogue")
	}
}

func TestNewCatalogRejectsDuplicates(t *testing.T) {
	_, err := newCatalog([]Entry{{Finalizer: "a"}, {Finalizer: "a"}})
	if err == nil || err.Error() != `catalogue entry "a" is listed twice` {
		t.Fatalf("got %v", err)
	}
}

// managed builds a managedFields entry whose fieldsV1 is raw.
func managed(manager, raw string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(raw)}
}

func TestWriters(t *testing.T) {
	fields := []metav1.ManagedFieldsEntry{
		managed("kubectl-client-side-apply", `{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{".":{},"f:size":{}}}`),
		managed("database-operator", `{"f:metadata":{"f:finalizers":{".":{},"v:\"db.example.com/finalizer\"":{}}}}`),
		managed("helm", `{"f:metadata":{"f:finalizers":{"v:\"example.com/from-chart\"":{}}}}`),
		managed("kube-apiserver", `{"f:spec":{"f:finalizers":{"v:\"kubernetes\"":{}}}}`),
		managed("broken", `{"f:metadata":`),
	}
	tests := []struct {
		field, name string
		want        []string
	}{
		{"metadata.finalizers", "db.example.com/finalizer", []string{"database-operator"}},
		{"metadata.finalizers", "example.com/from-chart", []string{"helm"}},
		{"metadata.finalizers", "nobody/wrote-this", nil},
		{"spec.finalizers", "kubernetes", []string{"kube-apiserver"}},
		{"metadata.finalizers", "kubernetes", nil},
	}
	for _, tt := range tests {
		got := Writers(fields, tt.field, tt.name)
		if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
			t.Errorf("Writers(%s, %s) = %v, want %v", tt.field, tt.name, got, tt.want)
		}
	}
}

func TestResolve(t *testing.T) {
	r := NewResolver(Builtin(), []string{"", "apps", "db.example.com", "example.com", "sql.cnrm.cloud.google.com", "batch.example.org"})
	meta := &metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		managed("database-operator", `{"f:metadata":{"f:finalizers":{"v:\"db.example.com/finalizer\"":{}}}}`),
		managed("kubectl-client-side-apply", `{"f:metadata":{"f:finalizers":{"v:\"widgets.db.example.com/from-manifest\"":{},"v:\"db.example.com/finalizer\"":{},"v:\"kubernetes.io/pvc-protection\"":{}}}}`),
		managed("argocd-controller", `{"f:metadata":{"f:finalizers":{"v:\"unknown.io/x\"":{}}}}`),
		// A restore wrote the whole object, its finalizer with it; a controller of the
		// same finalizer wrote its status.
		managed("restore-tool", `{"f:metadata":{"f:finalizers":{"v:\"db.example.com/restored\"":{},"v:\"db.example.com/reconciled\"":{}}},"f:spec":{"f:size":{}}}`),
		{Manager: "reconciler", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:phase":{}}}`)},
		managed("reconciler", `{"f:metadata":{"f:finalizers":{"v:\"db.example.com/reconciled\"":{}}},"f:spec":{"f:size":{}}}`),
		// Crossplane's provider-kubernetes applied an Object's manifest, its finalizer
		// and content with it (#38).
		managed("provider-kubernetes/held1", `{"f:data":{"f:k":{}},"f:metadata":{"f:finalizers":{"v:\"applied.example.org/hold\"":{}}}}`),
	}}
	tests := []struct {
		name string
		fin  string
		want finalizev1alpha1.Finalizer
	}{
		{"catalogue wins, addedBy still reported", "kubernetes.io/pvc-protection", finalizev1alpha1.Finalizer{
			Owner: "pvc-protection controller (kube-controller-manager)", OwnerSource: "catalog", AddedBy: "kubectl-client-side-apply", System: true}},
		{"a controller that wrote it owns it, even when kubectl co-owns it", "db.example.com/finalizer", finalizev1alpha1.Finalizer{
			Owner: "database-operator", OwnerSource: "managedFields", AddedBy: "database-operator"}},
		{"written with the object's content, by a program that does not write its status: added by it, owned by the API group", "db.example.com/restored", finalizev1alpha1.Finalizer{
			Owner: "db.example.com", OwnerSource: "apiGroup", AddedBy: "restore-tool"}},
		{"written with the content by a program that writes the status: owned by it", "db.example.com/reconciled", finalizev1alpha1.Finalizer{
			Owner: "reconciler", OwnerSource: "managedFields", AddedBy: "restore-tool"}},
		{"written from a manifest: the API group's controller owns it", "widgets.db.example.com/from-manifest", finalizev1alpha1.Finalizer{
			Owner: "db.example.com", OwnerSource: "apiGroup", AddedBy: "kubectl-client-side-apply"}},
		{"a group inside the finalizer's domain does not own it", "cnrm.cloud.google.com/other", finalizev1alpha1.Finalizer{
			OwnerSource: "unknown"}},
		{"a finalizer inside a served group", "backups.sql.cnrm.cloud.google.com/x", finalizev1alpha1.Finalizer{
			Owner: "sql.cnrm.cloud.google.com", OwnerSource: "apiGroup"}},
		{"nothing known, GitOps applier added it", "unknown.io/x", finalizev1alpha1.Finalizer{
			OwnerSource: "unknown", AddedBy: "argocd-controller"}},
		{"applied from a manifest by provider-kubernetes: added by it, not its to remove", "applied.example.org/hold", finalizev1alpha1.Finalizer{
			OwnerSource: "unknown", AddedBy: "provider-kubernetes/held1"}},
		// System by name, whatever the catalogue knows (IsSystem).
		{"no domain: system", "my-finalizer", finalizev1alpha1.Finalizer{OwnerSource: "unknown", System: true}},
		{"a domain Kubernetes reserves that the catalogue does not know: system", "example.kubernetes.io/cleanup", finalizev1alpha1.Finalizer{
			OwnerSource: "unknown", System: true}},
		{"a catalogued finalizer of a sub-project in a reserved domain: system", "external-provisioner.volume.kubernetes.io/finalizer", finalizev1alpha1.Finalizer{
			Owner: "CSI external-provisioner", OwnerSource: "catalog", System: true}},
		{"a catalogued finalizer outside the reserved domains: not system", "finalizer.managedresource.crossplane.io", finalizev1alpha1.Finalizer{
			Owner: "the Crossplane provider of this managed resource", OwnerSource: "catalog"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Resolve(meta, finalizev1alpha1.FieldMetadataFinalizers, tt.fin)
			tt.want.Name, tt.want.Field = tt.fin, finalizev1alpha1.FieldMetadataFinalizers
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDomain(t *testing.T) {
	for fin, want := range map[string]string{
		"db.example.com/finalizer": "db.example.com",
		"finalizer.keda.sh":        "finalizer.keda.sh",
		"kubernetes":               "",
		"external-attacher/x":      "",
		"foo/bar":                  "",
	} {
		if got := domainOf(fin); got != want {
			t.Errorf("Domain(%q) = %q, want %q", fin, got, want)
		}
	}
}

func TestReconciles(t *testing.T) {
	status := metav1.ManagedFieldsEntry{Manager: "op", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)}
	tests := []struct {
		name    string
		managed []metav1.ManagedFieldsEntry
		want    bool
	}{
		{"metadata only", []metav1.ManagedFieldsEntry{managed("op", `{"f:metadata":{"f:finalizers":{"v:\"x/y\"":{}},"f:labels":{"f:a":{}}}}`)}, true},
		{"the object's spec", []metav1.ManagedFieldsEntry{managed("op", `{"f:metadata":{"f:finalizers":{"v:\"x/y\"":{}}},"f:spec":{"f:size":{}}}`)}, false},
		{"a ConfigMap's data", []metav1.ManagedFieldsEntry{managed("op", `{"f:data":{"f:k":{}},"f:metadata":{"f:finalizers":{"v:\"x/y\"":{}}}}`)}, false},
		{"the spec, and the status through its subresource", []metav1.ManagedFieldsEntry{managed("op", `{"f:spec":{"f:size":{}}}`), status}, true},
		{"the status of a type without a status subresource", []metav1.ManagedFieldsEntry{managed("op", `{"f:spec":{"f:size":{}},"f:status":{"f:phase":{}}}`)}, true},
		{"a namespace's spec.finalizers", []metav1.ManagedFieldsEntry{managed("op", `{"f:spec":{"f:finalizers":{"v:\"x/y\"":{}}}}`)}, true},
		{"another manager's status", []metav1.ManagedFieldsEntry{managed("op", `{"f:spec":{"f:size":{}}}`), func() metav1.ManagedFieldsEntry { e := status; e.Manager = "other"; return e }()}, false},
		{"unreadable fields", []metav1.ManagedFieldsEntry{managed("op", `{"f:metadata":`)}, false},
		{"no entry", []metav1.ManagedFieldsEntry{managed("other", `{"f:metadata":{}}`)}, false},
	}
	for _, tt := range tests {
		if got := Reconciles(tt.managed, "op"); got != tt.want {
			t.Errorf("%s: Reconciles = %v, want %v", tt.name, got, tt.want)
		}
	}
}
