package cmd

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// --version prints what "version" prints, on stdout, and nothing else, as cobra's
// --version did: before the arguments are checked and before --profile is read, so that
// arguments or a bad --profile beside it change nothing and no profile is written. The
// command prints it, not cobra's version template (make verify's hack/deadcode says why).
func TestVersionFlagPrintsWhatVersionPrints(t *testing.T) {
	run := func(args ...string) (string, string, error) {
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		root := NewCmdFinalize(streams)
		root.SetArgs(args)
		root.SetOut(out)
		err := root.Execute()
		return out.String(), errOut.String(), err
	}
	want, _, err := run("version")
	if err != nil || want == "" {
		t.Fatalf("version: %q, %v", want, err)
	}
	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	for _, args := range [][]string{
		{"--version"},
		{"--version", "extra", "args"},
		{"--version", "--profile", "bogus"},
		{"--version", "--profile", "heap", "--profile-output", filepath.Join(t.TempDir(), "missing", "x")},
		{"--version", "--profile", "cpu", "--profile-output", profile},
		{"-v", "4", "--version"},
	} {
		got, errOut, err := run(args...)
		if err != nil || got != want || errOut != "" {
			t.Errorf("%q: stdout %q, stderr %q, error %v; version prints %q", args, got, errOut, err, want)
		}
	}
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		t.Errorf("--version --profile cpu wrote a profile: %v", err)
	}
	// Without the flag, the root shows its help, and takes no arguments.
	if got, _, err := run(); err != nil || got == want {
		t.Errorf("no flag: stdout %q, error %v; want the help", got, err)
	}
	if _, _, err := run("--version=false", "extra"); err == nil {
		t.Errorf("an argument without --version: no error")
	}
}
