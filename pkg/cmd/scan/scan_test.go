package scan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	cmdtesting "github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/testing"
)

func cluster() *cmdtesting.Factory {
	return cmdtesting.NewFactory(cmdtesting.Namespace("team-a"),
		cmdtesting.StuckConfigMap("team-a", "old", 3*time.Hour, "a.example.com/x"),
		cmdtesting.StuckConfigMap("team-a", "new", time.Minute, "b.example.com/y"),
		cmdtesting.StuckConfigMap("team-b", "other", time.Hour, "a.example.com/x"))
}

func TestFlagValidation(t *testing.T) {
	cmdtesting.InvalidInvocations(t, NewCmdScan, cluster, []cmdtesting.Invocation{
		{Name: "negative age", Args: []string{"--older-than=-1m"}, Want: "error: --older-than must not be negative, got -1m0s\nSee 'scan -h' for help and examples\n"},
		{Name: "no concurrency", Args: []string{"--concurrency=0"}, Want: "error: --concurrency must be at least 1, got 0\nSee 'scan -h' for help and examples\n"},
		{Name: "negative chunks", Args: []string{"--chunk-size=-5"}, Want: "error: --chunk-size must not be negative, got -5\nSee 'scan -h' for help and examples\n"},
		{Name: "-A with -n", Args: []string{"-A"}, Namespace: "team-a", Want: "error: --namespace and --all-namespaces cannot be used together\nSee 'scan -h' for help and examples\n"},
		{Name: "unknown output", Args: []string{"-o", "table"}, Want: `error: unable to match a printer suitable for the output format "table", allowed formats are: wide,name,json,yaml,go-template,go-template-file,template,templatefile,jsonpath,jsonpath-as-json,jsonpath-file` + "\nSee 'scan -h' for help and examples\n"},
		{Name: "bad glob", Args: []string{"--finalizer", "a,,b"}, Want: "error: invalid --finalizer: pattern \"\": empty pattern\nSee 'scan -h' for help and examples\n"},
		{Name: "unknown type", Args: []string{"gizmos"}, Want: "error: the server doesn't have a resource type \"gizmos\"\n"},
	})
}

func TestTypeArguments(t *testing.T) {
	for _, args := range [][]string{{"configmaps"}, {"cm"}, {"configmap"}, {"ConfigMap"}, {"cm,databases.db.example.com"}, {"configmaps.v1."}} {
		r := cmdtesting.Run(NewCmdScan, cluster(), "", append(args, "-o", "name")...)
		if r.Code != 0 || !strings.Contains(r.Stdout, "configmap/old") {
			t.Errorf("%v: code %d, stdout %q, stderr %q", args, r.Code, r.Stdout, r.Stderr)
		}
	}
}

func TestPrinterChoice(t *testing.T) {
	tests := []struct {
		args  []string
		check func(t *testing.T, stdout string)
	}{
		{nil, func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "NAMESPACE   RESOURCE           AGE") || !strings.Contains(out, "configmaps/old") {
				t.Errorf("table: %q", out)
			}
		}},
		{[]string{"--no-headers"}, func(t *testing.T, out string) {
			if strings.Contains(out, "NAMESPACE") || len(strings.Split(strings.TrimSpace(out), "\n")) != 3 {
				t.Errorf("no headers: %q", out)
			}
		}},
		{[]string{"-o", "name"}, func(t *testing.T, out string) {
			if out != "configmap/old\nconfigmap/other\nconfigmap/new\n" {
				t.Errorf("names: %q", out)
			}
		}},
		{[]string{"-o", "json"}, func(t *testing.T, out string) {
			var list finalizev1alpha1.StuckObjectList
			if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "StuckObjectList" || len(list.Items) != 3 || list.Items[0].Cause == nil {
				t.Errorf("json (with causes): %v %q", err, out)
			}
		}},
		{[]string{"-o", "jsonpath={.items[*].target.name}"}, func(t *testing.T, out string) {
			if out != "old other new" {
				t.Errorf("jsonpath: %q", out)
			}
		}},
	}
	for _, tt := range tests {
		r := cmdtesting.Run(NewCmdScan, cluster(), "", tt.args...)
		if r.Code != 0 {
			t.Fatalf("%v: code %d: %s", tt.args, r.Code, r.Stderr)
		}
		tt.check(t, r.Stdout)
	}
}

func TestFiltersAndEmptyResult(t *testing.T) {
	r := cmdtesting.Run(NewCmdScan, cluster().WithNamespace("team-a"), "", "-o", "name", "--older-than", "1h")
	if r.Code != 0 || r.Stdout != "configmap/old\n" {
		t.Errorf("namespace and age: code %d, %q %q", r.Code, r.Stdout, r.Stderr)
	}
	r = cmdtesting.Run(NewCmdScan, cluster(), "", "--finalizer", "b.*", "-o", "name")
	if r.Stdout != "configmap/new\n" {
		t.Errorf("finalizer glob: %q", r.Stdout)
	}
	r = cmdtesting.Run(NewCmdScan, cluster().WithNamespace("nowhere"), "")
	if r.Code != 0 || r.Stdout != "" || r.Stderr != "No stuck objects found in namespace nowhere.\n" {
		t.Errorf("empty: code %d, %q %q", r.Code, r.Stdout, r.Stderr)
	}
}

// TestListsInPages: scan lists in pages of --chunk-size, 500 unless told.
func TestListsInPages(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want int64
	}{{nil, 500}, {[]string{"-o", "wide"}, 500}, {[]string{"--chunk-size", "50"}, 50}} {
		f := cluster()
		if r := cmdtesting.Run(NewCmdScan, f, "", tt.args...); r.Code != 0 {
			t.Fatalf("%v: %s", tt.args, r.Stderr)
		}
		limits := f.Lists.Limits()
		if len(limits) == 0 || slices.ContainsFunc(limits, func(l int64) bool { return l != tt.want }) {
			t.Errorf("%v: list limits %v, want all %d", tt.args, limits, tt.want)
		}
	}
}
