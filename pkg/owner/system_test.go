package owner

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsSystem(t *testing.T) {
	tests := []struct {
		finalizer string
		system    bool
		why       string
	}{
		// No domain: Kubernetes' own standard names, and any other name without one.
		{"kubernetes", true, "it names no domain"},
		{"orphan", true, "it names no domain"},
		{"foregroundDeletion", true, "it names no domain"},
		{"cleanup", true, "it names no domain"},
		{"uninstall-helm-release", true, "it names no domain"},
		{"foregroundDeleteVirtualMachine", true, "it names no domain"},
		{"", true, "it names no domain"},
		{"external-attacher/csi.example.com", true, `its prefix "external-attacher" names no domain`},
		{"cleanup/x.example.com", true, `its prefix "cleanup" names no domain`},
		{"/x", true, `its prefix "" names no domain`},
		// A domain Kubernetes reserves, before a "/" or as the whole name.
		{"kubernetes.io/pvc-protection", true, "its domain is kubernetes.io"},
		{"kubernetes.io/vac-protection", true, "its domain is kubernetes.io"},
		{"batch.kubernetes.io/job-tracking", true, "its domain batch.kubernetes.io is under kubernetes.io"},
		{"example.kubernetes.io/cleanup", true, "its domain example.kubernetes.io is under kubernetes.io"},
		{"external-provisioner.volume.kubernetes.io/finalizer", true, "under kubernetes.io"},
		{"snapshot.storage.kubernetes.io/pvc-as-source-protection", true, "under kubernetes.io"},
		{"networking.k8s.io/service-cidr-finalizer", true, "its domain networking.k8s.io is under k8s.io"},
		{"k8s.io/x", true, "its domain is k8s.io"},
		{"customresourcecleanup.apiextensions.k8s.io", true, "under k8s.io"},
		{"gateway-exists-finalizer.gateway.networking.k8s.io", true, "under k8s.io"},
		{"cleanup.example.k8s.io", true, "under k8s.io"},
		// Upper case: the API server takes it in a name without a "/"; the safe answer.
		{"Cleanup.Example.K8s.IO", true, "under k8s.io"},
		{"Kubernetes.IO/x", true, "its domain is Kubernetes.IO"},
		{"example.kubernetes.io./x", true, "under kubernetes.io"},
		// Other domains, however alike.
		{"db.example.com/finalizer", false, ""},
		{"finalizer.managedresource.crossplane.io", false, ""},
		{"longhorn.io", false, ""},
		{"cluster.x-k8s.io", false, ""},
		{"kueue.x-k8s.io/resource-in-use", false, ""},
		{"cluster.x-k8s.io/machineset", false, ""},
		{"ingress.k8s.aws/resources", false, ""},
		{"notkubernetes.io/x", false, ""},
		{"kubernetes.io.example.com/x", false, ""},
		{"k8s.io.evil/x", false, ""},
		{"x.k8s.iox/y", false, ""},
	}
	for _, tt := range tests {
		if got := IsSystem(tt.finalizer); got != tt.system {
			t.Errorf("IsSystem(%q) = %v, want %v", tt.finalizer, got, tt.system)
		}
		if why := SystemReason(tt.finalizer); (why == "") == tt.system || !strings.Contains(why, tt.why) {
			t.Errorf("SystemReason(%q) = %q, want it to say %q", tt.finalizer, why, tt.why)
		}
	}
}

// TestEveryControlPlaneEntryIsSystemByName: the catalogue's control-plane entries name
// Kubernetes' own finalizers, which are system by their names; none needs the catalogue
// to be protected. And no entry can make a reserved name non-system: the resolver asks
// IsSystem whatever the entry says.
func TestEveryControlPlaneEntryIsSystemByName(t *testing.T) {
	r := NewResolver(Builtin(), nil)
	for _, e := range builtin {
		if e.ControlPlane && !IsSystem(e.Finalizer) {
			t.Errorf("%s: the control plane removes it, and its name is not system", e.Finalizer)
		}
		name := strings.ReplaceAll(e.Finalizer, "*", "x")
		if got := r.Resolve(&metav1.ObjectMeta{}, "metadata.finalizers", name).System; got != IsSystem(name) {
			t.Errorf("%s: the resolver says system %v, IsSystem %v", name, got, IsSystem(name))
		}
	}
}
