package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// probeEnv makes the test binary a probe: it does what main does with GOGC and prints the
// collector's percent.
const probeEnv = "KUBECTL_FINALIZE_GOGC_PROBE"

func TestMain(m *testing.M) {
	if os.Getenv(probeEnv) != "" {
		setGCPercent(os.LookupEnv)
		fmt.Print(debug.SetGCPercent(100))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Without GOGC in the environment, or with it empty (the runtime's unset), the collector
// runs at gcPercent; with it, at what the environment says, off included. Each case is a
// process of its own, as the runtime reads GOGC when it starts.
func TestGOGCIsOursUnlessTheEnvironmentSetsIt(t *testing.T) {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") })
	for _, c := range []struct {
		gogc string // "unset" for none
		want string
	}{
		{"unset", fmt.Sprint(gcPercent)},
		{"", fmt.Sprint(gcPercent)},
		{"200", "200"},
		{"100", "100"},
		{"off", "-1"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(slices.Clone(env), probeEnv+"=1")
		if c.gogc != "unset" {
			cmd.Env = append(cmd.Env, "GOGC="+c.gogc)
		}
		out, err := cmd.Output()
		if err != nil || string(out) != c.want {
			t.Errorf("GOGC %q: the collector runs at %q (%v), want %s", c.gogc, out, err, c.want)
		}
	}
}
