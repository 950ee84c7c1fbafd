package stress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

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

// act runs two writers and two removers until the removers have made attempts removal
// attempts (or 10 minutes have passed), then stops them all.
func (r *chaosRun) act(t *testing.T, attempts int) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// Writers: everything but removing the finalizer under test.
	for i := range 2 {
		rng := rand.New(rand.NewPCG(r.seed, uint64(100+i)))
		wg.Go(func() {
			for ctx.Err() == nil {
				time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
				r.write(ctx, rng, r.names[rng.IntN(len(r.names))])
			}
		})
	}
	// Removers: reconcile passes, verified and forced removes.
	dir := t.TempDir()
	for i := range 2 {
		rng := rand.New(rand.NewPCG(r.seed, uint64(200+i)))
		audit := filepath.Join(dir, fmt.Sprintf("audit-%d.jsonl", i))
		r.audits = append(r.audits, audit)
		wg.Go(func() {
			for ctx.Err() == nil && r.counts.attempts.Load() < int64(attempts) {
				r.attempt(t, rng, r.names[rng.IntN(len(r.names))], audit)
			}
		})
	}
	deadline := time.After(10 * time.Minute)
	for r.counts.attempts.Load() < int64(attempts) {
		select {
		case <-deadline:
			t.Errorf("only %d attempts in 10 minutes", r.counts.attempts.Load())
			r.counts.attempts.Store(int64(attempts))
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	wg.Wait()
}

// write makes one concurrent write: anything but removing the finalizer under test.
func (r *chaosRun) write(ctx context.Context, rng *rand.Rand, name string) {
	cm, err := r.cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.create(rng, name)
		return
	}
	if err != nil {
		return
	}
	switch op := rng.IntN(10); {
	case op < 3:
		// Remove another finalizer, guarded, wherever it is.
		for i, f := range cm.Finalizers {
			if f != chaosFinalizer {
				patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]`,
					cm.UID, i, f, i)
				if _, err := r.cms.Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
					r.counts.op("remove another finalizer")
				}
				return
			}
		}
	case op < 6:
		// Point the field the provider's URL reads at another instance.
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"instance":"i-%02d"}}}`, rng.IntN(chaosInstances))
		if _, err := r.cms.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
			r.counts.op("change the instance")
		}
	case op < 8:
		patch := fmt.Sprintf(`{"metadata":{"labels":{"bump":"%d"}}}`, rng.IntN(1000))
		if _, err := r.cms.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
			r.counts.op("bump the resourceVersion")
		}
	default:
		// An instance comes or goes: the provider's answers flip.
		r.truth.flip(fmt.Sprintf("i-%02d", rng.IntN(chaosInstances)))
		r.counts.op("flip a verdict")
	}
}

// attempt makes removal attempts: a reconcile pass, a verified remove or a forced
// remove, each a process of its own.
func (r *chaosRun) attempt(t *testing.T, rng *rand.Rand, name, audit string) {
	args := []string{"--kubeconfig", cp.AdminKubeconfig, "-n", r.ns}
	kind := rng.IntN(10)
	switch {
	case kind < 4:
		args = append(args, "reconcile", "--once", "--policy", r.policy, "-o", "json", "--audit-log", audit)
	case kind < 7:
		args = append(args, "remove", "configmap/"+name, "--finalizer", chaosFinalizer, "--policy", r.policy, "--yes", "-o", "json", "--audit-log", audit)
	default:
		args = append(args, "remove", "configmap/"+name, "--finalizer", chaosFinalizer, "--force-unverified", "--reason", "chaos", "--yes", "-o", "json", "--audit-log", audit)
	}
	out, err := exec.Command(binary, args...).Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Errorf("running %v: %v", args, err)
		return
	}
	counts := &r.counts
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
