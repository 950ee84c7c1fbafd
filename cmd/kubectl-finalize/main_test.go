package main

import (
	"runtime/debug"
	"testing"
)

// Without GOGC in the environment the collector runs at gcPercent; with it, at what the
// environment says (the runtime read it at start), whatever the value, off included.
func TestGOGCIsOursUnlessTheEnvironmentSetsIt(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	setGCPercent(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GOGC unset: the collector runs at %d, want %d", got, gcPercent)
	}
	for _, v := range []string{"100", "off", "200"} {
		debug.SetGCPercent(100)
		setGCPercent(func(name string) (string, bool) { return v, name == "GOGC" })
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("GOGC=%s: setGCPercent changed the collector to %d", v, got)
		}
	}
}
