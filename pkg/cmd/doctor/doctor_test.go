package doctor

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	cmdtesting "github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/testing"
)

func cluster() *cmdtesting.Factory {
	return cmdtesting.NewFactory(cmdtesting.Namespace("team-a"),
		cmdtesting.StuckConfigMap("team-a", "stuck", 3*time.Hour, "a.example.com/x"),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "live", UID: "uid-live"}})
}

func TestInvocation(t *testing.T) {
	cmdtesting.InvalidInvocations(t, NewCmdDoctor, cluster, []cmdtesting.Invocation{
		{Name: "wide", Args: []string{"-o", "wide"}, Want: "error: --output wide is not supported by doctor: use the default, json, yaml, jsonpath or go-template\nSee 'doctor -h' for help and examples\n"},
		{Name: "name", Args: []string{"-o", "name"}, Want: "error: --output name is not supported by doctor"},
		{Name: "not TYPE/NAME", Args: []string{"configmaps"}, Want: "error: \"configmaps\" is not TYPE/NAME; to diagnose every stuck object, give no argument\nSee 'doctor -h' for help and examples\n"},
		{Name: "three arguments", Args: []string{"cm", "a", "b"}, Want: "error: doctor takes one object: TYPE/NAME or TYPE NAME\nSee 'doctor -h' for help and examples\n"},
		{Name: "unknown type", Args: []string{"gizmo/x"}, Want: `error: the server doesn't have a resource type "gizmo"`},
		{Name: "no concurrency", Args: []string{"--concurrency", "0"}, Want: "error: --concurrency must be at least 1, got 0"},
		{Name: "no progress window", Args: []string{"--progress-window", "0s"}, Want: "error: --progress-window must be positive, got 0s"},
	})
}

func TestOutputs(t *testing.T) {
	f := cluster().WithNamespace("team-a")
	r := cmdtesting.Run(NewCmdDoctor, f, "")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "1 stuck object in 1 namespace, explained by 1 root cause.") {
		t.Errorf("root causes: code %d, %q %q", r.Code, r.Stdout, r.Stderr)
	}
	for _, args := range [][]string{{"configmap/stuck"}, {"cm", "stuck"}} {
		r = cmdtesting.Run(NewCmdDoctor, cluster().WithNamespace("team-a"), "", args...)
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "configmaps/stuck -n team-a  (terminating for 3h)\n") {
			t.Errorf("%v: tree: code %d, %q %q", args, r.Code, r.Stdout, r.Stderr)
		}
	}
	r = cmdtesting.Run(NewCmdDoctor, cluster().WithNamespace("team-a"), "", "cm/stuck", "-o", "json")
	var d finalizev1alpha1.Diagnosis
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil || d.Kind != "Diagnosis" || d.Target == nil || d.Target.Name != "stuck" || len(d.Items) != 1 || d.Items[0].Cause == nil {
		t.Errorf("json: %v %q", err, r.Stdout)
	}
	r = cmdtesting.Run(NewCmdDoctor, cluster().WithNamespace("team-a"), "", "cm/live")
	if r.Code != 0 || r.Stdout != "configmaps/live -n team-a is not being deleted.\n" {
		t.Errorf("not stuck: code %d, %q %q", r.Code, r.Stdout, r.Stderr)
	}
	r = cmdtesting.Run(NewCmdDoctor, cluster().WithNamespace("team-a"), "", "cm/nope")
	if r.Code != 1 || !strings.Contains(r.Stderr, `"nope" not found`) {
		t.Errorf("not found: code %d, %q", r.Code, r.Stderr)
	}
}

// TestListsInPages: the doctor lists in pages like scan, with the same flag.
func TestListsInPages(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want int64
	}{{nil, 500}, {[]string{"--chunk-size", "20"}, 20}} {
		f := cluster()
		if r := cmdtesting.Run(NewCmdDoctor, f, "", tt.args...); r.Code != 0 {
			t.Fatalf("%v: %s", tt.args, r.Stderr)
		}
		limits := f.Lists.Limits()
		if len(limits) == 0 || slices.ContainsFunc(limits, func(l int64) bool { return l != tt.want }) {
			t.Errorf("%v: list limits %v, want all %d", tt.args, limits, tt.want)
		}
	}
}

// TestAPodWithinItsMarginIsNotCalledGoingShortly: a pod whose kubelet has not been waited
// for longer than --pod-grace-margin is not stuck yet, and the words say when it would be.
func TestAPodWithinItsMarginIsNotCalledGoingShortly(t *testing.T) {
	grace := int64(30)
	deleted := metav1.NewTime(time.Now().Add(-40 * time.Second))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web-0", UID: "uid-web-0", DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: &grace},
		Spec: corev1.PodSpec{NodeName: "worker-3"}}
	f := cmdtesting.NewFactory(cmdtesting.Namespace("team-a"), pod).WithNamespace("team-a")
	r := cmdtesting.Run(NewCmdDoctor, f, "", "pod/web-0")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "pods/web-0 -n team-a is being deleted: its grace period ended 40s ago, less than --pod-grace-margin (2m0s)") {
		t.Errorf("within the margin: code %d, %q %q", r.Code, r.Stdout, r.Stderr)
	}
	o := &Options{PodGraceMargin: 2 * time.Minute}
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	if got := o.podWithinMargin(now.Add(20*time.Second), now); got != "is being deleted: its grace period ends in 20s, by when its kubelet should have stopped it" {
		t.Errorf("in its grace period: %q", got)
	}
}
