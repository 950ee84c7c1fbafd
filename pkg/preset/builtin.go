package preset

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The built-in presets. Sources: crossplane-runtime pkg/meta and pkg/reconciler/managed;
// aws-controllers-k8s/runtime pkg/runtime (deletion policy, read-only); Config Connector
// pkg/k8s/constants.go; aws-load-balancer-controller pkg/deploy/tracking; the Kubernetes
// PersistentVolume API. docs/presets.md lists the fields each preset reads.
//
// Managers are the field managers each operator's writes are recorded under. A client
// that names no field manager is recorded under the start of its user agent, up to the
// first "/" (k8s.io/apiserver pkg/endpoints/handlers/create.go: managerOrUserAgent,
// prefixFromUserAgent), which client-go and controller-runtime make the base name of the
// binary (k8s.io/client-go rest.DefaultKubernetesUserAgent, os.Args[0];
// sigs.k8s.io/controller-runtime pkg/client/client.go): the name its image runs it as.
var builtin = []*Preset{
	{
		Name:       "crossplane-managed",
		Operator:   "Crossplane managed resources (providers)",
		Finalizers: []string{"finalizer.managedresource.crossplane.io"},
		Identity:   crossplaneExternal,
		// Crossplane's providers do not all name the external resource the same way
		// (#38): an identity read where a provider does not read it names another
		// resource, whose 404 would read as Gone. So the preset verifies only the
		// families whose source says where they read it, told apart by API group.
		Families: []Family{
			{
				// upjet generates every provider of provider-upjet-aws, -gcp and -azure (their
				// API groups are *.upbound.io, *.m.upbound.io in Crossplane v2); upjet's
				// config.ExternalName reads the resource's cloud identifier from the
				// crossplane.io/external-name annotation (GetIDFn), and writes it there.
				Name: "upjet providers", Groups: []string{"*.upbound.io"}, Identity: crossplaneExternal,
				Uses: "the crossplane.io/external-name annotation, the cloud's name or ID of the resource, and status.atProvider",
			},
			{
				// crossplane-contrib/provider-kubernetes v1.3.1 internal/controller/{cluster,
				// namespaced}/object/object.go: parseManifest reads the object to apply from
				// spec.forProvider.manifest and names it with the Object's name when the
				// manifest has none; it never reads crossplane.io/external-name, which
				// managed.WithDeterministicExternalName sets to the Object's own name.
				Name: "provider-kubernetes", Groups: []string{"kubernetes.crossplane.io", "kubernetes.m.crossplane.io"},
				Uses: "its manifest's object, spec.forProvider.manifest (apiVersion, kind, metadata.namespace, and metadata.name, which defaults to the Object's name)",
				Identity: []Identity{
					{Name: "manifestAPIVersion", From: "spec.forProvider.manifest.apiVersion", Field: path("spec", "forProvider", "manifest", "apiVersion"), get: field("spec", "forProvider", "manifest", "apiVersion")},
					{Name: "manifestKind", From: "spec.forProvider.manifest.kind", Field: path("spec", "forProvider", "manifest", "kind"), get: field("spec", "forProvider", "manifest", "kind")},
					{Name: "manifestNamespace", From: "spec.forProvider.manifest.metadata.namespace", Field: path("spec", "forProvider", "manifest", "metadata", "namespace"),
						get: field("spec", "forProvider", "manifest", "metadata", "namespace")},
					{Name: "manifestName", From: "spec.forProvider.manifest.metadata.name, else the Object's name", Field: path("spec", "forProvider", "manifest", "metadata", "name"),
						get: func(o *unstructured.Unstructured, f string) string {
							if v := field("spec", "forProvider", "manifest", "metadata", "name")(o, f); v != "" {
								return v
							}
							return o.GetName()
						}},
				},
			},
			{
				Name: "provider-helm", Groups: []string{"helm.crossplane.io", "helm.m.crossplane.io"},
				Unknown: "where provider-helm takes a Release's identity (its release name and namespace) is not read from its source here, so its Releases are not verified through this preset; " +
					"a rule of its own, without the preset, can name them",
			},
		},
		Retain: []Signal{
			{Description: "spec.deletionPolicy: Orphan", check: fieldIs([]string{"Orphan"}, "spec", "deletionPolicy")},
			{Description: "spec.managementPolicies without Delete or *", check: managementWithoutDelete},
		},
		Hold: []Signal{
			{Description: "annotation crossplane.io/paused: true", check: annotationIs("crossplane.io/paused", "true")},
		},
		Warnings: []string{"a fresh 404 may be eventual consistency: Crossplane itself ignores 'not found' for 30 s after a create; keep minAge well above that"},
		// The provider that reconciles the managed resource writes its external name and
		// status. crossplane-runtime's managed reconciler names no field manager for them
		// (v1 and v2 pkg/reconciler/managed/api.go: NameAsExternalName and
		// RetryingCriticalAnnotationUpdater call client.Update; reconciler.go calls
		// Status().Update), so they are recorded under the provider's binary, which its
		// image names:
		Managers: []string{
			// upjet providers, every family provider of provider-upjet-aws, -gcp, -azure ...
			// (crossplane-contrib/provider-upjet-aws cluster/images/provider-aws/Dockerfile:
			// ADD bin/.../${APIGROUP} /usr/local/bin/provider, ENTRYPOINT ["provider"]).
			"provider",
			// crossplane-contrib/provider-kubernetes (cluster/images/provider-kubernetes/
			// Dockerfile: ENTRYPOINT ["crossplane-kubernetes-provider"]), provider-helm
			// (crossplane-helm-provider), provider-sql (crossplane-sql-provider), the
			// classic provider-aws (crossplane-aws-provider), crossplane/provider-template.
			"crossplane-*-provider",
			// Providers scaffolded by Crossplane's kubebuilder plugin (its
			// cluster/images/PROVIDER/Dockerfile template: ENTRYPOINT
			// ["crossplane-{{ .ProviderName }}"], ProviderName provider-NAME).
			"crossplane-provider-*",
		},
	},
	{
		Name:       "ack",
		Operator:   "AWS Controllers for Kubernetes",
		Finalizers: []string{"finalizers.*.services.k8s.aws/*"},
		Identity: []Identity{
			{Name: "arn", From: "status.ackResourceMetadata.arn", Field: path("status", "ackResourceMetadata", "arn"), get: field("status", "ackResourceMetadata", "arn")},
			{Name: "ownerAccountID", From: "status.ackResourceMetadata.ownerAccountID", Field: path("status", "ackResourceMetadata", "ownerAccountID"), get: field("status", "ackResourceMetadata", "ownerAccountID")},
			{Name: "region", From: "status.ackResourceMetadata.region", Field: path("status", "ackResourceMetadata", "region"), get: field("status", "ackResourceMetadata", "region")},
			{Name: "service", From: "the finalizer: finalizers.SERVICE.services.k8s.aws/KIND", get: ackService},
		},
		Retain: []Signal{
			{Description: "annotation services.k8s.aws/deletion-policy: retain", check: annotationIs("services.k8s.aws/deletion-policy", "retain")},
			{Description: "namespace annotation SERVICE.services.k8s.aws/deletion-policy: retain", check: ackNamespaceRetain},
		},
		Hold: []Signal{
			{Description: "annotation services.k8s.aws/read-only: true", check: annotationIs("services.k8s.aws/read-only", "true")},
		},
		Warnings:       []string{"the controller's own --deletion-policy flag can also retain resources, and cannot be read from the cluster"},
		NeedsNamespace: true,
		// Every ACK service controller writes status.ackResourceMetadata through
		// controller-runtime's client with no field manager
		// (aws-controllers-k8s/runtime pkg/runtime/reconciler.go: patchResourceStatus,
		// kc.Status().Patch), so under its binary's name: the code generator builds every
		// controller as bin/controller and its image runs /bin/controller
		// (aws-controllers-k8s/code-generator Dockerfile; the Helm chart runs
		// ./bin/controller).
		Managers: []string{"controller"},
	},
	{
		Name:       "config-connector",
		Operator:   "Config Connector",
		Finalizers: []string{"cnrm.cloud.google.com/finalizer"},
		Identity: []Identity{
			{Name: "resourceID", From: "spec.resourceID, else metadata.name", Field: path("spec", "resourceID"), get: func(o *unstructured.Unstructured, f string) string {
				if v := field("spec", "resourceID")(o, f); v != "" {
					return v
				}
				return o.GetName()
			}},
			{Name: "externalRef", From: "status.externalRef", Field: path("status", "externalRef"), get: field("status", "externalRef")},
			{Name: "selfLink", From: "status.selfLink", Field: path("status", "selfLink"), get: field("status", "selfLink")},
			{Name: "projectID", From: "annotation cnrm.cloud.google.com/project-id", Field: annotationField("cnrm.cloud.google.com/project-id"), get: annotation("cnrm.cloud.google.com/project-id")},
		},
		Retain: []Signal{
			{Description: "annotation cnrm.cloud.google.com/deletion-policy: abandon", check: annotationIs("cnrm.cloud.google.com/deletion-policy", "abandon")},
		},
		// Config Connector names its field manager: its lifecycle handler updates objects
		// and their status with client.FieldOwner(k8s.ControllerManagedFieldManager)
		// (GoogleCloudPlatform/k8s-config-connector pkg/k8s/constants.go:
		// ControllerManagedFieldManager = "cnrm-controller-manager";
		// pkg/controller/lifecyclehandler/handler.go: updateStatus, updateAPIServer).
		Managers: []string{"cnrm-controller-manager"},
	},
	{
		Name:     "aws-load-balancer",
		Operator: "AWS Load Balancer Controller",
		Finalizers: []string{"service.k8s.aws/resources", "ingress.k8s.aws/resources", "group.ingress.k8s.aws/*",
			"elbv2.k8s.aws/resources"},
		Identity: []Identity{
			{Name: "hostname", From: "status.loadBalancer.ingress[0].hostname", Field: path("status", "loadBalancer", "ingress"), get: lbHostname},
			{Name: "stack", From: "the stack tag: NAMESPACE/NAME, or the group of a group.ingress.k8s.aws/GROUP finalizer", get: lbStack},
			{Name: "targetGroupARN", From: "spec.targetGroupARN", Field: path("spec", "targetGroupARN"), get: field("spec", "targetGroupARN")},
		},
		Shared: func(f string) bool { return strings.HasPrefix(f, "group.ingress.k8s.aws/") },
		Warnings: []string{
			"the controller re-adopts a load balancer by its tags (elbv2.k8s.aws/cluster and the stack tag): remove the tags of a load balancer that stays",
			"an ingress group shares one load balancer: a group.ingress.k8s.aws finalizer is verified gone only when the whole group's load balancer is",
		},
		// The controller writes status.loadBalancer through controller-runtime's client with
		// no field manager and no user agent of its own (kubernetes-sigs/
		// aws-load-balancer-controller pkg/config/runtime_config.go: BuildRestConfig), so
		// under its binary's name: its image runs /controller (Dockerfile: go build -o
		// /out/controller, ENTRYPOINT ["/controller"]).
		Managers: []string{"controller"},
	},
	{
		Name:       "csi-volume",
		Operator:   "CSI external-provisioner",
		Finalizers: []string{"external-provisioner.volume.kubernetes.io/finalizer"},
		Identity: []Identity{
			{Name: "driver", From: "spec.csi.driver", Field: path("spec", "csi", "driver"), get: field("spec", "csi", "driver")},
			{Name: "volumeHandle", From: "spec.csi.volumeHandle", Field: path("spec", "csi", "volumeHandle"), get: field("spec", "csi", "volumeHandle")},
		},
		Retain: []Signal{
			{Description: "spec.persistentVolumeReclaimPolicy: Retain", check: fieldIs([]string{"Retain"}, "spec", "persistentVolumeReclaimPolicy")},
		},
		// The external-provisioner creates the volume with client-go, which names no field
		// manager (cmd/csi-provisioner/csi-provisioner.go sets no user agent), so under its
		// binary's name: its image runs /csi-provisioner (kubernetes-csi/
		// external-provisioner Dockerfile). Its identity values are in the volume's
		// immutable spec, whose writer is not checked.
		Managers: []string{"csi-provisioner"},
	},
}

// crossplaneExternal is where crossplane-runtime's providers that name the external
// resource by its external name keep it (upjet's), and what their status adds.
var crossplaneExternal = []Identity{
	{Name: "externalName", From: "annotation crossplane.io/external-name", Field: annotationField("crossplane.io/external-name"), get: annotation("crossplane.io/external-name")},
	{Name: "arn", From: "status.atProvider.arn", Field: path("status", "atProvider", "arn"), get: field("status", "atProvider", "arn")},
	{Name: "id", From: "status.atProvider.id", Field: path("status", "atProvider", "id"), get: field("status", "atProvider", "id")},
	{Name: "region", From: "spec.forProvider.region", Field: path("spec", "forProvider", "region"), get: field("spec", "forProvider", "region")},
}

// managementWithoutDelete: Crossplane's managementPolicies without Delete or "*" keep the
// external resource when the object goes.
func managementWithoutDelete(o *unstructured.Unstructured, _ *corev1.Namespace, _ string) (string, bool) {
	policies, found, _ := unstructured.NestedStringSlice(o.Object, "spec", "managementPolicies")
	if !found || slices.Contains(policies, "*") || slices.Contains(policies, "Delete") {
		return "", false
	}
	return fmt.Sprintf("spec.managementPolicies: [%s], without Delete", strings.Join(policies, ", ")), true
}

// ackService reads SERVICE out of finalizers.SERVICE.services.k8s.aws/KIND.
func ackService(_ *unstructured.Unstructured, finalizer string) string {
	domain, _, _ := strings.Cut(finalizer, "/")
	svc, ok := strings.CutSuffix(strings.TrimPrefix(domain, "finalizers."), ".services.k8s.aws")
	if !ok {
		return ""
	}
	return svc
}

func ackNamespaceRetain(o *unstructured.Unstructured, ns *corev1.Namespace, finalizer string) (string, bool) {
	svc := ackService(o, finalizer)
	if ns == nil || svc == "" {
		return "", false
	}
	key := svc + ".services.k8s.aws/deletion-policy"
	if v := ns.Annotations[key]; strings.EqualFold(v, "retain") {
		return fmt.Sprintf("namespace %s annotation %s: %s", ns.Name, key, v), true
	}
	return "", false
}

func lbHostname(o *unstructured.Unstructured, _ string) string {
	ingress, _, _ := unstructured.NestedSlice(o.Object, "status", "loadBalancer", "ingress")
	if len(ingress) == 0 {
		return ""
	}
	if m, ok := ingress[0].(map[string]any); ok {
		if h, ok := m["hostname"].(string); ok {
			return h
		}
	}
	return ""
}

func lbStack(o *unstructured.Unstructured, finalizer string) string {
	if group, ok := strings.CutPrefix(finalizer, "group.ingress.k8s.aws/"); ok {
		return group
	}
	if finalizer == "elbv2.k8s.aws/resources" {
		return ""
	}
	return o.GetNamespace() + "/" + o.GetName()
}
