package v1alpha1

import "testing"

func TestObjectNames(t *testing.T) {
	tests := []struct {
		ref                  ObjectReference
		resourceName, String string
	}{
		{ObjectReference{APIVersion: "v1", Resource: "configmaps", Namespace: "team-a", Name: "cfg"}, "configmaps/cfg", "configmaps/cfg -n team-a"},
		{ObjectReference{APIVersion: "apps/v1", Resource: "deployments", Namespace: "a", Name: "web"}, "deployments.apps/web", "deployments.apps/web -n a"},
		{ObjectReference{APIVersion: "v1", Resource: "namespaces", Name: "team-a"}, "namespaces/team-a", "namespaces/team-a"},
		{ObjectReference{APIVersion: "db.example.com/v1", Resource: "databases", Namespace: "p", Name: "orders"}, "databases.db.example.com/orders", "databases.db.example.com/orders -n p"},
	}
	for _, tt := range tests {
		if got := tt.ref.ResourceName(); got != tt.resourceName {
			t.Errorf("ResourceName %q, want %q", got, tt.resourceName)
		}
		if got := tt.ref.String(); got != tt.String {
			t.Errorf("String %q, want %q", got, tt.String)
		}
	}
}
