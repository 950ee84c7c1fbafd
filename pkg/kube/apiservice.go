package kube

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// APIService is what an APIService says of itself: the group version it registers, the
// service behind it, and whether the aggregator's availability controller finds it
// available (its Available condition, which that controller alone writes).
type APIService struct {
	Name           string
	Group, Version string
	// Service is nil for a local APIService (served by kube-apiserver itself).
	Service *types.NamespacedName
	// Available is false only when the condition says False; Reported says whether the
	// condition exists at all, Status what it says ("True", "False", "Unknown") and Since
	// when it last changed.
	Available, Reported bool
	Status              string
	Since               time.Time
	Reason, Message     string
}

// ParseAPIService reads an apiregistration.k8s.io/v1 APIService.
func ParseAPIService(u *unstructured.Unstructured) APIService {
	a := APIService{Name: u.GetName(), Available: true}
	a.Group, _, _ = unstructured.NestedString(u.Object, "spec", "group")
	a.Version, _, _ = unstructured.NestedString(u.Object, "spec", "version")
	if ns, ok, _ := unstructured.NestedString(u.Object, "spec", "service", "namespace"); ok {
		name, _, _ := unstructured.NestedString(u.Object, "spec", "service", "name")
		a.Service = &types.NamespacedName{Namespace: ns, Name: name}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Available" {
			continue
		}
		a.Reported = true
		a.Status, _ = m["status"].(string)
		a.Available = a.Status != "False"
		a.Reason, _ = m["reason"].(string)
		a.Message, _ = m["message"].(string)
		if ts, ok := m["lastTransitionTime"].(string); ok {
			a.Since, _ = time.Parse(time.RFC3339, ts)
		}
	}
	return a
}

// GroupVersion is "group/version", or "version" for the core group.
func (a APIService) GroupVersion() string {
	if a.Group == "" {
		return a.Version
	}
	return a.Group + "/" + a.Version
}

// State says how the availability controller finds it, for a sentence: "is unavailable
// (ServiceNotFound: service/x in "ns" is not present)".
func (a APIService) State() string {
	switch {
	case a.Available:
		return "is available"
	case a.Reason != "" || a.Message != "":
		return "is unavailable (" + a.Reason + ": " + a.Message + ")"
	}
	return "is unavailable"
}
