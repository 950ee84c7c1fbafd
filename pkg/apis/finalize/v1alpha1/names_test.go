package v1alpha1

import "testing"

func TestObjectNames(t *testing.T) {
	tests := []struct {
		ref                            ObjectReference
		resourceName, String, kindName string
	}{
		{ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team-a", Name: "cfg"}, "configmaps/cfg", "configmaps/cfg -n team-a", "configmap/cfg"},
		{ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments", Namespace: "a", Name: "web"}, "deployments.apps/web", "deployments.apps/web -n a", "deployment.apps/web"},
		{ObjectReference{APIVersion: "v1", Kind: "Namespace", Resource: "namespaces", Name: "team-a"}, "namespaces/team-a", "namespaces/team-a", "namespace/team-a"},
		{ObjectReference{APIVersion: "db.example.com/v1", Kind: "Database", Resource: "databases", Namespace: "p", Name: "orders"}, "databases.db.example.com/orders", "databases.db.example.com/orders -n p", "database.db.example.com/orders"},
	}
	for _, tt := range tests {
		if got := tt.ref.KindName(); got != tt.kindName {
			t.Errorf("KindName %q, want %q", got, tt.kindName)
		}
		if got := tt.ref.ResourceName(); got != tt.resourceName {
			t.Errorf("ResourceName %q, want %q", got, tt.resourceName)
		}
		if got := tt.ref.String(); got != tt.String {
			t.Errorf("String %q, want %q", got, tt.String)
		}
	}
}
