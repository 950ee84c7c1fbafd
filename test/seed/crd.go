package seed

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// CRD describes a CustomResourceDefinition to create. Versions lists the served versions,
// the first one stored. The schema accepts anything, as operators' CRDs often do.
type CRD struct {
	Group    string
	Kind     string
	Plural   string
	Singular string
	Short    []string
	Cluster  bool
	Versions []string
}

// Name is the CRD's name, plural.group.
func (c CRD) Name() string { return c.Plural + "." + c.Group }

// GVR is the resource of the storage version.
func (c CRD) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: c.Group, Version: c.Versions[0], Resource: c.Plural}
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func (c CRD) object() *unstructured.Unstructured {
	scope := "Namespaced"
	if c.Cluster {
		scope = "Cluster"
	}
	var versions []any
	for i, v := range c.Versions {
		versions = append(versions, map[string]any{
			"name":    v,
			"served":  true,
			"storage": i == 0,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type":                                 "object",
				"x-kubernetes-preserve-unknown-fields": true,
			}},
			"subresources": map[string]any{"status": map[string]any{}},
		})
	}
	names := map[string]any{"kind": c.Kind, "listKind": c.Kind + "List", "plural": c.Plural, "singular": c.Singular}
	if len(c.Short) > 0 {
		var short []any
		for _, s := range c.Short {
			short = append(short, s)
		}
		names["shortNames"] = short
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": c.Name()},
		"spec": map[string]any{
			"group":    c.Group,
			"scope":    scope,
			"names":    names,
			"versions": versions,
		},
	}}
}

// EnsureCRD creates crd if it does not exist and waits until its resource is served.
func (s *Seeder) EnsureCRD(ctx context.Context, crd CRD) error {
	_, err := s.Dynamic.Resource(crdGVR).Create(ctx, crd.object(), metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s: %w", crd.Name(), err)
	}
	// Established is not enough: discovery and the REST endpoint lag it slightly.
	served := func(ctx context.Context) bool {
		if _, err := s.Dynamic.Resource(crd.GVR()).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return false
		}
		resources, err := s.Kube.Discovery().ServerResourcesForGroupVersion(crd.GVR().GroupVersion().String())
		if err != nil {
			return false
		}
		for i := range resources.APIResources {
			if resources.APIResources[i].Name == crd.Plural {
				return true
			}
		}
		return false
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return served(ctx), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be served: %w", crd.Name(), err)
	}
	return nil
}
