// Package testing gives the commands a fake cluster: a Factory whose clients are
// client-go fakes that share one set of objects, for unit tests of argument parsing,
// flag validation and printer choice. Anything that depends on the API server's
// behaviour is tested against a real control plane under test/.
package testing

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	metadatafake "k8s.io/client-go/metadata/fake"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
)

// Resource is one type the fake cluster serves.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	ShortNames []string
}

// Resources are the types the fake cluster serves: a few built-in ones and a custom one.
var Resources = []Resource{
	{GVR: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace", ShortNames: []string{"ns"}},
	{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true, ShortNames: []string{"cm"}},
	{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true, ShortNames: []string{"po"}},
	{GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment", Namespaced: true, ShortNames: []string{"deploy"}},
	{GVR: schema.GroupVersionResource{Group: "db.example.com", Version: "v1", Resource: "databases"}, Kind: "Database", Namespaced: true},
}

// Factory is a util.Factory over fake clients.
type Factory struct {
	Fakes struct {
		Kube     *kubefake.Clientset
		Metadata *metadatafake.FakeMetadataClient
		Dynamic  *dynamicfake.FakeDynamicClient
	}
	// Lists records the options of every metadata list.
	Lists *ListRecorder
	// Namespace is what -n would give; Explicit says whether it was given.
	NamespaceName string
	Explicit      bool
	Kubeconfig    clientcmdapi.Config

	clients *client.Clients
	mapper  meta.RESTMapper
}

var _ util.Factory = &Factory{}

// NewFactory returns a fake cluster holding objs. Typed objects of the built-in types
// are stored as they are; any object may be an *unstructured.Unstructured (custom
// resources). Every object is visible to the typed, metadata and dynamic clients alike.
func NewFactory(objs ...runtime.Object) *Factory {
	f := &Factory{NamespaceName: "default"}
	var typed []runtime.Object
	var metas []runtime.Object
	var unstructuredObjs []runtime.Object
	for _, o := range objs {
		u, err := toUnstructured(o)
		if err != nil {
			panic(err)
		}
		if _, ok := o.(*unstructured.Unstructured); !ok {
			typed = append(typed, o)
		}
		unstructuredObjs = append(unstructuredObjs, u)
		m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &m.ObjectMeta); err != nil {
				panic(err)
			}
		}
		metas = append(metas, m)
	}
	metaScheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(metaScheme)
	f.Fakes.Kube = kubefake.NewClientset(typed...)
	f.Fakes.Metadata = metadatafake.NewSimpleMetadataClient(metaScheme, metas...)
	listKinds := map[schema.GroupVersionResource]string{}
	for _, r := range Resources {
		listKinds[r.GVR] = r.Kind + "List"
	}
	f.Fakes.Dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, unstructuredObjs...)

	byGV := map[schema.GroupVersion]*metav1.APIResourceList{}
	var lists []*metav1.APIResourceList
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, r := range Resources {
		gv := r.GVR.GroupVersion()
		l := byGV[gv]
		if l == nil {
			l = &metav1.APIResourceList{GroupVersion: gv.String()}
			byGV[gv] = l
			lists = append(lists, l)
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.GVR.Resource, SingularName: singular(r.Kind), Kind: r.Kind, Namespaced: r.Namespaced,
			ShortNames: r.ShortNames, Verbs: []string{"get", "list", "watch", "patch", "update", "delete"}})
		scope := meta.RESTScopeRoot
		if r.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		mapper.AddSpecific(gv.WithKind(r.Kind), r.GVR, r.GVR.GroupVersion().WithResource(singular(r.Kind)), scope)
	}
	f.Fakes.Kube.Resources = lists
	f.mapper = shortNames{RESTMapper: mapper}
	f.Lists = &ListRecorder{Interface: f.Fakes.Metadata}
	f.clients = &client.Clients{Discovery: f.Fakes.Kube.Discovery(), Metadata: f.Lists, Kube: f.Fakes.Kube, Dynamic: f.Fakes.Dynamic}
	return f
}

func toUnstructured(o runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u, nil
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(o)
	if err != nil || len(gvks) == 0 {
		return nil, fmt.Errorf("unknown type %T: %w", o, err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	return u, nil
}

func singular(kind string) string {
	out := []byte(kind)
	for i, c := range out {
		if c >= 'A' && c <= 'Z' {
			out[i] = c + 'a' - 'A'
		}
	}
	return string(out)
}

// shortNames resolves the short names of Resources ("cm") as kubectl's shortcut
// expander would.
type shortNames struct{ meta.RESTMapper }

func (s shortNames) expand(gvr schema.GroupVersionResource) schema.GroupVersionResource {
	for _, r := range Resources {
		for _, sn := range r.ShortNames {
			if gvr.Group == "" && gvr.Resource == sn {
				gvr.Group, gvr.Resource = r.GVR.Group, r.GVR.Resource
			}
		}
	}
	return gvr
}

func (s shortNames) ResourcesFor(gvr schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return s.RESTMapper.ResourcesFor(s.expand(gvr))
}

func (s shortNames) ResourceFor(gvr schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return s.RESTMapper.ResourceFor(s.expand(gvr))
}

func (s shortNames) KindFor(gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return s.RESTMapper.KindFor(s.expand(gvr))
}

// Namespace implements util.Factory.
func (f *Factory) Namespace() (string, bool, error) { return f.NamespaceName, f.Explicit, nil }

// RESTMapper implements util.Factory.
func (f *Factory) RESTMapper() (meta.RESTMapper, error) { return f.mapper, nil }

// Clients implements util.Factory.
func (f *Factory) Clients() (*client.Clients, error) { return f.clients, nil }

// RawConfig implements util.Factory.
func (f *Factory) RawConfig() (clientcmdapi.Config, error) { return f.Kubeconfig, nil }

// WithNamespace sets the namespace as if given with -n.
func (f *Factory) WithNamespace(ns string) *Factory {
	f.NamespaceName, f.Explicit = ns, true
	return f
}
