package cmd

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// profiles are the profiles --profile captures, as kubectl's flag of that name names
// them: cpu for the whole run, the others written as the run ends (heap is what is in use
// then, after a garbage collection; allocs every allocation of the run).
var profiles = []string{"none", "cpu", "heap", "allocs", "goroutine", "threadcreate", "block", "mutex"}

// profiling is kubectl's --profile and --profile-output: a pprof profile of one run.
type profiling struct {
	name, output string
	file         *os.File
}

func (p *profiling) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&p.name, "profile", "none", "Name of profile to capture. One of ("+strings.Join(profiles, "|")+").")
	fs.StringVar(&p.output, "profile-output", "profile.pprof", "Name of the file to write the profile to.")
}

// start begins the profile (cpu), or prepares the one written by stop.
func (p *profiling) start() error {
	if !slices.Contains(profiles, p.name) {
		return fmt.Errorf("--profile %q: must be one of %s", p.name, strings.Join(profiles, ", "))
	}
	switch p.name {
	case "none":
		return nil
	case "block":
		runtime.SetBlockProfileRate(1)
	case "mutex":
		runtime.SetMutexProfileFraction(1)
	}
	f, err := os.Create(p.output)
	if err != nil {
		return fmt.Errorf("--profile-output: %w", err)
	}
	p.file = f
	if p.name == "cpu" {
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			p.file = nil
			return fmt.Errorf("--profile cpu: %w", err)
		}
	}
	return nil
}

// stop writes the profile, once the command ran.
func (p *profiling) stop() error {
	if p.file == nil {
		return nil
	}
	f := p.file
	p.file = nil
	var err error
	switch p.name {
	case "cpu":
		pprof.StopCPUProfile()
	case "heap":
		runtime.GC() // what is in use, not what the last cycle left
		err = pprof.Lookup("heap").WriteTo(f, 0)
	default:
		err = pprof.Lookup(p.name).WriteTo(f, 0)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the %s profile to %s: %w", p.name, p.output, err)
	}
	return nil
}
