package preflight

import (
	"strings"
	"testing"

	cmdtesting "github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/testing"
)

func cluster() *cmdtesting.Factory {
	return cmdtesting.NewFactory(cmdtesting.Namespace("team-a"))
}

func TestInvocation(t *testing.T) {
	cmdtesting.InvalidInvocations(t, NewCmdPreflight, cluster, []cmdtesting.Invocation{
		{Name: "nothing", Args: nil, Want: "error: name the objects to delete (TYPE/NAME... or TYPE NAME...) or a release (--helm-release NAME -n NAMESPACE)\nSee 'preflight -h' for help and examples\n"},
		{Name: "wide", Args: []string{"ns/team-a", "-o", "wide"}, Want: "error: --output wide is not supported by preflight"},
		{Name: "unknown format", Args: []string{"ns/team-a", "-o", "table"}, Want: "error: unable to match a printer suitable for the output format \"table\""},
		{Name: "unknown type", Args: []string{"gizmo/x"}, Want: `error: the server doesn't have a resource type "gizmo"`},
		{Name: "type without name", Args: []string{"ns/"}, Want: `error: "ns/" is not TYPE/NAME`},
		{Name: "no concurrency", Args: []string{"ns/team-a", "--concurrency", "0"}, Want: "error: --concurrency must be at least 1, got 0"},
	})
}

func TestANamedObjectThatDoesNotExist(t *testing.T) {
	r := cmdtesting.Run(NewCmdPreflight, cluster(), "", "ns/team-b")
	if r.Code != 1 || r.Stdout != "" || !strings.Contains(r.Stderr, "namespaces/team-b") || !strings.Contains(r.Stderr, "not found") {
		t.Errorf("code %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
}
