// Package deployment runs docs/deploy/deployment as shipped on two test nodes: the
// manifests `kubectl kustomize` renders, through an overlay the test writes that only fits
// them to the nodes (the network overlay, metrics bound to the pod's own address, the
// locally loaded image, a scenario's policy and the RBAC `kubectl finalize rbac`
// generates for it, the namespace's Pod Security relabelled because restricted forbids
// hostNetwork).
//
// Two nodes, because the pods run with the host's network (the network rule) and both
// replicas listen on port 8080: the scheduler never puts two hostNetwork pods with the
// same port on one node, and on one node they would collide. Node i is 127.0.0.(i+1) on
// loopback, and each replica binds its node's address (status.podIP).
package deployment

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/image"
	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/overlay"
)

var cp *controlplane.ControlPlane

// The Deployment needs deployment-controller and replicaset-controller, its pods the
// ServiceAccount controllers: all are NodeControllers, which a node starts.
func TestMain(m *testing.M) { controlplane.Main(m, controlplane.WithNodes(2), &cp) }

const (
	namespace    = overlay.Namespace
	name         = overlay.Name
	shippedImage = overlay.ShippedImage
	policyDir    = overlay.PolicyDir
	// shippedBind is the shipped --metrics-bind-address; the overlay binds the pod's
	// address instead, on the same port.
	shippedBind = "--metrics-bind-address=:8080"
	podBind     = "--metrics-bind-address=$(POD_IP):8080"
)

// kubectl runs the kubectl the control plane was built with, as the admin.
func kubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, _ := overlay.Kubectl(t, cp, stdin, args...)
	return out
}

// shippedDeployment is the Deployment docs/deploy/deployment renders.
func shippedDeployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	for doc := range strings.SplitSeq(overlay.Kustomize(t, cp, overlay.RepoPath("docs", "deploy", "deployment")), "\n---\n") {
		if !strings.Contains(doc, "kind: Deployment\n") {
			continue
		}
		d := &appsv1.Deployment{}
		if err := yaml.UnmarshalStrict([]byte(doc), d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	t.Fatal("docs/deploy/deployment renders no Deployment")
	return nil
}

// releaseImage is image.Release, loaded into every node: image.Release loads it into
// the first only, and the replicas run on both.
func releaseImage(t *testing.T) string {
	t.Helper()
	ref, err := image.Release(t.Context(), cp)
	if err != nil {
		t.Fatalf("the release image: %v", err)
	}
	for _, n := range cp.Nodes[1:] {
		if err := cp.Node.CopyImage(t.Context(), ref, n); err != nil {
			t.Fatalf("loading %s into node %s: %v", ref, n.Name, err)
		}
	}
	return ref
}

// deploy renders docs/deploy/deployment through an overlay for policy (ca is the PEM of
// its provider's CA, mounted beside it as ca.pem) and applies it. The overlay changes
// only what the nodes and the scenario need; the rest, --interval=15m and
// --leader-elect included, is as shipped. The scenario's policy names configmaps and a
// loopback cloud, so the shipped rbac.yaml (for the example policy) does not fit it: the
// overlay replaces its roles with what `kubectl finalize rbac` generates for this policy
// and the Lease's namespace, the way docs/reconcile.md says to.
func deploy(t *testing.T, policy, ca string) {
	t.Helper()
	rendered, _ := overlay.Overlay{
		Shipped:  "deployment",
		Policy:   policy,
		CA:       ca,
		RBACArgs: []string{"--leader-elect-namespace", namespace},
		Image:    releaseImage(t),
		Patches: map[string]string{
			"deployment-patch.json": deploymentPatch(t),
			"namespace-patch.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: kubectl-finalize
  labels:
    # Restricted forbids hostNetwork, which every pod on the test nodes needs
    # (controlplane.NetworkOverlay).
    pod-security.kubernetes.io/enforce: privileged
`,
		},
	}.Render(t, cp)
	kubectl(t, rendered, "apply", "-f", "-")
}

// deploymentPatch is the overlay's patch of the Deployment: the network overlay of the
// test nodes (cp.NetworkOverlay, applied to the shipped container by name), the image
// pulled only if absent (it is loaded on the nodes, never pulled), and /metrics bound to
// the pod's address, which for a hostNetwork pod is its node's (127.0.0.x): the shipped
// ":8080" would bind every address of the machine, so the second replica could not.
// The args are the shipped ones with only the bind address changed; a strategic merge
// replaces a list of strings whole.
func deploymentPatch(t *testing.T) string {
	t.Helper()
	var args []string
	for _, c := range shippedDeployment(t).Spec.Template.Spec.Containers {
		if c.Name == "reconcile" {
			args = slices.Clone(c.Args)
		}
	}
	i := slices.Index(args, shippedBind)
	if i < 0 {
		t.Fatalf("the shipped container's args %q have no %s", args, shippedBind)
	}
	args[i] = podBind
	spec := corev1.PodSpec{Containers: []corev1.Container{{
		Name: "reconcile", ImagePullPolicy: corev1.PullNever, Args: args,
		Env: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
	}}}
	cp.NetworkOverlay(&spec)
	b, err := json.Marshal(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"template": map[string]any{"spec": spec}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
