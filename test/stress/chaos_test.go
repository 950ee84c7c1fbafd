package stress

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
)

var (
	chaosSeed     = flag.Uint64("chaos.seed", 1, "the seed of the chaos run: the same seed makes the same choices")
	chaosAttempts = flag.Int("chaos.attempts", 300, "how many removal attempts the chaos run makes (make chaos: 2000)")
)

// truth is the external world of the chaos run: instances that exist or not. Its
// provider endpoint answers for one object version, /verify/UID/RV/INSTANCE, and every
// answer it gives is logged, so that each removal can be traced to a Gone about the very
// uid and resourceVersion it was written against.
type truth struct {
	*httptest.Server
	caFile string
	mu     sync.Mutex
	gone   map[string]bool
	said   map[string]bool // uid/rv/instance -> answered Gone
	asked  int
}

func newTruth(t *testing.T) *truth {
	tr := &truth{gone: map[string]bool{}, said: map[string]bool{}}
	tr.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/verify/"), "/")
		if len(parts) != 3 {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
		tr.mu.Lock()
		gone := tr.gone[parts[2]]
		tr.asked++
		if gone {
			tr.said[strings.Join(parts, "/")] = true
		}
		tr.mu.Unlock()
		if gone {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte(`{"state":"available"}`))
	}))
	t.Cleanup(tr.Close)
	tr.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(tr.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tr.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tr
}

func (tr *truth) set(instance string, gone bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.gone[instance] = gone
}

func (tr *truth) saidGone(uid types.UID, rv, instance string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.said[string(uid)+"/"+rv+"/"+instance]
}

// chaosCounts are what the run did.
type chaosCounts struct {
	attempts, removed, alreadyRemoved, refused, failed, reverified, conflicts atomic.Int64
	passes, verifiedRemoves, forcedRemoves                                    atomic.Int64
	ops                                                                       sync.Map // kind -> *atomic.Int64
}

func (c *chaosCounts) op(kind string) {
	v, _ := c.ops.LoadOrStore(kind, &atomic.Int64{})
	v.(*atomic.Int64).Add(1)
}

// TestChaosNeverRemovesOnAGuess makes verified and forced removals through `reconcile`
// and `remove`, two at a time, while writers remove other finalizers, delete objects and
// create namesakes, point the field the provider's URL reads at other instances, bump
// resourceVersions, and the instances themselves come and go. A watch sees every write
// to every object. Each time the finalizer disappears, the write must have removed it
// alone, and must be one this tool recorded: forced, or verified against a Gone the
// provider gave about that very uid and resourceVersion.
func TestChaosNeverRemovesOnAGuess(t *testing.T) {
	const (
		fin       = "chaos.example.com/cleanup"
		objects   = 24
		instances = 16
	)
	extras := []string{"chaos.example.com/a", "chaos.example.com/b", "chaos.example.com/c"}
	seed := *chaosSeed
	ns := cp.Namespace(t)
	kube := cp.Kube(t)
	cms := kube.CoreV1().ConfigMaps(ns)
	tr := newTruth(t)
	for i := range instances {
		tr.set(fmt.Sprintf("i-%02d", i), i%2 == 0)
	}
	policy := cli.WritePolicy(t, "", fmt.Sprintf(`- name: chaos
  finalizers: [%s]
  resources: [configmaps]
  rateLimit: {qps: 1000, burst: 1000}
  verify:
    http:
      url: "%s/verify/{.metadata.uid}/{.metadata.resourceVersion}/{.metadata.annotations.instance}"
      tls: {caFile: %q}
      timeout: 5s
`, fin, tr.URL, tr.caFile))

	// The watch starts before the first object: it sees every write.
	start, err := cms.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(context.Background(), metav1.ListOptions{ResourceVersion: start.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	var (
		eventsMu sync.Mutex
		events   []watch.Event
	)
	watched := make(chan error, 1)
	stopWatch := make(chan struct{})
	go func() {
		defer w.Stop()
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					watched <- errors.New("the watch ended early")
					return
				}
				if ev.Type == watch.Error {
					watched <- fmt.Errorf("the watch failed: %w", apierrors.FromObject(ev.Object))
					return
				}
				eventsMu.Lock()
				events = append(events, ev)
				eventsMu.Unlock()
			case <-stopWatch:
				watched <- nil
				return
			}
		}
	}()

	// A live object keeps the rule's provider checked against something that exists.
	if _, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "control", Finalizers: []string{fin},
		Annotations: map[string]string{"instance": "control-live"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cms.Patch(context.Background(), "control", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	var counts chaosCounts
	create := func(rng *rand.Rand, name string) {
		finalizers := []string{fin}
		for _, e := range extras {
			if rng.IntN(2) == 0 {
				finalizers = append(finalizers, e)
			}
		}
		rng.Shuffle(len(finalizers), func(i, j int) { finalizers[i], finalizers[j] = finalizers[j], finalizers[i] })
		_, err := cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers,
			Annotations: map[string]string{"instance": fmt.Sprintf("i-%02d", rng.IntN(instances))}}}, metav1.CreateOptions{})
		if err == nil {
			_ = cms.Delete(context.Background(), name, metav1.DeleteOptions{})
			counts.op("create a namesake")
		}
	}
	setup := rand.New(rand.NewPCG(seed, 0))
	names := make([]string, objects)
	for i := range names {
		names[i] = fmt.Sprintf("obj-%02d", i)
		create(setup, names[i])
	}
	t.Cleanup(func() {
		for _, name := range names {
			_, _ = cms.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// Writers: everything but removing the finalizer under test.
	for i := range 2 {
		rng := rand.New(rand.NewPCG(seed, uint64(100+i)))
		wg.Go(func() {
			for ctx.Err() == nil {
				time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
				chaosWrite(ctx, rng, kube, ns, names[rng.IntN(len(names))], fin, instances, tr, &counts, create)
			}
		})
	}
	// Removers: reconcile passes, verified and forced removes.
	dir := t.TempDir()
	var audits []string
	for i := range 2 {
		rng := rand.New(rand.NewPCG(seed, uint64(200+i)))
		audit := filepath.Join(dir, fmt.Sprintf("audit-%d.jsonl", i))
		audits = append(audits, audit)
		wg.Go(func() {
			for ctx.Err() == nil && counts.attempts.Load() < int64(*chaosAttempts) {
				chaosRemove(t, rng, ns, names[rng.IntN(len(names))], fin, policy, audit, &counts)
			}
		})
	}
	deadline := time.After(10 * time.Minute)
	for counts.attempts.Load() < int64(*chaosAttempts) {
		select {
		case <-deadline:
			t.Errorf("only %d attempts in 10 minutes", counts.attempts.Load())
			counts.attempts.Store(int64(*chaosAttempts))
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	wg.Wait()
	// The last writes reach the watch.
	marker, err := cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "the-end"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for waited := 0; waited < 100; waited++ {
		time.Sleep(100 * time.Millisecond)
		eventsMu.Lock()
		seen := slices.ContainsFunc(events, func(ev watch.Event) bool {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			return ok && cm.UID == marker.UID
		})
		eventsMu.Unlock()
		if seen {
			break
		}
	}
	close(stopWatch)
	if err := <-watched; err != nil {
		// The watch goroutine is done: events is the test's alone from here.
		t.Fatalf("the run cannot be judged: %v", err)
	}

	// Every record this tool wrote.
	records := map[types.UID][]remove.Record{}
	for _, path := range audits {
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var rec remove.Record
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

	// Judge every write the watch saw.
	history := map[types.UID][]*corev1.ConfigMap{}
	removals, verified, forced, raced, wrongful := 0, 0, 0, 0, 0
	removedAt := map[types.UID]bool{}
	for _, ev := range events {
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok || cm.Name == "the-end" {
			continue
		}
		versions := history[cm.UID]
		history[cm.UID] = append(versions, cm)
		if len(versions) == 0 || !slices.Contains(versions[len(versions)-1].Finalizers, fin) {
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
		case slices.Contains(cm.Finalizers, fin):
			continue
		}
		removals++
		removedAt[cm.UID+types.UID("/"+old.ResourceVersion)] = true
		want := slices.DeleteFunc(slices.Clone(old.Finalizers), func(f string) bool { return f == fin })
		if len(after) != len(want) || !slices.Equal(after, want) && len(want) > 0 {
			wrongful++
			t.Errorf("%s (uid %s) went from %v to %v at resourceVersion %s: more than the one finalizer changed", cm.Name, cm.UID, old.Finalizers, after, cm.ResourceVersion)
		}
		var byVerification, byForce bool
		for _, rec := range records[cm.UID] {
			switch {
			case rec.Finalizer != fin || rec.Result != remove.Removed:
			case rec.Verified && rec.ResourceVersion == old.ResourceVersion:
				byVerification = tr.saidGone(cm.UID, old.ResourceVersion, old.Annotations["instance"])
				if !byVerification {
					t.Errorf("%s (uid %s) at resourceVersion %s: removed as verified, but the provider never answered Gone about instance %s of that version",
						cm.Name, cm.UID, old.ResourceVersion, old.Annotations["instance"])
				}
			case !rec.Verified && rec.Reason != "":
				byForce = true
			}
		}
		// kube-apiserver deletes an object whose finalizers a write emptied after that
		// write's checks, with the uid as the only precondition (genericregistry.Store:
		// Update, then deleteWithoutFinalizers): a write that lands in between is deleted
		// with the object. The signature: a removal verified against version V, then only
		// writes that changed no finalizer, then the deletion.
		if !byVerification && !byForce && ev.Type == watch.Deleted {
			for _, rec := range records[cm.UID] {
				// The verified version, followed only by writes that changed no finalizer.
				at := slices.IndexFunc(versions, func(v *corev1.ConfigMap) bool { return v.ResourceVersion == rec.ResourceVersion })
				if !rec.Verified || rec.Result != remove.Removed || at < 0 || at == len(versions)-1 ||
					slices.ContainsFunc(versions[at:], func(v *corev1.ConfigMap) bool { return !slices.Equal(v.Finalizers, old.Finalizers) }) {
					continue
				}
				before := versions[at]
				if !tr.saidGone(cm.UID, before.ResourceVersion, before.Annotations["instance"]) {
					continue
				}
				raced++
				removedAt[cm.UID+types.UID("/"+before.ResourceVersion)] = true
				t.Logf("%s (uid %s): verified at resourceVersion %s and written; %d concurrent writes made %s (instance %s -> %s) before kube-apiserver deleted it",
					cm.Name, cm.UID, before.ResourceVersion, len(versions)-1-at, old.ResourceVersion, before.Annotations["instance"], old.Annotations["instance"])
				byVerification = true
				break
			}
			if byVerification {
				continue
			}
		}
		switch {
		case byVerification:
			verified++
		case byForce:
			forced++
		default:
			wrongful++
			for _, e := range events {
				if c, ok := e.Object.(*corev1.ConfigMap); ok && c.UID == cm.UID {
					t.Logf("  %s rv %s finalizers %v instance %s deletionTimestamp %v", e.Type, c.ResourceVersion, c.Finalizers, c.Annotations["instance"], c.DeletionTimestamp)
				}
			}
			t.Errorf("%s (uid %s): finalizer %s removed from resourceVersion %s (instance %s), and no verification of that version nor forced removal of that uid accounts for it; records: %+v",
				cm.Name, cm.UID, fin, old.ResourceVersion, old.Annotations["instance"], records[cm.UID])
		}
	}
	// Every removal this tool recorded shows in the watch, once. A finalizer comes off an
	// object once (none can be added to an object being deleted), so a uid has at most one
	// removal. Two writes may both be told they removed it only when it was the last one
	// and the object went with it: the API server lets every write that empties the list
	// of a deleted object succeed, because "deletion is racy" (genericregistry.Store,
	// deleteWithoutFinalizers), and both were checked against the same version.
	racing := 0
	for uid, recs := range records {
		var removed []remove.Record
		for _, rec := range recs {
			if rec.Finalizer == fin && rec.Result == remove.Removed {
				removed = append(removed, rec)
			}
		}
		seen := 0
		for k := range removedAt {
			if strings.HasPrefix(string(k), string(uid)+"/") {
				seen++
			}
		}
		switch {
		case len(removed) == 0:
		case seen == 0:
			t.Errorf("uid %s: recorded as removed, never seen removed: %+v", uid, removed)
		case len(removed) > 1 && slices.ContainsFunc(removed, func(r remove.Record) bool { return !r.Deleted }):
			t.Errorf("uid %s: %d records claim the one removal, not all of them the deletion: %+v", uid, len(removed), removed)
		case len(removed) > 1:
			racing += len(removed) - 1
		}
		for _, rec := range removed {
			if rec.Verified && !removedAt[uid+types.UID("/"+rec.ResourceVersion)] {
				t.Errorf("recorded as removed at %s, not removed from that version: %+v", rec.ResourceVersion, rec)
			}
		}
	}
	var ops []string
	counts.ops.Range(func(k, v any) bool {
		ops = append(ops, fmt.Sprintf("%s %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	sort.Strings(ops)
	t.Logf("seed %d: %d removal attempts (%d reconcile passes, %d verified removes, %d forced removes)", seed, counts.attempts.Load(),
		counts.passes.Load(), counts.verifiedRemoves.Load(), counts.forcedRemoves.Load())
	t.Logf("results: %d removed, %d already removed or gone, %d refused or kept, %d failed; %d verified again after a change, %d decided again after a conflict",
		counts.removed.Load(), counts.alreadyRemoved.Load(), counts.refused.Load(), counts.failed.Load(), counts.reverified.Load(), counts.conflicts.Load())
	t.Logf("concurrent writes: %s; the provider answered %d times", strings.Join(ops, ", "), tr.asked)
	t.Logf("the watch saw %d writes, %d of them removed the finalizer: %d verified for that uid and resourceVersion, %d forced; %d wrongful",
		len(events), removals, verified, forced, wrongful)
	t.Logf("%d deletions took a concurrent write made after a verified write's checks with them (kube-apiserver's delete-during-update race)", raced)
	t.Logf("%d more writes raced to take the same last finalizer off an object being deleted, and were told they had", racing)
	if removals == 0 || verified == 0 || forced == 0 {
		t.Errorf("the run removed too little to show anything: %d removals, %d verified, %d forced", removals, verified, forced)
	}
}

// chaosWrite makes one concurrent write: anything but removing the finalizer under test.
func chaosWrite(ctx context.Context, rng *rand.Rand, kube kubernetes.Interface, ns, name, fin string, instances int, tr *truth,
	counts *chaosCounts, create func(*rand.Rand, string)) {
	cms := kube.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		create(rng, name)
		return
	}
	if err != nil {
		return
	}
	switch op := rng.IntN(10); {
	case op < 3:
		// Remove another finalizer, guarded, wherever it is.
		for i, f := range cm.Finalizers {
			if f != fin {
				patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]`,
					cm.UID, i, f, i)
				if _, err := cms.Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
					counts.op("remove another finalizer")
				}
				return
			}
		}
	case op < 6:
		// Point the field the provider's URL reads at another instance.
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"instance":"i-%02d"}}}`, rng.IntN(instances))
		if _, err := cms.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
			counts.op("change the instance")
		}
	case op < 8:
		patch := fmt.Sprintf(`{"metadata":{"labels":{"bump":"%d"}}}`, rng.IntN(1000))
		if _, err := cms.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
			counts.op("bump the resourceVersion")
		}
	default:
		// An instance comes or goes: the provider's answers flip.
		i := rng.IntN(instances)
		tr.mu.Lock()
		instance := fmt.Sprintf("i-%02d", i)
		tr.gone[instance] = !tr.gone[instance]
		tr.mu.Unlock()
		counts.op("flip a verdict")
	}
}

// chaosRemove makes removal attempts: a reconcile pass, a verified remove or a forced
// remove, each a process of its own.
func chaosRemove(t *testing.T, rng *rand.Rand, ns, name, fin, policy, audit string, counts *chaosCounts) {
	args := []string{"--kubeconfig", cp.AdminKubeconfig, "-n", ns}
	kind := rng.IntN(10)
	switch {
	case kind < 4:
		args = append(args, "reconcile", "--once", "--policy", policy, "-o", "json", "--audit-log", audit)
	case kind < 7:
		args = append(args, "remove", "configmap/"+name, "--finalizer", fin, "--policy", policy, "--yes", "-o", "json", "--audit-log", audit)
	default:
		args = append(args, "remove", "configmap/"+name, "--finalizer", fin, "--force-unverified", "--reason", "chaos", "--yes", "-o", "json", "--audit-log", audit)
	}
	out, err := exec.Command(binary, args...).Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Errorf("running %v: %v", args, err)
		return
	}
	switch {
	case kind < 4:
		counts.passes.Add(1)
		var rep finalizev1alpha1.ReconcileReport
		if json.Unmarshal(out, &rep) != nil {
			counts.failed.Add(1)
			counts.attempts.Add(1)
			return
		}
		for _, a := range rep.Actions {
			counts.attempts.Add(1)
			tally(counts, a.Result)
		}
	default:
		if kind < 7 {
			counts.verifiedRemoves.Add(1)
		} else {
			counts.forcedRemoves.Add(1)
		}
		counts.attempts.Add(1)
		var plan finalizev1alpha1.RemovalPlan
		if json.Unmarshal(out, &plan) != nil || len(plan.Actions) == 0 {
			// Nothing to remove (not stuck, already gone), or refused before a write.
			counts.refused.Add(1)
			return
		}
		for _, a := range plan.Actions {
			tally(counts, a.Result)
		}
	}
}

func tally(counts *chaosCounts, r finalizev1alpha1.RemovalResult) {
	switch r {
	case finalizev1alpha1.ResultRemoved:
		counts.removed.Add(1)
	case finalizev1alpha1.ResultAlreadyRemoved, finalizev1alpha1.ResultObjectGone:
		counts.alreadyRemoved.Add(1)
	case finalizev1alpha1.ResultFailed:
		counts.failed.Add(1)
	default:
		counts.refused.Add(1)
	}
}
