package controller

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// The field manager that wrote a finalizer is its controller, and the name its
// workloads are looked for by; a generic client that wrote it is only its writer.
func TestIdentifyTakesTheWriterOfTheFinalizerUnlessGeneric(t *testing.T) {
	widgets := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}
	written := func(manager string) *kube.Object {
		fields := metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{"v:\"example.com/cleanup\"":{}}}}`)
		o := kube.NewObject(widgets, &metav1.ObjectMeta{Namespace: "team", Name: "w", Finalizers: []string{"example.com/cleanup"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: fields}}}, nil)
		o.Finalizers[0].Owner, o.Finalizers[0].OwnerSource = "example.com", finalizev1alpha1.OwnerSourceAPIGroup
		return o
	}
	o := written("widget-operator")
	id := Identify(owner.Builtin(), o, o.Finalizers[0])
	if id.Manager != "widget-operator" || id.Who != "widget-operator" || len(id.WorkloadNames) != 1 || id.WorkloadNames[0] != "widget-operator" || id.Writer != "" {
		t.Errorf("%+v: want widget-operator as manager, name and workload name", id)
	}
	if !id.Reports("widget-operator-controller") || id.Reports("kubelet") {
		t.Errorf("reports: want its own name followed by a dash, not the kubelet's")
	}
	o = written("kubectl-client-side-apply")
	id = Identify(owner.Builtin(), o, o.Finalizers[0])
	if id.Manager != "" || id.Writer != "kubectl-client-side-apply" || id.Who != "example.com" {
		t.Errorf("%+v: want kubectl as the writer only, the API group as the name", id)
	}
	// A catalogued finalizer whose owner is a program's name: a writer the catalogue does
	// not name only added it, even when no generic client wrote it.
	argo := func(managers ...string) *kube.Object {
		fields := metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{"v:\"resources-finalizer.argocd.argoproj.io\"":{}}}}`)
		meta := &metav1.ObjectMeta{Namespace: "argocd", Name: "app", Finalizers: []string{"resources-finalizer.argocd.argoproj.io"}}
		for _, m := range managers {
			meta.ManagedFields = append(meta.ManagedFields, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: fields})
		}
		o := kube.NewObject(widgets, meta, nil)
		owner.NewResolver(owner.Builtin(), nil).Annotate([]*kube.Object{o})
		return o
	}
	o = argo("kubectl-client-side-apply", "argocd-applicationset-controller")
	id = Identify(owner.Builtin(), o, o.Finalizers[0])
	if id.Manager != "" || id.Writer != "argocd-applicationset-controller" || id.Who != "argocd-application-controller" || fmt.Sprint(id.WorkloadNames) != "[argocd-application-controller]" {
		t.Errorf("%+v: want the ApplicationSet controller as the writer only, the application controller as the remover", id)
	}
	// A writer the catalogue does not name is the remover when it reconciles the object:
	// it writes the object's status (rook writes its CephClusters as "rook").
	rook := func(status bool) *kube.Object {
		fields := metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{"v:\"ceph.rook.io/disaster-protection\"":{}}}}`)
		meta := &metav1.ObjectMeta{Namespace: "rook-ceph", Name: "ceph", Finalizers: []string{"ceph.rook.io/disaster-protection"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "rook", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: fields}}}
		if status {
			meta.ManagedFields = append(meta.ManagedFields, metav1.ManagedFieldsEntry{Manager: "rook", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)})
		}
		o := kube.NewObject(widgets, meta, nil)
		owner.NewResolver(owner.Builtin(), nil).Annotate([]*kube.Object{o})
		return o
	}
	o = rook(true)
	if id = Identify(owner.Builtin(), o, o.Finalizers[0]); id.Manager != "rook" || fmt.Sprint(id.WorkloadNames) != "[rook rook-ceph-operator]" {
		t.Errorf("%+v: want rook, which writes the status, measured as the remover", id)
	}
	o = rook(false)
	if id = Identify(owner.Builtin(), o, o.Finalizers[0]); id.Manager != "" || id.Writer != "rook" {
		t.Errorf("%+v: want rook, which writes no status, as the writer only", id)
	}
	// A shared name finds no workload.
	o = written("manager")
	if id = Identify(owner.Builtin(), o, o.Finalizers[0]); id.Manager != "manager" || len(id.WorkloadNames) != 0 {
		t.Errorf("%+v: want manager measured, and no workload looked for by it", id)
	}
	if !KubernetesComponent("Garbage-Collector-Controller") || !KubernetesComponent("ipallocator-repair-controller") || KubernetesComponent("widget-operator") {
		t.Error("KubernetesComponent: want Kubernetes' own reporters only, in any case")
	}
}

// A workload's watched namespaces answer two questions: whether one that stays will
// reconcile a namespace (all settings together, any "every namespace" winning), and
// whether any one setting may keep a running one from it.
func TestTheNamespacesAWorkloadWatches(t *testing.T) {
	for _, tc := range []struct {
		watches            []WatchSetting
		watched            []string
		watchesB, excludeB bool
	}{
		{nil, nil, true, false},
		{[]WatchSetting{{Setting: "env WATCH_NAMESPACE", Namespaces: []string{"a"}}}, []string{"a"}, false, true},
		{[]WatchSetting{{Setting: "env WATCH_NAMESPACE", Namespaces: []string{"a", "b"}}}, []string{"a", "b"}, true, false},
		{[]WatchSetting{{Setting: "env WATCH_NAMESPACE", Namespaces: []string{"a"}}, {Setting: "flag --namespaces"}}, nil, true, true},
		{[]WatchSetting{{Setting: "env WATCH_NAMESPACE", Namespaces: []string{"a"}}, {Setting: "flag --namespaces", Namespaces: []string{"b"}}}, []string{"a", "b"}, true, true},
	} {
		w := &Workload{Kind: "Deployment", Namespace: "ops", Name: "op", Watches: tc.watches}
		if got := w.WatchedNamespaces(); fmt.Sprint(got) != fmt.Sprint(tc.watched) || (got == nil) != (tc.watched == nil) {
			t.Errorf("%+v: watched %q, want %q", tc.watches, got, tc.watched)
		}
		if got := w.WatchesNamespace("b"); got != tc.watchesB {
			t.Errorf("%+v: watches b %v, want %v", tc.watches, got, tc.watchesB)
		}
		if got := w.Excludes("b") != ""; got != tc.excludeB {
			t.Errorf("%+v: excludes b %v, want %v", tc.watches, got, tc.excludeB)
		}
	}
}

// A copy that says nothing of what it watches runs for a namespace only when that is
// proven otherwise: the object is cluster-scoped, the copy is in the object's namespace,
// or it is the program's only install. Beside installs in other namespaces, it may watch
// its own only (#34).
func TestACopyThatSaysNothingOfItsScope(t *testing.T) {
	at := func(ns string, watches ...WatchSetting) Workload {
		return Workload{Kind: "Deployment", Namespace: ns, Name: "op", Ready: 1, Desired: 1, Watches: watches}
	}
	release := func(w Workload, r string) Workload { w.Install = r; return w }
	every := WatchSetting{Setting: "env WATCH_NAMESPACE"}
	named := WatchSetting{Setting: "env WATCH_NAMESPACE", Namespaces: []string{"c", "d"}}
	for _, tc := range []struct {
		name     string
		w        Workload
		others   []Workload
		ns       string
		unproven bool
	}{
		{"the only install", at("a"), nil, "c", false},
		{"two workloads of one install", at("a"), []Workload{at("a")}, "c", false},
		{"installs in two namespaces", at("a"), []Workload{at("b")}, "c", true},
		{"a scaled-down install elsewhere counts", at("a"), []Workload{{Kind: "StatefulSet", Namespace: "b", Name: "op"}}, "c", true},
		{"the install of the object's namespace", at("c"), []Workload{at("b")}, "c", false},
		{"a cluster-scoped object", at("a"), []Workload{at("b")}, "", false},
		{"says every namespace", at("a", every), []Workload{at("b")}, "c", false},
		{"names the namespace", at("a", named), []Workload{at("b")}, "c", false},
		{"two releases in one namespace", release(at("a"), "team-b"), []Workload{release(at("a"), "team-c")}, "c", true},
		{"one release, two workloads", release(at("a"), "db"), []Workload{release(at("a"), "db"), at("a")}, "c", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := append([]Workload{tc.w}, tc.others...)
			why := tc.w.ScopeUnproven(Workloads{Found: all}, tc.ns)
			if (why != "") != tc.unproven {
				t.Fatalf("ScopeUnproven = %q, want unproven %v", why, tc.unproven)
			}
			if tc.unproven && !strings.Contains(why, "(b)") && !strings.Contains(why, "app.kubernetes.io/instance team-c") {
				t.Errorf("the reason does not name the other installs: %s", why)
			}
		})
	}
	// A look that missed a workload kind does not prove the install the only one.
	w := at("a")
	if why := w.ScopeUnproven(Workloads{Found: []Workload{w}, Unread: []string{"StatefulSet"}}, "c"); !strings.Contains(why, "its StatefulSets could not be read") {
		t.Errorf("with StatefulSets unread: %q", why)
	}
	if why := w.ScopeUnproven(Workloads{Found: []Workload{w}, Unread: []string{"StatefulSet"}}, "a"); why != "" {
		t.Errorf("an install in the object's namespace, StatefulSets unread: %q", why)
	}
}

// What a container says of the namespaces it watches: the settings operators are known
// to read, a namespace from the pod's own, and "*" for every namespace.
func TestWatchSettings(t *testing.T) {
	c := map[string]any{
		"env": []any{
			map[string]any{"name": "STRIMZI_NAMESPACE", "value": "*"},
			map[string]any{"name": "WATCH_NAMESPACE", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.namespace"}}},
			map[string]any{"name": "LOG_LEVEL", "value": "debug"},
			map[string]any{"name": "WATCH_NAMESPACES", "value": "a b"},
			map[string]any{"name": "OPERATOR_NAMESPACE_WATCH", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.annotations['olm.targetNamespaces']"}}},
		},
		"args": []any{"--namespace", "team-a", "--leader-elect", "--watch-namespaces=b, c", "--namespaces", "$(OPERATOR_NAMESPACE)"},
	}
	// --namespace names where a program runs (OLM's, Velero's), a $(VAR) is expanded by
	// the kubelet, never read here: neither is taken to scope the controller.
	// An annotation of the pod (OLM's olm.targetNamespaces) is the template's, when it
	// sets it; one it does not set (a webhook may add it to the pod) is not understood.
	got := fmt.Sprint(watchSettings(c, "ops", nil))
	want := "[{env STRIMZI_NAMESPACE []} {env WATCH_NAMESPACE [ops]} {flag --watch-namespaces [b c]}]"
	if got != want {
		t.Errorf("watch settings %s, want %s", got, want)
	}
	olm := map[string]any{"annotations": map[string]any{"olm.targetNamespaces": "apps"}}
	got = fmt.Sprint(watchSettings(c, "ops", olm))
	want = "[{env STRIMZI_NAMESPACE []} {env WATCH_NAMESPACE [ops]} {env OPERATOR_NAMESPACE_WATCH [apps]} {flag --watch-namespaces [b c]}]"
	if got != want {
		t.Errorf("with the template's annotation: watch settings %s, want %s", got, want)
	}
	label := map[string]any{"name": "WATCH_NAMESPACE", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.labels['tenant']"}}}
	if got := fmt.Sprint(watchSettings(map[string]any{"env": []any{label}}, "ops", map[string]any{"labels": map[string]any{"tenant": "team-a"}})); got != "[{env WATCH_NAMESPACE [team-a]}]" {
		t.Errorf("from a label of the template: %s", got)
	}
}

// Each name's workloads are read once, by name and by app.kubernetes.io/name, anywhere
// in the cluster; a kind that cannot be read is unread, never absent.
func TestFinderReadsEachNameOnce(t *testing.T) {
	deploy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": "ops", "name": "op"},
		"spec":     map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{"serviceAccountName": "op-sa"}}},
		"status":   map[string]any{"readyReplicas": int64(1)}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList", {Group: "apps", Version: "v1", Resource: "statefulsets"}: "StatefulSetList",
		{Group: "apps", Version: "v1", Resource: "daemonsets"}: "DaemonSetList"}, deploy)
	lists := 0
	dyn.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		if a.GetResource().Resource == "daemonsets" {
			return true, nil, fmt.Errorf("no daemonsets today")
		}
		return false, nil, nil
	})
	var warnings []string
	f := &Finder{Dynamic: dyn, Scan: &scan.Result{}, Warnf: func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }}
	ws := f.Workloads(t.Context(), "op", "op")
	if len(ws.Found) != 1 || ws.Found[0].String() != "Deployment ops/op has 1/2 ready replicas" || ws.Found[0].ServiceAccount != "op-sa" || !ws.Found[0].Running() {
		t.Fatalf("found %+v", ws.Found)
	}
	if len(ws.Unread) != 1 || ws.Unread[0] != "DaemonSet" || len(warnings) != 1 {
		t.Errorf("unread %v, warnings %q: want daemonsets unread and said once", ws.Unread, warnings)
	}
	before := lists
	f.Workloads(t.Context(), "op")
	if lists != before {
		t.Errorf("%d more lists: want the name's workloads read once", lists-before)
	}
}
