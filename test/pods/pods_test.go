// Package pods tests what scan and doctor say of pods whose deletion waits for a kubelet,
// on a real node: a kubelet that stopped, a Node object that is gone, a node name that
// never existed. The test control plane runs neither the pod garbage collector nor the
// node lifecycle controller (controlplane.DefaultControllers, NodeControllers): nothing
// but the kubelet finishes these deletions, and nothing marks a silent node Unknown, so
// no controller races the scenarios.
package pods

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.WithNodes(1), &cp) }

// margin is the --pod-grace-margin of every scan here: a pod is listed one second after
// its grace period ended.
const margin = "1s"

// pausePod is a pod bound to node that runs the node's pause image, and that its kubelet
// is given grace seconds to stop.
func pausePod(ns, name, node string, grace int64) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To(grace),
			Containers:                    []corev1.Container{{Name: "pause", Image: controlplane.PauseImage, ImagePullPolicy: corev1.PullNever}},
		},
	}
	cp.NetworkOverlay(&pod.Spec)
	return pod
}

func create(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	p, err := cp.Kube(t).CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// deletePod deletes a pod gracefully, with its own grace period, and returns it as the
// API server left it: its deletionTimestamp is the end of the grace period.
func deletePod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	c := cp.Kube(t).CoreV1().Pods(ns)
	if err := c.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := c.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pod %s/%s is gone at once; its deletion was to wait for a kubelet: %v", ns, name, err)
	}
	return p
}

// forceDelete removes a pod the test left waiting, as a person would.
func forceDelete(t *testing.T, ns, name string) {
	t.Cleanup(func() {
		_ = cp.Kube(t).CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
}

func scan(t *testing.T, ns string) *finalizev1alpha1.StuckObjectList {
	t.Helper()
	r := cli.Run(t, cp.AdminKubeconfig, "scan", "-n", ns, "--pod-grace-margin", margin, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("scan exited %d: %s", r.Code, r.Stderr)
	}
	var list finalizev1alpha1.StuckObjectList
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	return &list
}

func find(list []finalizev1alpha1.StuckObject, kind, name string) *finalizev1alpha1.StuckObject {
	for i := range list {
		if list[i].Target.Kind == kind && list[i].Target.Name == name {
			return &list[i]
		}
	}
	return nil
}

// waitListed scans until the pod is listed: its grace period and the margin are over a
// moment after the deletion, and the test bounds that moment.
func waitListed(t *testing.T, pod *corev1.Pod) *finalizev1alpha1.StuckObject {
	t.Helper()
	due := pod.DeletionTimestamp.Add(time.Second) // the margin
	var found *finalizev1alpha1.StuckObject
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Until(due)+15*time.Second, true, func(context.Context) (bool, error) {
		found = find(scan(t, pod.Namespace).Items, "Pod", pod.Name)
		return found != nil, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s, grace period over at %s, is not listed 15 s after the margin", pod.Namespace, pod.Name, pod.DeletionTimestamp.UTC().Format(time.RFC3339))
	}
	if time.Now().Before(due) {
		t.Fatalf("pod %s/%s was listed before its grace period and the margin were over (%s)", pod.Namespace, pod.Name, due.UTC().Format(time.RFC3339))
	}
	return found
}

func doctor(t *testing.T, ns string, args ...string) *finalizev1alpha1.Diagnosis {
	t.Helper()
	r := cli.Run(t, cp.AdminKubeconfig, append([]string{"doctor", "-n", ns, "--pod-grace-margin", margin, "-o", "json"}, args...)...)
	if r.Code != 0 {
		t.Fatalf("doctor exited %d: %s", r.Code, r.Stderr)
	}
	var d finalizev1alpha1.Diagnosis
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	return &d
}

// wantCause checks the cause doctor gives a pod.
func wantCause(t *testing.T, d *finalizev1alpha1.Diagnosis, name, reason string, says ...string) {
	t.Helper()
	o := find(d.Items, "Pod", name)
	if o == nil || o.Cause == nil {
		t.Fatalf("doctor does not diagnose pod %s: %+v", name, d.Items)
	}
	if o.Cause.Reason != reason {
		t.Fatalf("pod %s: cause %s (%s), want %s", name, o.Cause.Reason, o.Cause.Message, reason)
	}
	for _, s := range says {
		if !strings.Contains(o.Cause.Message, s) && !strings.Contains(o.Cause.NextStep, s) {
			t.Errorf("pod %s: cause %q, next step %q: does not say %q", name, o.Cause.Message, o.Cause.NextStep, s)
		}
	}
}

func wantRoot(t *testing.T, d *finalizev1alpha1.Diagnosis, reason, node string, objects ...string) {
	t.Helper()
	for _, r := range d.RootCauses {
		if r.Reason != reason || r.Subject != (finalizev1alpha1.Subject{Kind: "Node", Name: node}) {
			continue
		}
		var names []string
		for _, o := range r.Objects {
			names = append(names, o.Kind+"/"+o.Name)
		}
		for _, want := range objects {
			if !strings.Contains(strings.Join(names, " "), want) {
				t.Errorf("root cause %s of node %s explains %v, not %s", reason, node, names, want)
			}
		}
		return
	}
	t.Errorf("no root cause %s of node %s among %+v", reason, node, d.RootCauses)
}

// TestAPodBoundToANodeThatNeverExisted: a pod created with spec.nodeName of no node is
// "scheduled" for the API server, so its deletion waits for that node's kubelet.
func TestAPodBoundToANodeThatNeverExisted(t *testing.T) {
	ns := cp.Namespace(t)
	const ghost = "node-that-never-existed"
	create(t, pausePod(ns, "ghost", ghost, 1))
	create(t, pausePod(ns, "in-grace", ghost, 600))
	pod := deletePod(t, ns, "ghost")
	forceDelete(t, ns, "ghost")
	inGrace := deletePod(t, ns, "in-grace")
	forceDelete(t, ns, "in-grace")

	listed := waitListed(t, pod)
	if listed.WaitsFor == nil || listed.WaitsFor.Node != ghost || listed.Finalizers == nil || len(listed.Finalizers) != 0 {
		t.Errorf("listed as %+v; want waitsFor.node %s and finalizers []", listed, ghost)
	}
	if got := time.Duration(listed.TerminatingSeconds) * time.Second; got > time.Since(pod.DeletionTimestamp.Time)+time.Second {
		t.Errorf("terminatingSeconds %d counts from before the grace period ended (%s)", listed.TerminatingSeconds, pod.DeletionTimestamp.UTC().Format(time.RFC3339))
	}
	// A pod whose grace period is not over is never listed.
	if o := find(scan(t, ns).Items, "Pod", "in-grace"); o != nil {
		t.Errorf("pod in-grace, whose grace period ends at %s, is listed: %+v", inGrace.DeletionTimestamp.UTC().Format(time.RFC3339), o)
	}

	d := doctor(t, ns, "pod/ghost")
	wantCause(t, d, "ghost", finalizev1alpha1.ReasonNodeGone,
		"Node "+ghost+" does not exist", "kubectl delete pod -n "+ns+" ghost --grace-period=0 --force")
	wantRoot(t, d, finalizev1alpha1.ReasonNodeGone, ghost, "Pod/ghost")
}

// TestAPodOfANodeWhoseKubeletStoppedThenWhoseNodeIsGone stops the node's kubelet, so it
// runs last: a pod running on the node is deleted and waits; its namespace is deleted and
// waits for it; then the Node object is deleted. This node is NotReady from the start
// (its runtime has no pod network: Ready=False, NetworkPluginNotReady), which the doctor
// says; a Ready node marked Unknown once its kubelet stops is in ./ready.
func TestAPodOfANodeWhoseKubeletStoppedThenWhoseNodeIsGone(t *testing.T) {
	ns := cp.Namespace(t)
	kube := cp.Kube(t)
	create(t, pausePod(ns, "web", controlplane.NodeName, 1))
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	if err != nil {
		t.Fatalf("pod web does not run: %v", err)
	}
	node, err := kube.CoreV1().Nodes().Get(t.Context(), controlplane.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			t.Logf("node %s before its kubelet stops: Ready=%s (%s: %s)", node.Name, c.Status, c.Reason, c.Message)
		}
	}

	cp.Node.StopKubelet()
	pod := deletePod(t, ns, "web")
	forceDelete(t, ns, "web")
	listed := waitListed(t, pod)
	if listed.WaitsFor == nil || listed.WaitsFor.Node != controlplane.NodeName {
		t.Errorf("listed as %+v; want waitsFor.node %s", listed, controlplane.NodeName)
	}
	d := doctor(t, ns, "pod/web")
	wantCause(t, d, "web", finalizev1alpha1.ReasonNodeNotReady,
		"node "+controlplane.NodeName+" is", "its kubelet last reported",
		"kubectl taint nodes "+controlplane.NodeName+" node.kubernetes.io/out-of-service=nodeshutdown:NoExecute")
	wantRoot(t, d, finalizev1alpha1.ReasonNodeNotReady, controlplane.NodeName, "Pod/web")

	// The namespace waits for the pod: it names the pod and its node, and the node is
	// its root cause.
	if err := kube.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var nsCause *finalizev1alpha1.Cause
	err = wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		d = doctor(t, ns, "ns/"+ns)
		o := find(d.Items, "Namespace", ns)
		if o == nil || o.Cause == nil || o.Cause.Reason != finalizev1alpha1.ReasonNamespaceContentRemaining {
			return false, nil
		}
		nsCause = o.Cause
		return true, nil
	})
	if err != nil {
		t.Fatalf("namespace %s is not diagnosed NamespaceContentRemaining within a minute: %+v", ns, d.Items)
	}
	var blockers []string
	for _, b := range nsCause.Blockers {
		blockers = append(blockers, b.Target.Kind+"/"+b.Target.Name+": "+b.Message)
	}
	if want := "Pod/web: waits for the kubelet of node " + controlplane.NodeName; !strings.Contains(strings.Join(blockers, "\n"), want) {
		t.Errorf("namespace %s: blockers %q, want %q", ns, blockers, want)
	}
	wantRoot(t, d, finalizev1alpha1.ReasonNodeNotReady, controlplane.NodeName, "Pod/web", "Namespace/"+ns)

	// The Node object goes: no kubelet will ever answer.
	if err := kube.CoreV1().Nodes().Delete(t.Context(), controlplane.NodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d = doctor(t, ns, "pod/web")
	wantCause(t, d, "web", finalizev1alpha1.ReasonNodeGone, "Node "+controlplane.NodeName+" does not exist")
	wantRoot(t, d, finalizev1alpha1.ReasonNodeGone, controlplane.NodeName, "Pod/web")
}
