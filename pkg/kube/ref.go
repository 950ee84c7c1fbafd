package kube

import (
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// Ref names one object: its type, namespace and name, and its uid once the object was
// read (empty while it is only named). It is the one reference the packages pass each
// other (a removal's target, an object a command names, an object the index saw); API is
// the form the JSON contract prints.
type Ref struct {
	Resource  Resource
	Namespace string
	Name      string
	UID       types.UID
}

// API is the reference as the JSON contract gives it.
func (r Ref) API() finalizev1alpha1.ObjectReference {
	return r.Resource.Ref(r.Namespace, r.Name, r.UID)
}

// String is kubectl's name of the object: "configmaps/cfg -n team-a".
func (r Ref) String() string { return r.API().String() }
