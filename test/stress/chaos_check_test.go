package stress

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
)

// readAudits reads every record this tool wrote, by uid, and counts the verifications
// made again and the decisions made again after a conflict.
func readAudits(t *testing.T, paths []string, counts *chaosCounts) map[types.UID][]write.Record {
	records := map[types.UID][]write.Record{}
	for _, path := range paths {
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var rec write.Record
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("an audit line: %v", err)
			}
			records[rec.Target.UID] = append(records[rec.Target.UID], rec)
			counts.reverified.Add(int64(rec.Reverified))
			if rec.Attempts > 1 {
				counts.conflicts.Add(int64(rec.Attempts - 1))
			}
		}
		f.Close()
	}
	return records
}

// chaosCheck judges a chaos run: every write the watch saw against every record this
// tool wrote and every answer the provider gave. Its methods are test helpers: what
// they log is reported at the test's own lines in chaos_test.go, which `make chaos` keeps.
type chaosCheck struct {
	t       *testing.T
	truth   *truth
	events  []watch.Event
	records map[types.UID][]write.Record
	// removedAt holds uid/resourceVersion of every version the finalizer was removed from.
	removedAt map[types.UID]bool
	// What the writes were: removals of the finalizer, and how each is accounted for.
	removals, verified, forced, raced, wrongful int
	// racing counts the writes told they removed a last finalizer another write removed.
	racing int
}

func newChaosCheck(t *testing.T, tr *truth, events []watch.Event, records map[types.UID][]write.Record) *chaosCheck {
	return &chaosCheck{t: t, truth: tr, events: events, records: records, removedAt: map[types.UID]bool{}}
}

// versionKey is the key of removedAt.
func versionKey(uid types.UID, rv string) types.UID { return uid + types.UID("/"+rv) }

// writes judges every write the watch saw that removed the finalizer under test.
func (c *chaosCheck) writes() {
	c.t.Helper()
	history := map[types.UID][]*corev1.ConfigMap{}
	for _, ev := range c.events {
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok || cm.Name == chaosMarker {
			continue
		}
		versions := history[cm.UID]
		history[cm.UID] = append(versions, cm)
		if len(versions) == 0 || !slices.Contains(versions[len(versions)-1].Finalizers, chaosFinalizer) {
			continue
		}
		old := versions[len(versions)-1]
		// The write that takes the last finalizer off a deleted object deletes it, and
		// the watch shows the deletion with the object as last stored: the finalizers
		// that write removed are all those it still shows.
		after := cm.Finalizers
		switch {
		case ev.Type == watch.Deleted:
			after = nil
		case slices.Contains(cm.Finalizers, chaosFinalizer):
			continue
		}
		c.removal(ev, cm, old, after, versions)
	}
}

// removal judges one write that took the finalizer off old, leaving after: it must
// have removed that finalizer alone, and be accounted for by a verification of that
// version, a forced removal of that uid, or kube-apiserver's delete-during-update race.
func (c *chaosCheck) removal(ev watch.Event, cm, old *corev1.ConfigMap, after []string, versions []*corev1.ConfigMap) {
	t := c.t
	t.Helper()
	c.removals++
	c.removedAt[versionKey(cm.UID, old.ResourceVersion)] = true
	want := slices.DeleteFunc(slices.Clone(old.Finalizers), func(f string) bool { return f == chaosFinalizer })
	if len(after) != len(want) || !slices.Equal(after, want) && len(want) > 0 {
		c.wrongful++
		t.Errorf("%s (uid %s) went from %v to %v at resourceVersion %s: more than the one finalizer changed", cm.Name, cm.UID, old.Finalizers, after, cm.ResourceVersion)
	}
	byVerification, byForce := c.recorded(cm, old)
	if !byVerification && !byForce && ev.Type == watch.Deleted && c.deletedInRace(cm, old, versions) {
		return
	}
	switch {
	case byVerification:
		c.verified++
	case byForce:
		c.forced++
	default:
		c.wrongful++
		for _, e := range c.events {
			if o, ok := e.Object.(*corev1.ConfigMap); ok && o.UID == cm.UID {
				t.Logf("  %s rv %s finalizers %v instance %s deletionTimestamp %v", e.Type, o.ResourceVersion, o.Finalizers, o.Annotations["instance"], o.DeletionTimestamp)
			}
		}
		t.Errorf("%s (uid %s): finalizer %s removed from resourceVersion %s (instance %s), and no verification of that version nor forced removal of that uid accounts for it; records: %+v",
			cm.Name, cm.UID, chaosFinalizer, old.ResourceVersion, old.Annotations["instance"], c.records[cm.UID])
	}
}

// recorded says whether a record accounts for the removal from old: a verified removal
// of that very version, about which the provider answered Gone, or a forced one.
func (c *chaosCheck) recorded(cm, old *corev1.ConfigMap) (byVerification, byForce bool) {
	c.t.Helper()
	for _, rec := range c.records[cm.UID] {
		switch {
		case rec.Finalizer != chaosFinalizer || rec.Result != write.Removed:
		case rec.Verified && rec.ResourceVersion == old.ResourceVersion:
			byVerification = c.truth.saidGone(cm.UID, old.ResourceVersion, old.Annotations["instance"])
			if !byVerification {
				c.t.Errorf("%s (uid %s) at resourceVersion %s: removed as verified, but the provider never answered Gone about instance %s of that version",
					cm.Name, cm.UID, old.ResourceVersion, old.Annotations["instance"])
			}
		case !rec.Verified && rec.Reason != "":
			byForce = true
		}
	}
	return byVerification, byForce
}

// deletedInRace says whether a deletion is a verified removal's: kube-apiserver deletes
// an object whose finalizers a write emptied after that write's checks, with the uid as
// the only precondition (genericregistry.Store: Update, then deleteWithoutFinalizers): a
// write that lands in between is deleted with the object. The signature: a removal
// verified against version V, then only writes that changed no finalizer, then the
// deletion.
func (c *chaosCheck) deletedInRace(cm, old *corev1.ConfigMap, versions []*corev1.ConfigMap) bool {
	c.t.Helper()
	for _, rec := range c.records[cm.UID] {
		// The verified version, followed only by writes that changed no finalizer.
		at := slices.IndexFunc(versions, func(v *corev1.ConfigMap) bool { return v.ResourceVersion == rec.ResourceVersion })
		if !rec.Verified || rec.Result != write.Removed || at < 0 || at == len(versions)-1 ||
			slices.ContainsFunc(versions[at:], func(v *corev1.ConfigMap) bool { return !slices.Equal(v.Finalizers, old.Finalizers) }) {
			continue
		}
		before := versions[at]
		if !c.truth.saidGone(cm.UID, before.ResourceVersion, before.Annotations["instance"]) {
			continue
		}
		c.raced++
		c.removedAt[versionKey(cm.UID, before.ResourceVersion)] = true
		c.t.Logf("%s (uid %s): verified at resourceVersion %s and written; %d concurrent writes made %s (instance %s -> %s) before kube-apiserver deleted it",
			cm.Name, cm.UID, before.ResourceVersion, len(versions)-1-at, old.ResourceVersion, before.Annotations["instance"], old.Annotations["instance"])
		return true
	}
	return false
}

// recordedRemovals checks that every removal this tool recorded shows in the watch, once. A
// finalizer comes off an object once (none can be added to an object being deleted), so
// a uid has at most one removal. Two writes may both be told they removed it only when it
// was the last one and the object went with it: the API server lets every write that
// empties the list of a deleted object succeed, because "deletion is racy"
// (genericregistry.Store, deleteWithoutFinalizers), and both were checked against the
// same version.
func (c *chaosCheck) recordedRemovals() {
	c.t.Helper()
	t := c.t
	for uid, recs := range c.records {
		var removed []write.Record
		for _, rec := range recs {
			if rec.Finalizer == chaosFinalizer && rec.Result == write.Removed {
				removed = append(removed, rec)
			}
		}
		seen := 0
		for k := range c.removedAt {
			if strings.HasPrefix(string(k), string(uid)+"/") {
				seen++
			}
		}
		switch {
		case len(removed) == 0:
		case seen == 0:
			t.Errorf("uid %s: recorded as removed, never seen removed: %+v", uid, removed)
		case len(removed) > 1 && slices.ContainsFunc(removed, func(r write.Record) bool { return !r.Deleted }):
			t.Errorf("uid %s: %d records claim the one removal, not all of them the deletion: %+v", uid, len(removed), removed)
		case len(removed) > 1:
			c.racing += len(removed) - 1
		}
		for _, rec := range removed {
			if rec.Verified && !c.removedAt[versionKey(uid, rec.ResourceVersion)] {
				t.Errorf("recorded as removed at %s, not removed from that version: %+v", rec.ResourceVersion, rec)
			}
		}
	}
}

// summary logs what the run did and what the watch saw, and fails a run that removed
// too little to show anything.
func (c *chaosCheck) summary(run *chaosRun) {
	t, counts := c.t, &run.counts
	t.Helper()
	var ops []string
	counts.ops.Range(func(k, v any) bool {
		ops = append(ops, fmt.Sprintf("%s %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	sort.Strings(ops)
	t.Logf("seed %d: %d removal attempts (%d reconcile passes, %d verified removes, %d forced removes)", run.seed, counts.attempts.Load(),
		counts.passes.Load(), counts.verifiedRemoves.Load(), counts.forcedRemoves.Load())
	t.Logf("results: %d removed, %d already removed or gone, %d refused or kept, %d failed; %d verified again after a change, %d decided again after a conflict",
		counts.removed.Load(), counts.alreadyRemoved.Load(), counts.refused.Load(), counts.failed.Load(), counts.reverified.Load(), counts.conflicts.Load())
	t.Logf("concurrent writes: %s; the provider answered %d times", strings.Join(ops, ", "), run.truth.asked)
	t.Logf("the watch saw %d writes, %d of them removed the finalizer: %d verified for that uid and resourceVersion, %d forced; %d wrongful",
		len(c.events), c.removals, c.verified, c.forced, c.wrongful)
	t.Logf("%d deletions took a concurrent write made after a verified write's checks with them (kube-apiserver's delete-during-update race)", c.raced)
	t.Logf("%d more writes raced to take the same last finalizer off an object being deleted, and were told they had", c.racing)
	if c.removals == 0 || c.verified == 0 || c.forced == 0 {
		t.Errorf("the run removed too little to show anything: %d removals, %d verified, %d forced", c.removals, c.verified, c.forced)
	}
}
