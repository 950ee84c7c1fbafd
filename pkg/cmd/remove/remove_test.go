package remove

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	clienttesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	cmdtesting "github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/testing"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
)

func cluster() *cmdtesting.Factory {
	return cmdtesting.NewFactory(cmdtesting.Namespace("team-a"),
		cmdtesting.StuckConfigMap("team-a", "cfg", time.Hour, "a.example.com/x", "orphan")).WithNamespace("team-a")
}

var force = []string{"--force-unverified", "--reason", "INC-1"}

func TestInvocation(t *testing.T) {
	cmdtesting.InvalidInvocations(t, NewCmdRemove, cluster, []cmdtesting.Invocation{
		{Name: "no object", Args: []string{"--finalizer", "x"}, Want: "error: you must name at least one object: TYPE/NAME or TYPE NAME\nSee 'remove -h' for help and examples\n"},
		{Name: "a type without names", Args: []string{"cm", "--finalizer", "x"}, Want: "error: you must name at least one cm\n"},
		{Name: "mixed forms", Args: []string{"cm/a", "b", "--finalizer", "x"}, Want: `error: "b" is not TYPE/NAME: name every object as TYPE/NAME, or give TYPE NAME...`},
		{Name: "a type twice", Args: []string{"cm", "cm/a", "--finalizer", "x"}, Want: `error: there is no need to give a type in "cm/a" when the type is already "cm"`},
		{Name: "no finalizer", Args: []string{"cm/cfg"}, Want: "error: name the finalizers to remove with --finalizer, or give --all-finalizers\n"},
		{Name: "both", Args: []string{"cm/cfg", "--finalizer", "x", "--all-finalizers"}, Want: "error: --finalizer and --all-finalizers cannot be used together\n"},
		{Name: "force without reason", Args: []string{"cm/cfg", "--finalizer", "x", "--force-unverified"}, Want: "error: --force-unverified requires --reason: say why removing unverified finalizers is safe, for the audit\n"},
		{Name: "reason without force", Args: []string{"cm/cfg", "--finalizer", "x", "--reason", "y"}, Want: "error: --reason only applies with --force-unverified\n"},
		{Name: "empty finalizer", Args: []string{"cm/cfg", "--finalizer", ""}, Want: "error: name the finalizers"},
		{Name: "dry run without value", Args: []string{"cm/cfg", "--finalizer", "x", "--dry-run"}, Want: `error: --dry-run flag without a value was specified. A value must be set: "none", "server", or "client".`},
		{Name: "bad dry run", Args: []string{"cm/cfg", "--finalizer", "x", "--dry-run=maybe"}, Want: `error: Invalid dry-run value (maybe). Must be "none", "server", or "client".`},
		{Name: "bad output", Args: []string{"cm/cfg", "--finalizer", "x", "-o", "wide"}, Want: `error: unable to match a printer suitable for the output format "wide", allowed formats are: json,yaml`},
		{Name: "unknown type", Args: []string{"gizmo/x", "--finalizer", "x"}, Want: `error: the server doesn't have a resource type "gizmo"`},
		{Name: "unsafe without reason", Args: []string{"cm/cfg", "--unsafe-delete"}, Want: "error: --unsafe-delete requires --force-unverified and --reason: say why"},
		{Name: "unsafe with a finalizer", Args: append([]string{"cm/cfg", "--unsafe-delete", "--finalizer", "x"}, force...), Want: "error: --unsafe-delete deletes the whole object, which nobody can read, so no finalizer of it can be named"},
		{Name: "unsafe twice", Args: append([]string{"cm/cfg", "cm/other", "--unsafe-delete"}, force...), Want: "error: --unsafe-delete deletes one object per run, got 2: name one (TYPE/NAME)"},
		{Name: "unsafe with a policy", Args: append([]string{"cm/cfg", "--unsafe-delete", "--policy", "p.yaml"}, force...), Want: "error: --unsafe-delete cannot go with --policy"},
	})
}

// TestRefusalsNameTheFlagThatAllowsThem: each kind of refusal points to its flag; a
// refusal no flag can lift exits 1.
func TestRefusalsNameTheFlagThatAllowsThem(t *testing.T) {
	tests := []struct {
		args      []string
		code      int
		want, end string
	}{
		{[]string{"--finalizer", "a.example.com/x"}, 2, "nothing verified that what the finalizer guards is done", "; to remove it anyway: --force-unverified --reason TEXT\n"},
		{append([]string{"--finalizer", "orphan"}, force...), 2, "removing it by hand breaks that guarantee", "; to remove it anyway: --allow-system\n"},
		{append([]string{"--finalizer", "nope"}, force...), 1, "finalizer nope: it has no such finalizer (it has: a.example.com/x, orphan)", ", orphan)\n"},
	}
	for _, tt := range tests {
		r := cmdtesting.Run(NewCmdRemove, cluster(), "", append([]string{"cm/cfg", "--yes"}, tt.args...)...)
		if r.Code != tt.code || !strings.Contains(r.Stderr, tt.want) || !strings.HasSuffix(r.Stderr, tt.end) || !strings.HasPrefix(r.Stderr, "Nothing was removed.\n") {
			t.Errorf("%v: code %d (want %d), stderr:\n%s", tt.args, r.Code, tt.code, r.Stderr)
		}
	}
	for kind := range unlockedBy {
		switch kind {
		case finalizev1alpha1.RefusalUnverified, finalizev1alpha1.RefusalTooYoung, finalizev1alpha1.RefusalSystem, finalizev1alpha1.RefusalStranding:
		case finalizev1alpha1.RefusalReadable, finalizev1alpha1.RefusalGateOff, finalizev1alpha1.RefusalForbidden:
			t.Errorf("refusal kind %s has a flag, but nothing but the object's state, the API server's gate or a grant allows it", kind)
		default:
			t.Errorf("refusal kind %s has a flag but is not known", kind)
		}
	}
}

func TestWithoutATerminalItAsksForYes(t *testing.T) {
	r := cmdtesting.Run(NewCmdRemove, cluster(), "y\n", append([]string{"cm/cfg", "--finalizer", "a.example.com/x"}, force...)...)
	if r.Code != 2 || !strings.Contains(r.Stderr, "stdin is not a terminal; pass --yes to confirm") {
		t.Errorf("code %d, stderr %q", r.Code, r.Stderr)
	}
}

func TestPreviewAndDryRun(t *testing.T) {
	r := cmdtesting.Run(NewCmdRemove, cluster(), "", append([]string{"cm/cfg", "--finalizer", "a.example.com/x", "--dry-run=client"}, force...)...)
	if r.Code != 0 || r.Stdout != "configmaps/cfg -n team-a: finalizer a.example.com/x would be removed (client dry run)\n" {
		t.Errorf("code %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	wantPreview := "About to remove 1 finalizer from 1 object (dry run):\n" +
		"OBJECT                     FINALIZER         OWNER       CAUSE                VERIFICATION\n" +
		"configmaps/cfg -n team-a   a.example.com/x   <unknown>   ControllerInactive   UNVERIFIED, forced: INC-1\n"
	if !strings.Contains(r.Stderr, wantPreview) {
		t.Errorf("preview:\n%s\nwant\n%s", r.Stderr, wantPreview)
	}
	r = cmdtesting.Run(NewCmdRemove, cluster(), "", append([]string{"cm/cfg", "--finalizer", "a.example.com/x", "--dry-run=client", "-o", "json"}, force...)...)
	var got finalizev1alpha1.RemovalPlan
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || got.Kind != "RemovalPlan" || got.DryRun != "client" || len(got.Actions) != 1 ||
		got.Actions[0].Result != finalizev1alpha1.ResultWouldRemove || got.Actions[0].Reason != "INC-1" {
		t.Errorf("-o json: %v\n%s", err, r.Stdout)
	}
}

// TestARemovalGoesThroughTheExecutor: the guarded patch, an Event, an audit line.
func TestARemovalGoesThroughTheExecutor(t *testing.T) {
	f := cluster()
	r := cmdtesting.Run(NewCmdRemove, f, "", append([]string{"cm/cfg", "--finalizer", "a.example.com/x", "--yes"}, force...)...)
	if r.Code != 0 || r.Stdout != "configmaps/cfg -n team-a: finalizer a.example.com/x removed; still held by: orphan\n" {
		t.Fatalf("code %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	var patches []string
	for _, a := range f.Fakes.Metadata.Actions() {
		if p, ok := a.(clienttesting.PatchActionImpl); ok {
			patches = append(patches, string(p.GetPatch()))
		}
	}
	want := `[{"op":"test","path":"/metadata/uid","value":"uid-cfg"},{"op":"test","path":"/metadata/finalizers/0","value":"a.example.com/x"},{"op":"remove","path":"/metadata/finalizers/0"}]`
	if len(patches) != 1 || patches[0] != want {
		t.Errorf("patches %q, want [%s]", patches, want)
	}
	var rec write.Record
	line := r.Stderr[strings.LastIndex(strings.TrimSpace(r.Stderr), "\n")+1:]
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Action != plan.ReasonForceRemoved || rec.Reason != "INC-1" || !slices.Equal(rec.Remaining, []string{"orphan"}) || rec.Event == "" {
		t.Errorf("audit line %q: %v %+v", line, err, rec)
	}
}
