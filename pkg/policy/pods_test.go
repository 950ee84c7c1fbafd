package policy

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	testingclock "k8s.io/utils/clock/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

var podsType = kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}

func TestAWaitsForNodeRule(t *testing.T) {
	p, warnings := compile(t, header+`rules:
- name: dbs
  finalizers: [db.example.com/finalizer]
  resources: [databases.db.example.com]
  verify: {exec: {command: [/bin/check]}}
- name: gone-nodes
  waitsForNode: true
  namespaces: [prod-*]
  selector: app=web
`)
	if len(warnings) != 0 {
		t.Errorf("warnings %q", warnings)
	}
	r := p.Rules[1]
	if got := r.Spec.Resources; len(got) != 1 || got[0] != "pods" {
		t.Errorf("resources %v, want [pods]", got)
	}
	if sc := p.Scope(); len(sc.Resources) != 2 {
		t.Errorf("scope %+v", sc)
	}
	web := Subject{Resource: "pods", Namespace: "prod-a", Labels: map[string]string{"app": "web"}}
	if p.MatchPod(web) != r {
		t.Error("the rule does not match a pod it names")
	}
	if p.MatchPod(Subject{Resource: "pods", Namespace: "dev", Labels: web.Labels}) != nil || p.MatchPod(Subject{Resource: "configmaps", Namespace: "prod-a", Labels: web.Labels}) != nil {
		t.Error("the rule matches what it does not name")
	}
	if p.Match(web, "anything.example.com/x") != nil || p.MatchesFinalizer("anything.example.com/x") {
		t.Error("a waitsForNode rule matches finalizers")
	}
}

func TestABadWaitsForNodeRule(t *testing.T) {
	spec, errs := Decode([]byte(header + `rules:
- name: bad
  waitsForNode: true
  finalizers: [a.example.com/x]
  preset: crossplane-managed
  allowSystem: true
  resources: [pods, configmaps]
  verify:
    kubernetes:
      resource: machines.cluster.x-k8s.io
      name: "{identity.externalName}"
`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	_, errs, _ = Compile(spec)
	got := errs.ToAggregate().Error()
	for _, want := range []string{
		"rules[0].finalizers: Forbidden: does not apply to a rule with waitsForNode",
		"rules[0].preset: Forbidden",
		"rules[0].allowSystem: Forbidden",
		"rules[0].resources: Invalid value",
		"rules[0].verify.kubernetes.name: Invalid value: \"{identity.externalName}\": a rule with waitsForNode has the identity values nodeName, providerID of the node, not externalName",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
}

func nodeObject(name, providerID string, ready corev1.ConditionStatus) *corev1.Node {
	n := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + "name"}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
	}
	return n
}

// nodeVerifier is a verifier of doc that lists nodes as the cluster holds them.
func nodeVerifier(t *testing.T, doc string, nodes ...*corev1.Node) *Verifier {
	t.Helper()
	p, _ := compile(t, doc)
	var objs []runtime.Object
	for _, n := range nodes {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(n)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: u})
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{corev1.SchemeGroupVersion.WithResource("nodes"): "NodeList"}, objs...)
	v := NewVerifier(p, dyn, provider.Options{})
	v.Clock = testingclock.NewFakePassiveClock(now)
	return v
}

func podOn(node string, deletedAgo time.Duration) (*kube.Object, *corev1.Pod) {
	ts := metav1.NewTime(now.Add(-deletedAgo))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-0", UID: "uid-web", ResourceVersion: "7", DeletionTimestamp: &ts}, Spec: corev1.PodSpec{NodeName: node}}
	return &kube.Object{Resource: podsType, Meta: *pod.ObjectMeta.DeepCopy()}, pod
}

func TestVerifyPod(t *testing.T) {
	// A machine API: JSON answers, a JSON 404 for a machine it does not have.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked := r.URL.Path + " " + r.URL.Query().Get("id")
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(asked, "gone") || (strings.Contains(asked, "liar") && strings.Contains(asked, "live")) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"no such machine"}`))
			return
		}
		_, _ = w.Write([]byte(`{"state":"running"}`))
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	_ = os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	withProvider := func(url string) string {
		return header + `rules:
- name: gone-nodes
  waitsForNode: true
  minAge: 5m
  verify:
    http:
      url: "` + srv.URL + url + `"
      tls: {caFile: "` + ca + `"}
`
	}
	bare := header + "rules:\n- name: gone-nodes\n  waitsForNode: true\n  minAge: 5m\n"
	live := nodeObject("live", "cloud://live-1", corev1.ConditionTrue)
	tests := []struct {
		name       string
		doc        string
		node       *corev1.Node // the pod's node; nil: gone
		others     []*corev1.Node
		deletedAgo time.Duration
		verdict    finalizev1alpha1.Verdict
		status     plan.Status
		evidence   string
	}{
		{"the node object is gone", bare, nil, nil, time.Hour, finalizev1alpha1.VerdictGone, plan.Answered, "GET nodes/worker-3: 404"},
		{"too young for the rule", bare, nil, nil, time.Minute, "", plan.TooYoung, "the rule waits 5m"},
		{"the node exists and nothing can be asked", bare, nodeObject("worker-3", "", corev1.ConditionUnknown), nil, time.Hour, finalizev1alpha1.VerdictUnknown, plan.Answered,
			"the rule names no provider"},
		// A providerID is a URI: it goes in the query, where it is escaped, not in a path
		// segment, which refuses it.
		{"the provider says the machine is gone, and the Ready control is present", withProvider("/machines?id={identity.providerID}"),
			nodeObject("worker-3", "cloud://gone-3", corev1.ConditionUnknown), []*corev1.Node{live}, time.Hour, finalizev1alpha1.VerdictGone, plan.Answered, "/machines?id=cloud%3A%2F%2Fgone-3"},
		{"the provider says the machine runs", withProvider("/machines?id={identity.providerID}"),
			nodeObject("worker-3", "cloud://up-3", corev1.ConditionFalse), []*corev1.Node{live}, time.Hour, finalizev1alpha1.VerdictPresent, plan.Answered, "200"},
		{"a providerID in a path segment: not asked", withProvider("/machines/{identity.providerID}"),
			nodeObject("worker-3", "cloud://gone-3", corev1.ConditionUnknown), []*corev1.Node{live}, time.Hour, finalizev1alpha1.VerdictUnknown, plan.Answered,
			`"cloud://gone-3" cannot be a URL path segment as it is: it holds '/'`},
		{"no providerID: not asked", withProvider("/machines?id={identity.providerID}"),
			nodeObject("worker-3", "", corev1.ConditionFalse), []*corev1.Node{live}, time.Hour, finalizev1alpha1.VerdictUnknown, plan.Answered, "the request cannot be made"},
		{"no Ready node to check the provider with", withProvider("/machines/{identity.nodeName}-gone"),
			nodeObject("worker-3", "", corev1.ConditionUnknown), nil, time.Hour, finalizev1alpha1.VerdictGone, plan.Distrusted, ""},
		{"a provider that calls a Ready node's machine gone is broken", withProvider("/liar?id={identity.providerID}-gone"),
			nodeObject("worker-3", "cloud://x", corev1.ConditionUnknown), []*corev1.Node{live}, time.Hour, finalizev1alpha1.VerdictGone, plan.Distrusted, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := tt.others
			if tt.node != nil {
				nodes = append([]*corev1.Node{tt.node}, nodes...)
			}
			v := nodeVerifier(t, tt.doc, nodes...)
			o, pod := podOn("worker-3", tt.deletedAgo)
			got := v.VerifyPod(t.Context(), plan.PodRequest{Object: o, Pod: pod, Node: tt.node})
			if got.Rule != "gone-nodes" || got.Verdict != tt.verdict || got.Status != tt.status || !strings.Contains(got.Evidence, tt.evidence) {
				t.Errorf("got %+v", got)
			}
			if tt.status == plan.Answered && tt.verdict != "" && got.ResourceVersion != "7" {
				t.Errorf("resourceVersion %q", got.ResourceVersion)
			}
		})
	}
}

// TestAShadowedWaitsForNodeRule: a waitsForNode rule after one that matches every pod it
// would can never match; a finalizer rule neither shadows one nor is shadowed by one.
func TestAShadowedWaitsForNodeRule(t *testing.T) {
	spec, errs := Decode([]byte(header + `rules:
- {name: all-finalizers, finalizers: ["*"], verify: {exec: {command: [x]}}}
- {name: gone-nodes, waitsForNode: true, namespaces: ["prod-*"]}
- {name: gone-in-prod-a, waitsForNode: true, namespaces: [prod-a], selector: app=web}
- {name: gone-elsewhere, waitsForNode: true, namespaces: [dev]}
`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	_, errs, _ = Compile(spec)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `rules[2]: Invalid value: "gone-in-prod-a": can never match: rule gone-nodes before it matches every pod it would`) {
		t.Errorf("errors %v", errs)
	}
}
