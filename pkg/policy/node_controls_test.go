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

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// TestNodeControlsAreOfTheSameKind: in a mixed cluster, a cloud API that knows the
// cloud's instances and answers 404 for any other ID is trusted on the cloud's Ready
// nodes, and says Gone for an on-premises node (another providerID scheme, or none):
// that Gone is distrusted unless a Ready node of the same kind answered Present. Its
// controls are drawn from nodes of the asked node's kind, each kind checked once.
func TestNodeControlsAreOfTheSameKind(t *testing.T) {
	var asked []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("providerID")
		asked = append(asked, r.URL.Path+" "+id)
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(id, "aws") || strings.Contains(r.URL.Path, "gone") {
			w.WriteHeader(http.StatusNotFound) // it knows its own instances only
			_, _ = w.Write([]byte(`{"error":"no such instance"}`))
			return
		}
		_, _ = w.Write([]byte(`{"state":"running"}`))
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	_ = os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	doc := header + `rules:
- name: gone-nodes
  waitsForNode: true
  verify:
    http:
      url: "` + srv.URL + `/instances/{identity.nodeName}?providerID={identity.providerID}"
      tls: {caFile: "` + ca + `"}
`
	var cloud []*corev1.Node
	for _, name := range []string{"cloud-1", "cloud-2", "cloud-3"} {
		cloud = append(cloud, nodeObject(name, "aws:///eu-west-1a/"+name, corev1.ConditionTrue))
	}
	tests := []struct {
		name   string
		node   *corev1.Node
		others []*corev1.Node
		status plan.Status
		detail string
		kind   string // what every path asked about holds: the node's kind
	}{
		{"an on-premises node of another scheme, only cloud nodes Ready", nodeObject("metal-7", "metal://rack-2/metal-7", corev1.ConditionUnknown), cloud,
			plan.Distrusted, "no Ready node among nodes with providerID metal:// could be asked about", "metal://"},
		{"a cloud node that is gone, cloud nodes Ready", nodeObject("gone-4", "aws:///eu-west-1a/gone-4", corev1.ConditionUnknown), cloud,
			plan.Answered, "", "aws://"},
		{"an on-premises node, and an on-premises Ready node the cloud API does not know", nodeObject("metal-7", "metal://rack-2/metal-7", corev1.ConditionUnknown),
			append([]*corev1.Node{nodeObject("metal-8", "metal://rack-2/metal-8", corev1.ConditionTrue)}, cloud...),
			plan.Distrusted, "the provider is broken: it called the machine of node metal-8 gone", "metal://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked = nil
			v := nodeVerifier(t, doc, append([]*corev1.Node{tt.node}, tt.others...)...)
			o, pod := podOn(tt.node.Name, time.Hour)
			got := v.VerifyPod(t.Context(), plan.PodRequest{Object: o, Pod: pod, Node: tt.node})
			if got.Verdict != finalizev1alpha1.VerdictGone || got.Status != tt.status || !strings.Contains(got.Detail, tt.detail) {
				t.Errorf("got %+v, want Gone %q with %q", got, tt.status, tt.detail)
			}
			for _, path := range asked {
				if !strings.Contains(path, tt.kind) {
					t.Errorf("asked about %s: a control of another kind", path)
				}
			}
		})
	}
}

func TestNodeKind(t *testing.T) {
	for id, want := range map[string]string{
		"":                          "nodes without a providerID",
		"aws:///eu-west-1a/i-0abc":  "nodes with providerID aws://",
		"gce://project/zone/vm":     "nodes with providerID gce://",
		"kind://docker/kind/worker": "nodes with providerID kind://",
		"i-0abc":                    "nodes with a providerID without a scheme",
	} {
		if got := nodeKind(nodeObject("n", id, "")); got != want {
			t.Errorf("nodeKind(%q) = %q, want %q", id, got, want)
		}
	}
}
