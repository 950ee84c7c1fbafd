package scan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
)

// pod is a pod's metadata as listed and the pod as read: deletedAgo is how long ago its
// grace period ended (negative: it ends in the future), grace its
// deletionGracePeriodSeconds (0: the kubelet finished).
func pod(ns, name, node string, deletedAgo time.Duration, grace int64, finalizers ...string) (*metav1.PartialObjectMetadata, *corev1.Pod) {
	ts := metav1.NewTime(now.Add(-deletedAgo))
	meta := metav1.ObjectMeta{
		Namespace: ns, Name: name, UID: types.UID("uid-" + name), Finalizers: finalizers,
		DeletionTimestamp: &ts, DeletionGracePeriodSeconds: &grace,
	}
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta},
		&corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{NodeName: node}}
}

// podFixture is a fake cluster that serves pods: listed is in the metadata list, read
// (pods) what a GET or a typed list returns.
func podFixture(listed []runtime.Object, read ...runtime.Object) *fixture {
	f := newFixture(listed, read...)
	core := f.disc.Resources[0]
	core.APIResources = append(core.APIResources, metav1.APIResource{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"list", "get", "delete"}})
	return f
}

func waits(res *Result) []string {
	var out []string
	for _, o := range res.Objects {
		w := "-"
		if o.WaitsFor != nil {
			w = "node=" + o.WaitsFor.Node
		}
		out = append(out, fmt.Sprintf("%s/%s %s %d", o.Meta.Namespace, o.Meta.Name, w, len(o.Finalizers)))
	}
	return out
}

func TestScanListsPodsWhoseDeletionIsOverdue(t *testing.T) {
	var listed, read []runtime.Object
	add := func(m *metav1.PartialObjectMetadata, p *corev1.Pod) {
		listed, read = append(listed, m), append(read, p)
	}
	add(pod("a", "overdue", "worker-3", 3*time.Minute, 30))
	add(pod("a", "overdue-with-finalizer", "worker-3", time.Hour, 30, "example.com/x"))
	add(pod("a", "within-margin", "worker-3", time.Minute, 30))
	add(pod("a", "in-grace", "worker-3", -10*time.Second, 30))
	add(pod("a", "in-grace-with-finalizer", "worker-3", -10*time.Second, 30, "example.com/x"))
	add(pod("a", "kubelet-done-with-finalizer", "worker-3", 2*time.Hour, 0, "example.com/x"))
	add(pod("b", "never-scheduled", "", 10*time.Minute, 30))
	// Listed, then gone before its node was read.
	gone, _ := pod("b", "gone", "worker-1", 5*time.Minute, 30)
	listed = append(listed, gone)
	// Listed, then deleted and re-created under the same name.
	again, recreated := pod("b", "recreated", "worker-1", 5*time.Minute, 30)
	recreated.UID = "uid-new"
	listed, read = append(listed, again), append(read, recreated)
	f := podFixture(listed, read...)

	res := f.scan(t, Options{})
	want := []string{
		"a/kubelet-done-with-finalizer - 1",
		"a/overdue-with-finalizer node=worker-3 1",
		"b/never-scheduled node= 0",
		"a/overdue node=worker-3 0",
	}
	if got := waits(res); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("listed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The pods read for their nodes are kept for the doctor, and only those.
	if p := res.Pods["uid-overdue"]; p == nil || p.Spec.NodeName != "worker-3" || len(res.Pods) != 3 {
		t.Errorf("pods kept: %d, overdue: %+v; want the 3 overdue pods", len(res.Pods), p)
	}

	res = f.scan(t, Options{PodGraceMargin: 30 * time.Second})
	if got := waits(res); len(got) != 5 || got[4] != "a/within-margin node=worker-3 0" {
		t.Errorf("with a margin of 30s, listed %q; want within-margin too", got)
	}
}

func TestScanPrintsWhatAPodWaitsFor(t *testing.T) {
	m, p := pod("a", "web-0", "worker-3", 3*time.Minute, 30)
	f := podFixture([]runtime.Object{m}, p)
	list := f.scan(t, Options{}).List()
	b, err := json.Marshal(list.Items[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"finalizers":[]`, `"waitsFor":{"node":"worker-3"}`, `"terminatingSeconds":180`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}

func TestScanFiltersApplyToOverduePods(t *testing.T) {
	m, p := pod("a", "web-0", "worker-3", 3*time.Minute, 30)
	f := podFixture([]runtime.Object{m}, p)
	if got := waits(f.scan(t, Options{OlderThan: 5 * time.Minute})); len(got) != 0 {
		t.Errorf("--older-than 5m listed %q; the grace period ended 3m ago", got)
	}
	if got := waits(f.scan(t, Options{Finalizers: mustGlob(t, "*")})); len(got) != 0 {
		t.Errorf("--finalizer '*' listed %q, a pod without finalizers", got)
	}
}

func TestScanReadsTheNodesOfOverduePodsAtBoundedCost(t *testing.T) {
	few := func(n int) *fixture {
		var listed, read []runtime.Object
		for i := range n {
			m, p := pod("a", fmt.Sprintf("web-%02d", i), "worker-3", 3*time.Minute, 30)
			listed, read = append(listed, m), append(read, p)
		}
		// Pods that are not being deleted are never read.
		for i := range 5 {
			m, p := pod("a", fmt.Sprintf("ok-%d", i), "worker-1", 0, 30)
			m.DeletionTimestamp, p.DeletionTimestamp = nil, nil
			listed, read = append(listed, m), append(read, p)
		}
		return podFixture(listed, read...)
	}
	count := func(f *fixture) (gets, lists int) {
		for _, a := range f.kube.Actions() {
			if a.GetResource().Resource != "pods" {
				continue
			}
			switch a.GetVerb() {
			case "get":
				gets++
			case "list":
				lists++
			}
		}
		return gets, lists
	}
	f := few(maxPodGetsPerNamespace)
	if res := f.scan(t, Options{}); len(res.Objects) != maxPodGetsPerNamespace {
		t.Fatalf("listed %d pods, want %d", len(res.Objects), maxPodGetsPerNamespace)
	}
	if gets, lists := count(f); gets != maxPodGetsPerNamespace || lists != 0 {
		t.Errorf("%d overdue pods: %d GETs and %d lists, want %d GETs", maxPodGetsPerNamespace, gets, lists, maxPodGetsPerNamespace)
	}
	f = few(maxPodGetsPerNamespace + 1)
	res := f.scan(t, Options{})
	if len(res.Objects) != maxPodGetsPerNamespace+1 || res.Objects[0].WaitsFor.Node != "worker-3" {
		t.Fatalf("listed %q", waits(res))
	}
	if gets, lists := count(f); gets != 0 || lists != 1 {
		t.Errorf("%d overdue pods: %d GETs and %d lists, want one list", maxPodGetsPerNamespace+1, gets, lists)
	}
	// Without any overdue pod, the scan reads no pod.
	f = few(0)
	f.scan(t, Options{})
	if gets, lists := count(f); gets != 0 || lists != 0 {
		t.Errorf("no overdue pod: %d GETs and %d lists, want none", gets, lists)
	}
}

func mustGlob(t *testing.T, patterns ...string) glob.Set {
	t.Helper()
	s, err := glob.CompileSet(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A pod whose grace period is not over, or ended less than the margin ago, still has
// time to stop by itself; one deleted with no grace period, or overdue, does not.
func TestPodWithinMarginIsTheScansRule(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	pod := func(deleted time.Duration, grace int64) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{Time: now.Add(-deleted)}, DeletionGracePeriodSeconds: &grace}
	}
	for _, tc := range []struct {
		name string
		meta *metav1.ObjectMeta
		want bool
	}{
		{"not deleted", &metav1.ObjectMeta{}, false},
		{"grace period not over", pod(-10*time.Second, 30), true},
		{"grace period over, within the margin", pod(30*time.Second, 30), true},
		{"past the margin", pod(2*time.Minute, 30), false},
		{"no grace period", pod(30*time.Second, 0), false},
	} {
		if got := PodWithinMargin(tc.meta, now, time.Minute); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
