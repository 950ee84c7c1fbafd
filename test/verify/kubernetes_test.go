package verify

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// askKubernetes asks p about an object named name in namespace ns.
func askKubernetes(t *testing.T, p provider.Provider, ns, name string) provider.Answer {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetNamespace(ns)
	obj.SetName(name)
	call, err := p.Prepare(&provider.Request{Rule: "backing", Finalizer: finalizer, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	return call.Do(t.Context())
}

// TestKubernetesProviderAnswersAreAboutWhatWasAsked asks the real API server, through the
// kubernetes provider, about objects of types it does not serve: a group that is not
// installed (a RESTMapper that still knows it, as one whose discovery is older than the
// CRD's deletion does), and a CRD deleted after the provider resolved it, in this
// cluster and through a second kubeconfig context. The API server answers 404 to each;
// none of those 404s is about the object asked for, so none is Gone. A NotFound that
// names the object still is.
func TestKubernetesProviderAnswersAreAboutWhatWasAsked(t *testing.T) {
	ns := cp.Namespace(t)
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	gone, unknown := finalizev1alpha1.VerdictGone, finalizev1alpha1.VerdictUnknown
	expect := func(what string, a provider.Answer, want finalizev1alpha1.Verdict, says string) {
		t.Helper()
		if a.Verdict != want || !strings.Contains(a.Evidence, says) {
			t.Errorf("%s: %s: %s; want %s saying %q", what, a.Verdict, a.Evidence, want, says)
		}
	}

	// A group the cluster does not serve, which the mapper still maps.
	gizmos := schema.GroupVersionKind{Group: "notinstalled.example.com", Version: "v1", Kind: "Gizmo"}
	stale := meta.NewDefaultRESTMapper(nil)
	stale.Add(gizmos, meta.RESTScopeNamespace)
	stale.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	opts := provider.Options{Dynamic: dyn, Mapper: stale}
	newProvider := func(spec finalizev1alpha1.KubernetesProvider, opts provider.Options) provider.Provider {
		t.Helper()
		p, err := provider.New(&finalizev1alpha1.Verify{Kubernetes: &spec}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	expect("a group that is not installed", askKubernetes(t, newProvider(finalizev1alpha1.KubernetesProvider{
		Resource: "gizmos.notinstalled.example.com", Namespace: "{.metadata.namespace}", Name: "{.metadata.name}"}, opts), ns, "db-1"),
		unknown, "the 404 is not a NotFound of gizmos.notinstalled.example.com db-1")
	expect("a secret that does not exist", askKubernetes(t, newProvider(finalizev1alpha1.KubernetesProvider{
		Resource: "secrets", Namespace: "{.metadata.namespace}", Name: "{.metadata.name}"}, opts), ns, "db-1"),
		gone, "secrets/db-1 -n "+ns+" not found in this cluster")

	// A CRD deleted after the provider resolved its type, with the deferred discovery
	// RESTMapper the reconcile command gives the provider, and through a kubeconfig
	// context (the provider's own discovery).
	s, err := seed.New(cp.Config, "kubernetes-provider")
	if err != nil {
		t.Fatal(err)
	}
	crd := seed.CRD{Group: "backing.kubectl-finalize.test", Kind: "Backing", Plural: "backings", Singular: "backing", Versions: []string{"v1"}}
	if err := s.EnsureCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	t.Cleanup(func() { _ = dyn.Resource(crds).Delete(context.Background(), crd.Name(), metav1.DeleteOptions{}) })
	deleteCRD := func() {
		if err := dyn.Resource(crds).Delete(t.Context(), crd.Name(), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Deleted, and no longer served.
		if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, gerr := dyn.Resource(crds).Get(ctx, crd.Name(), metav1.GetOptions{})
			_, lerr := dyn.Resource(crd.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
			return apierrors.IsNotFound(gerr) && apierrors.IsNotFound(lerr), nil
		}); err != nil {
			t.Fatalf("CRD %s was not deleted: %v", crd.Name(), err)
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	deferred := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfigContexts(kubeconfig, "admin", map[string]*rest.Config{"admin": cp.Config, "workload": cp.Config}); err != nil {
		t.Fatal(err)
	}
	spec := finalizev1alpha1.KubernetesProvider{Resource: "backing", Namespace: "{.metadata.namespace}", Name: "{.metadata.name}"}
	here := newProvider(spec, provider.Options{Dynamic: dyn, Mapper: deferred})
	spec.Kubeconfig, spec.Context = kubeconfig, "workload"
	there := newProvider(spec, provider.Options{})
	for _, p := range []provider.Provider{here, there} {
		expect(p.String()+", served", askKubernetes(t, p, ns, "db-1"), gone, "backings.backing.kubectl-finalize.test/db-1 -n "+ns+" not found in")
	}
	deleteCRD()
	for _, p := range []provider.Provider{here, there} {
		expect(p.String()+", deleted", askKubernetes(t, p, ns, "db-2"), unknown, "the 404 is not a NotFound of backings.backing.kubectl-finalize.test db-2")
	}
}

// TestAKubernetesResourceTwoGroupsServeIsNotGuessed: a kubernetes provider names its type
// "mirrors", as the rule's author knew it, and two groups serve a type of that name (a
// migration that mirrors objects between an old group and a new one, as OpenShift's
// machines are mirrored between machine.openshift.io and cluster.x-k8s.io). A client's
// RESTMapper picks one of them by the groups' priority; an object that exists only in the
// other group is then "not found", which read as Gone. The type is not guessed: both
// questions are Unknown, naming both types, in this cluster and through a context.
func TestAKubernetesResourceTwoGroupsServeIsNotGuessed(t *testing.T) {
	ns := cp.Namespace(t)
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	s, err := seed.New(cp.Config, "kubernetes-provider")
	if err != nil {
		t.Fatal(err)
	}
	var gvrs []schema.GroupVersionResource
	for _, group := range []string{"a-mirror.kubectl-finalize.test", "b-mirror.kubectl-finalize.test"} {
		crd := seed.CRD{Group: group, Kind: "Mirror", Plural: "mirrors", Singular: "mirror", Versions: []string{"v1"}}
		if err := s.EnsureCRD(t.Context(), crd); err != nil {
			t.Fatal(err)
		}
		gvrs = append(gvrs, crd.GVR())
	}
	for i, name := range []string{"only-in-a", "only-in-b"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(gvrs[i].GroupVersion().String())
		u.SetKind("Mirror")
		u.SetName(name)
		if _, err := dyn.Resource(gvrs[i]).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	cached := memory.NewMemCacheClient(dc)
	// The RESTMapper kubectl-finalize's commands give the provider (pkg/cmd/util).
	mapper := kube.NewRESTMapper(cached)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfigContexts(kubeconfig, "admin", map[string]*rest.Config{"admin": cp.Config, "workload": cp.Config}); err != nil {
		t.Fatal(err)
	}
	spec := finalizev1alpha1.KubernetesProvider{Resource: "mirrors", Namespace: "{.metadata.namespace}", Name: "{.metadata.name}"}
	var providers []provider.Provider
	for _, opts := range []provider.Options{{Dynamic: dyn, Mapper: mapper}, {}} {
		if opts.Mapper == nil {
			spec.Kubeconfig, spec.Context = kubeconfig, "workload"
		}
		p, err := provider.New(&finalizev1alpha1.Verify{Kubernetes: &spec}, opts)
		if err != nil {
			t.Fatal(err)
		}
		providers = append(providers, p)
	}
	for _, p := range providers {
		for _, name := range []string{"only-in-a", "only-in-b"} {
			a := askKubernetes(t, p, ns, name)
			if a.Verdict != finalizev1alpha1.VerdictUnknown || !strings.Contains(a.Evidence, "mirrors.a-mirror.kubectl-finalize.test") ||
				!strings.Contains(a.Evidence, "mirrors.b-mirror.kubectl-finalize.test") {
				t.Errorf("%s, %s: %s: %s; want Unknown naming both types", p, name, a.Verdict, a.Evidence)
			}
		}
	}
}
