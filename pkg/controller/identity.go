// Package controller finds who is expected to remove a finalizer and whether it runs:
// its identity (the catalogue, the field manager that wrote the finalizer, the names its
// workloads and Events go by) and its workloads anywhere in the cluster (readiness,
// ServiceAccount, the namespaces their pod templates watch). The doctor (pkg/doctor) and
// preflight (pkg/preflight) ask it alike.
package controller

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
)

// Identity is who is expected to remove a finalizer, and the names it goes by.
type Identity struct {
	// Manager is the field manager whose writes are measured: the owner found in
	// managedFields, else the controller that wrote the finalizer. Empty when no
	// controller wrote it. Nothing else counts: another manager writing the object (the
	// namespace controller rewriting a namespace's conditions) says nothing about the
	// finalizer's owner.
	Manager string
	// Who names the controller in messages: the manager, else the owner.
	Who string
	// WorkloadNames are the names (or app.kubernetes.io/name labels) its workloads may have.
	WorkloadNames []string
	// Entry is the finalizer's catalogue entry, if any.
	Entry *owner.Entry
	// Writer is the client that wrote the finalizer when no controller did (kubectl,
	// helm, a GitOps applier): it added the finalizer, but is not expected to remove it.
	Writer string
}

// Identify names the controller expected to remove fin. When the catalogue knows the
// finalizer but names no workload for it, the field manager that wrote it is the
// controller (unless it is a generic client, or one the catalogue names as the owner:
// Flux's kustomize-controller applies manifests for people, and writes
// finalizers.fluxcd.io for itself).
func Identify(catalog *owner.Catalog, o *kube.Object, fin finalizev1alpha1.Finalizer) Identity {
	var id Identity
	if e, ok := catalog.Lookup(fin.Name); ok {
		id.Entry = e
	}
	writers := owner.Writers(o.Meta.ManagedFields, fin.Field, fin.Name)
	if fin.OwnerSource == finalizev1alpha1.OwnerSourceManagedFields {
		id.Manager = fin.Owner
	}
	// When the catalogue names the owner (Kubernetes itself, the owner's field managers or
	// workloads, or an owner that is itself a program's name), a writer it does not name
	// is the remover only if it reconciles the object: it writes the object's status
	// (rook writes its CephClusters' as "rook", not as rook-ceph-operator). Otherwise it
	// only added the finalizer (Writer): velero restoring a Service with the cloud service
	// controller's finalizer, Argo CD's ApplicationSet controller creating an Application
	// with argocd-application-controller's. Kubernetes' own finalizers are removed by
	// Kubernetes whoever writes the status. An entry that describes its owner without
	// naming it ("the Crossplane provider of this managed resource") takes the writer as
	// the program it describes.
	// Where the catalogue names no owner, a writer is the remover only when its writes
	// are a controller's (owner.Reconciles): a writer of the object's content that does not
	// write its status created or applied it.
	named := id.Entry != nil && (id.Entry.ControlPlane || len(id.Entry.Managers) > 0 || len(id.Entry.WorkloadNames()) > 0)
	for _, w := range writers {
		if id.Manager != "" || owner.IsGenericManager(w) {
			continue
		}
		switch {
		case !named:
			if owner.Reconciles(o.Meta.ManagedFields, w) {
				id.Manager = w
			}
		case catalogueNames(id.Entry, w) || (!id.Entry.ControlPlane && writesStatus(o.Meta.ManagedFields, w)):
			id.Manager = w
		}
	}
	for _, w := range writers {
		if id.Manager == "" && id.Entry != nil && slices.Contains(id.Entry.Managers, w) {
			id.Manager = w
		}
	}
	if id.Manager == "" && len(writers) > 0 {
		// The writer said to have added it: a program before a generic client.
		id.Writer = writers[0]
		for _, w := range writers {
			if !owner.IsGenericManager(w) {
				id.Writer = w
				break
			}
		}
	}
	id.Who = id.Manager
	if id.Who == "" {
		id.Who = fin.Owner
	}
	// A name many programs write as ("manager", "controller") finds namesakes, not the
	// controller's workloads: no workload is looked for by it.
	if id.Manager != "" && (!SharedName(id.Manager) || (id.Entry != nil && catalogueNames(id.Entry, id.Manager))) {
		id.WorkloadNames = append(id.WorkloadNames, id.Manager)
	}
	if id.Entry != nil && fin.OwnerSource == finalizev1alpha1.OwnerSourceCatalog {
		for _, n := range id.Entry.WorkloadNames() {
			if !slices.Contains(id.WorkloadNames, n) {
				id.WorkloadNames = append(id.WorkloadNames, n)
			}
		}
	}
	return id
}

// writesStatus says whether field manager m manages part of the object's status
// subresource: it reconciles the object.
func writesStatus(managed []metav1.ManagedFieldsEntry, m string) bool {
	for _, e := range managed {
		if e.Manager == m && e.Subresource == "status" {
			return true
		}
	}
	return false
}

// sharedNames are field manager names many programs write as: kubebuilder's and
// operator-sdk's scaffolds build a binary called manager, and the API server names the
// field manager of a client that names none after its binary.
var sharedNames = sets.New("manager", "controller-manager", "controller", "operator", "main", "app", "helm-operator", "ansible-operator")

// SharedName reports whether many programs may write as field manager m: a name of
// sharedNames, or a client that applies manifests for people (owner.IsGenericManager).
// Such a name identifies no program: no workload is looked for by it, and its writes
// count only where the same name is far more likely the same program.
func SharedName(m string) bool {
	return sharedNames.Has(m) || owner.IsGenericManager(m)
}

// catalogueNames says whether the catalogue entry e names field manager w as its owner:
// one of its Managers, a workload name of it (or one followed by a dash), or for a
// finalizer of the control plane's a Kubernetes controller manager.
func catalogueNames(e *owner.Entry, w string) bool {
	if slices.Contains(e.Managers, w) {
		return true
	}
	names := e.WorkloadNames()
	if e.ControlPlane {
		names = append(append(names, "kube-controller-manager", "cloud-controller-manager"), systemReporters[e.Finalizer]...)
	}
	for _, n := range names {
		if w == n || strings.HasPrefix(w, n+"-") {
			return true
		}
	}
	return false
}

// Reports says whether an Event's reporter is this controller: its field manager, a
// workload name of it, the reporter Kubernetes' own controller of a system finalizer
// records Events as, or (when nothing wrote the finalizer as a controller) a manager the
// catalogue names; equal, or one of them the other followed by a dash
// (cert-manager-challenges is cert-manager).
func (id *Identity) Reports(reporter string) bool {
	if reporter == "" {
		return false
	}
	names := append([]string{id.Manager}, id.WorkloadNames...)
	if id.Manager == "" && id.Entry != nil {
		names = append(names, id.Entry.Managers...)
	}
	if id.Entry != nil {
		names = append(names, systemReporters[id.Entry.Finalizer]...)
	}
	for _, n := range names {
		if n == "" {
			continue
		}
		if strings.EqualFold(reporter, n) || strings.HasPrefix(reporter, n+"-") || strings.HasPrefix(n, reporter+"-") {
			return true
		}
	}
	return false
}

// systemReporters are the reporters of Kubernetes' own controllers that remove system
// finalizers, by finalizer: the names their Events go by.
var systemReporters = map[string][]string{
	"service.kubernetes.io/load-balancer-cleanup": {"service-controller", "service-lb-controller"},
	"batch.kubernetes.io/job-tracking":            {"job-controller"},
	"resource.kubernetes.io/delete-protection":    {"resource-claim-controller", "resourceclaim-controller"},
	"networking.k8s.io/service-cidr-finalizer":    {"service-cidrs-controller", "servicecidrs-controller"},
	"kubernetes.io/pv-controller":                 {"persistentvolume-controller"},
	"kubernetes":                                  {"namespace-controller"},
	metav1.FinalizerOrphanDependents:              {"garbage-collector-controller"},
	metav1.FinalizerDeleteDependents:              {"garbage-collector-controller"},
	"kubernetes.io/pvc-protection":                {"pvc-protection-controller"},
	"kubernetes.io/pv-protection":                 {"pv-protection-controller"},
}

// kubernetesReporters are the reporters of Kubernetes' own components: the kubelet, the
// scheduler, kube-proxy, kube-apiserver's repair loops and the controllers of
// kube-controller-manager and cloud-controller-manager. Their warnings about an object are never an operator's: a
// reporter is taken for another party than a finalizer's owner only when it is one of
// these, or the owner of another finalizer the object carries.
var kubernetesReporters = sets.New(
	"kubelet", "default-scheduler", "kube-proxy", "kube-apiserver",
	"persistentvolume-controller", "persistentvolume-expander", "volume_expand", "attachdetach-controller",
	"pvc-protection-controller", "pv-protection-controller", "ephemeral-volume-controller",
	"deployment-controller", "replicaset-controller", "replication-controller", "statefulset-controller",
	"daemonset-controller", "job-controller", "cronjob-controller", "ttl-after-finished-controller",
	"endpoint-controller", "endpointslice-controller", "endpoint-slice-controller", "endpointslice-mirroring-controller",
	"namespace-controller", "node-controller", "node-lifecycle-controller", "nodeipam-controller", "taint-eviction-controller",
	"garbage-collector-controller", "horizontal-pod-autoscaler", "disruption-controller", "resourcequota-controller",
	"serviceaccount-controller", "service-controller", "route-controller", "cloud-node-controller",
	"cloud-node-lifecycle-controller", "certificate-controller", "clusterrole-aggregation-controller",
	"bootstrap-signer", "token-cleaner", "resource-claim-controller", "service-cidrs-controller",
	// kube-apiserver's repair loops of Service ClusterIPs and NodePorts (v1.36.3,
	// pkg/registry/core/service/{ipallocator,portallocator}/controller): they warn about
	// any Service whose address they find unallocated, a race with its creation.
	"ipallocator-repair-controller", "portallocator-repair-controller",
)

// KubernetesComponent says whether an Event's reporter is one of Kubernetes' own
// components (kubernetesReporters): never an operator.
func KubernetesComponent(reporter string) bool {
	return kubernetesReporters.Has(strings.ToLower(reporter))
}
