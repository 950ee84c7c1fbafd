package stress

import (
	"flag"
	"testing"
)

var (
	chaosSeed     = flag.Uint64("chaos.seed", 1, "the seed of the chaos run: the same seed makes the same choices")
	chaosAttempts = flag.Int("chaos.attempts", 300, "how many removal attempts the chaos run makes (make chaos: 2000)")
)

// The chaos run's world: one finalizer under test, others beside it, objects and the
// instances their provider answers about.
const (
	chaosFinalizer = "chaos.example.com/cleanup"
	chaosObjects   = 24
	chaosInstances = 16
	// chaosMarker is the configmap created after the run: once the watch shows it, the
	// watch has shown every write before it.
	chaosMarker = "the-end"
)

var chaosExtras = []string{"chaos.example.com/a", "chaos.example.com/b", "chaos.example.com/c"}

// TestChaosNeverRemovesOnAGuess makes verified and forced removals through `reconcile`
// and `remove`, two at a time, while writers remove other finalizers, delete objects and
// create namesakes, point the field the provider's URL reads at other instances, bump
// resourceVersions, and the instances themselves come and go. A watch sees every write
// to every object. Each time the finalizer disappears, the write must have removed it
// alone, and must be one this tool recorded: forced, or verified against a Gone the
// provider gave about that very uid and resourceVersion.
//
// The setup is in chaos_setup_test.go, the writers and removers in chaos_actors_test.go,
// the judgement of every write in chaos_check_test.go.
func TestChaosNeverRemovesOnAGuess(t *testing.T) {
	run := setUpChaos(t, *chaosSeed)
	run.act(t, *chaosAttempts)
	events := run.watch.finish(t, run.cms)
	check := newChaosCheck(t, run.truth, events, readAudits(t, run.audits, &run.counts))
	check.writes()
	check.recordedRemovals()
	check.summary(run)
}
