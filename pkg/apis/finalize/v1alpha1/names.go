package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupResource is the type of the object: "configmaps", "deployments.apps".
func (r ObjectReference) GroupResource() schema.GroupResource {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return schema.GroupResource{Resource: r.Resource}
	}
	return gv.WithResource(r.Resource).GroupResource()
}

// ResourceName is "resource.group/name", the way kubectl names an object of a type:
// "configmaps/cfg", "deployments.apps/web".
func (r ObjectReference) ResourceName() string {
	return r.GroupResource().String() + "/" + r.Name
}

// KindName is "kind.group/name", the way `kubectl get -o name` prints an object:
// "configmap/cfg", "deployment.apps/web". It pipes into any kubectl command.
func (r ObjectReference) KindName() string {
	gk := schema.FromAPIVersionAndKind(r.APIVersion, r.Kind).GroupKind()
	gk.Kind = strings.ToLower(gk.Kind)
	return gk.String() + "/" + r.Name
}

// String names the object the way it is typed to kubectl: "configmaps/cfg -n team-a",
// "namespaces/team-a". Every message of kubectl-finalize names objects this way, so that
// a name can be pasted into a kubectl command.
func (r ObjectReference) String() string {
	s := r.ResourceName()
	if r.Namespace != "" {
		s += " -n " + r.Namespace
	}
	return s
}
