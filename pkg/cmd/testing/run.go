package testing

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
)

// NewCmd is a command's constructor.
type NewCmd func(util.Factory, genericiooptions.IOStreams) *cobra.Command

// Result is what one run of a command printed and its exit code.
type Result struct {
	Stdout, Stderr string
	Code           int
	Err            error
}

// Run runs cmd with args the way main does, and renders its error the same way.
func Run(newCmd NewCmd, f util.Factory, stdin string, args ...string) Result {
	streams, in, out, errOut := genericiooptions.NewTestIOStreams()
	in.WriteString(stdin)
	cmd := newCmd(f, streams)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	err := cmd.ExecuteContext(context.Background())
	util.PrintError(errOut, err)
	return Result{Stdout: out.String(), Stderr: errOut.String(), Code: util.ExitCode(err), Err: err}
}

// Invocation is an invalid invocation of a command, and the start of what it prints.
type Invocation struct {
	Name string
	Args []string
	// Namespace, if set, is given as with -n.
	Namespace string
	// Want is how stderr starts.
	Want string
}

// InvalidInvocations runs each invocation on a cluster of its own and expects exit
// status 2, nothing on stdout, and the error it wants on stderr.
func InvalidInvocations(t *testing.T, newCmd NewCmd, cluster func() *Factory, invocations []Invocation) {
	t.Helper()
	for _, inv := range invocations {
		t.Run(inv.Name, func(t *testing.T) {
			f := cluster()
			if inv.Namespace != "" {
				f.WithNamespace(inv.Namespace)
			}
			r := Run(newCmd, f, "", inv.Args...)
			if r.Code != 2 || !strings.HasPrefix(r.Stderr, inv.Want) || r.Stdout != "" {
				t.Errorf("code %d, stdout %q, stderr\n%q\nwant it to start with\n%q", r.Code, r.Stdout, r.Stderr, inv.Want)
			}
		})
	}
}
