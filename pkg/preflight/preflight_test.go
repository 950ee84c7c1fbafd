package preflight

import (
	"bytes"
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestDecodeReleaseAsHelmWritesIt(t *testing.T) {
	manifest := "---\n# Source: app/templates/sa.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n---\n# Source: app/templates/deploy.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: other\n"
	data, err := encodeRelease("app", "ops", 3, "deployed", manifest)
	if err != nil {
		t.Fatal(err)
	}
	// What the Secret holds is base64 of gzip: its first bytes are gzip's magic.
	raw, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil || !bytes.HasPrefix(raw, gzipMagic) {
		t.Fatalf("encoding is not base64 of gzip: %v %x", err, raw[:4])
	}
	r, err := decodeRelease(data)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "app" || r.Version != 3 || r.Info.Status != "deployed" || r.Manifest != manifest {
		t.Fatalf("decoded %+v", r)
	}
	// Not gzipped (Helm reads both): plain JSON in base64.
	r, err = decodeRelease([]byte(base64.StdEncoding.EncodeToString([]byte(`{"name":"x","version":1,"manifest":"m"}`))))
	if err != nil || r.Manifest != "m" {
		t.Fatalf("plain JSON: %+v, %v", r, err)
	}
	if _, err := decodeRelease([]byte("not base64!")); err == nil {
		t.Fatal("garbage decoded")
	}
}

func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	return m
}

func TestManifestObjects(t *testing.T) {
	manifest := `---
# Source: app/templates/sa.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: app
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: other
--- # a comment after the separator
# only a comment
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: app-role
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ServiceAccount
  metadata:
    name: listed
---
apiVersion: example.com/v1
kind: NotServed
metadata:
  name: x
`
	got, warnings, err := manifestObjects(testMapper(), manifest, "ops")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"serviceaccounts/app -n ops", "deployments.apps/app -n other", "clusterroles.rbac.authorization.k8s.io/app-role", "serviceaccounts/listed -n ops"}
	if len(got) != len(want) {
		t.Fatalf("got %d objects %+v, want %v", len(got), got, want)
	}
	for i, w := range want {
		if s := got[i].String(); s != w {
			t.Errorf("object %d is %s, want %s", i, s, w)
		}
	}
	if len(warnings) != 1 || !bytes.Contains([]byte(warnings[0]), []byte("NotServed x")) {
		t.Errorf("warnings %q: want one about the kind not served", warnings)
	}
	if _, _, err := manifestObjects(testMapper(), "kind: [unclosed", "ops"); err == nil {
		t.Error("bad YAML read")
	}
}

func ref(gr schema.GroupResource, kind, ns, name string, uid types.UID) finalizev1alpha1.ObjectReference {
	return kube.Resource{GroupVersionResource: gr.WithVersion("v1"), Kind: kind, Namespaced: ns != ""}.Ref(ns, name, uid)
}

func TestDeletionSet(t *testing.T) {
	deploy := schema.GroupResource{Group: "apps", Resource: "deployments"}
	rs := schema.GroupResource{Group: "apps", Resource: "replicasets"}
	pods := schema.GroupResource{Resource: "pods"}
	s := newDeletionSet()
	s.addTarget(ref(deploy, "Deployment", "a", "op", "d1"))
	s.addTarget(ref(schema.GroupResource{Resource: "namespaces"}, "Namespace", "", "gone", "n1"))
	s.addTarget(ref(crdResource, "CustomResourceDefinition", "", "widgets.example.com", "c1"))
	deps := []dependent{
		// A pod of a ReplicaSet of the deployment: deleted through the chain, whatever
		// the order it is listed in.
		{ref: ref(pods, "Pod", "a", "op-1-x", "p1"), owners: []types.UID{"r1"}},
		{ref: ref(rs, "ReplicaSet", "a", "op-1", "r1"), owners: []types.UID{"d1"}},
		// Two owners, one of them staying: the garbage collector keeps it.
		{ref: ref(pods, "Pod", "a", "shared", "p2"), owners: []types.UID{"d1", "other"}},
	}
	s.collectGarbage(deps)
	for _, c := range []struct {
		ref  finalizev1alpha1.ObjectReference
		want bool
	}{
		{ref(pods, "Pod", "a", "op-1-x", "p1"), true},
		{ref(rs, "ReplicaSet", "a", "op-1", "r1"), true},
		{ref(pods, "Pod", "a", "shared", "p2"), false},
		{ref(schema.GroupResource{Resource: "configmaps"}, "ConfigMap", "gone", "cm", "x"), true},
		{ref(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "Widget", "b", "w", "y"), true},
		{ref(schema.GroupResource{Resource: "configmaps"}, "ConfigMap", "b", "cm", "z"), false},
		{ref(schema.GroupResource{Resource: "namespaces"}, "Namespace", "", "gone", ""), true},
		// By name: a workload named by the doctor without its uid.
		{ref(deploy, "Deployment", "a", "op", ""), true},
		{ref(deploy, "Deployment", "b", "op", ""), false},
	} {
		if got := s.has(c.ref); got != c.want {
			t.Errorf("has(%s) = %v, want %v", c.ref, got, c.want)
		}
	}
	if s.garbage != 2 {
		t.Errorf("garbage %d, want 2", s.garbage)
	}
}

func TestDeleteCommands(t *testing.T) {
	w := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	got := deleteCommands([]finalizev1alpha1.ObjectReference{
		ref(w, "Widget", "a", "x", "1"), ref(w, "Widget", "b", "y", "2"), ref(w, "Widget", "a", "z", "3"),
	})
	want := []string{"kubectl delete widgets.example.com -n a x z", "kubectl delete widgets.example.com -n b y"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestPrintGolden(t *testing.T) {
	w := schema.GroupResource{Group: "db.example.com", Resource: "databases"}
	var objs []finalizev1alpha1.ObjectReference
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		objs = append(objs, ref(w, "Database", "team-a", n, types.UID("u-"+n)))
	}
	rep := &finalizev1alpha1.PreflightReport{
		HelmRelease: "ops/db-operator", HelmRevision: 4, Deleted: 12,
		Hazards: []finalizev1alpha1.Hazard{
			{
				Reason: finalizev1alpha1.HazardControllerDeleted, Cause: ref(schema.GroupResource{Group: "apps", Resource: "deployments"}, "Deployment", "ops", "db-operator", "d"),
				Message: "db-operator removes db.example.com/finalizer and runs only as Deployment ops/db-operator, which the deletion removes: 10 objects that stay would be stuck the day they are deleted",
				Objects: objs,
				SafeOrder: []string{
					"while db-operator runs, delete the objects that carry its finalizers; kubectl waits until they are gone: kubectl delete databases.db.example.com -n team-a a b c d e f g h i j",
					"then uninstall the release: helm uninstall db-operator -n ops",
				},
			},
			{
				Reason: finalizev1alpha1.HazardAPIServiceServiceDeleted, Cause: apiServicesResource.Ref("", "v1.db.example.com", "a"),
				Message: "APIService v1.db.example.com stays, but its service ops/db-api is deleted: it becomes unavailable",
				Objects: []finalizev1alpha1.ObjectReference{}, SafeOrder: []string{"delete the APIService first: kubectl delete apiservices.apiregistration.k8s.io/v1.db.example.com"},
			},
		},
	}
	var b bytes.Buffer
	if err := Print(&b, rep); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "hazards.golden")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", golden, b.String())
	}
	// A safe deletion prints nothing.
	b.Reset()
	if err := Print(&b, &finalizev1alpha1.PreflightReport{}); err != nil || b.Len() != 0 {
		t.Errorf("a report without hazards printed %q, %v", b.String(), err)
	}
	b.Reset()
	if err := Names(&b, rep); err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Count(b.Bytes(), []byte("\n")); lines != 10 || !bytes.HasPrefix(b.Bytes(), []byte("database.db.example.com/a\n")) {
		t.Errorf("names:\n%s", b.String())
	}
}
