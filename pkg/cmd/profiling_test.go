package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestProfile: --profile writes the profile kubectl's flag names to --profile-output, and
// an unknown one is a usage error.
func TestProfile(t *testing.T) {
	for _, name := range []string{"heap", "allocs", "cpu"} {
		out := filepath.Join(t.TempDir(), name+".pprof")
		streams, _, _, errOut := genericiooptions.NewTestIOStreams()
		root := NewCmdFinalize(streams)
		root.SetArgs([]string{"version", "--profile", name, "--profile-output", out})
		if err := root.Execute(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, errOut)
		}
		if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
			t.Errorf("%s: no profile written: %v", name, err)
		}
	}
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	root := NewCmdFinalize(streams)
	root.SetArgs([]string{"version", "--profile", "memory"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), `--profile "memory": must be one of none, cpu, heap`) {
		t.Errorf("an unknown profile: %v", err)
	}
}
