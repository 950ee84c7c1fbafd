package util

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
)

// TestEveryOutputOfTheProcessIsRedacted: what main sets up. The streams redact a value
// written in two pieces, and klog's output at the -v given (a request's body at -v=8) goes
// through the redacting stderr, nothing above it; the streams still tell a terminal.
func TestEveryOutputOfTheProcessIsRedacted(t *testing.T) {
	const secret = "unit-streams-t0ken"
	if err := redact.Register(secret); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	streams, flush := RedactStreams(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	_, _ = streams.Out.Write([]byte(`{"evidence": "unit-str`))
	_, _ = streams.Out.Write([]byte(`eams-t0ken"}` + "\n"))

	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", "8")
	LogTo(streams.ErrOut)
	t.Cleanup(func() {
		klog.ClearLogger()
		_ = fs.Set("v", "0")
	})
	klog.V(8).Infof("Response Body: %s", `{"token":"`+secret+`"}`)
	klog.V(8).InfoS("Request Body", "body", "the token is "+secret)
	klog.V(9).Info("not at -v=8")
	flush()
	if out.String() != `{"evidence": "REDACTED"}`+"\n" {
		t.Errorf("stdout %q", out.String())
	}
	if strings.Contains(errOut.String(), "t0ken") || strings.Contains(errOut.String(), "not at") ||
		!strings.Contains(errOut.String(), `Response Body: {"token":"REDACTED"}`) || !strings.Contains(errOut.String(), `"Request Body" body="the token is REDACTED"`) {
		t.Errorf("stderr:\n%s", errOut.String())
	}
	if IsTerminal(os.Stdout) != IsTerminal(redact.NewWriter(os.Stdout)) || unwrapWriter(streams.Out) != &out {
		t.Error("a redacting writer hides the terminal it writes to")
	}
}
