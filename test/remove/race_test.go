package remove

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
)

const target = "db.example.com/finalizer"

var configmaps = kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true}

// race is what another writer does between our read and our write.
type race struct {
	name string
	// do changes the object; it returns the finalizers the object (or its namesake) must
	// have once our removal is over, and whether the original object is replaced.
	do func(t *testing.T, c *corev1.ConfigMap) (want []string, replaced bool)
}

// TestTwoHundredRacesWithoutAWrongfulRemoval races a removal 200 times, in the window
// between its read and its write, against writers who shift the finalizer's index, remove
// it first, replace the object with a namesake, or change something else. A wrongful
// removal is any finalizer gone that was not ours, or ours gone from a namesake.
func TestTwoHundredRacesWithoutAWrongfulRemoval(t *testing.T) {
	raceTwoHundred(t, false)
}

// TestTwoHundredRacesAgainstAVerifiedSnapshot runs the same races against removals that
// were verified: pinned to the resourceVersion verified, with the finalizers seen there,
// so that the first write goes out without a read. Each race lands between the
// verification and that write; the write must fail whole, and the removal go on only
// from the object as it is now, verified again.
func TestTwoHundredRacesAgainstAVerifiedSnapshot(t *testing.T) {
	raceTwoHundred(t, true)
}

func raceTwoHundred(t *testing.T, pinned bool) {
	ctx := t.Context()
	ns := cp.Namespace(t)
	kc := cp.Kube(t)
	cms := kc.CoreV1().ConfigMaps(ns)
	patchFinalizers := func(t *testing.T, name string, rv string, fins []string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": rv, "finalizers": fins}})
		if _, err := cms.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "other-writer"}); err != nil {
			t.Fatalf("the other writer failed: %v", err)
		}
	}
	without := func(fins []string, drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(fins), func(f string) bool { return slices.Contains(drop, f) })
	}
	races := []race{
		{"a neighbour before ours is removed: our index moves", func(t *testing.T, c *corev1.ConfigMap) ([]string, bool) {
			left := without(c.Finalizers, c.Finalizers[0])
			if c.Finalizers[0] == target {
				left = without(c.Finalizers, c.Finalizers[1])
			}
			patchFinalizers(t, c.Name, c.ResourceVersion, left)
			return without(left, target), false
		}},
		{"someone removes our finalizer first", func(t *testing.T, c *corev1.ConfigMap) ([]string, bool) {
			left := without(c.Finalizers, target)
			patchFinalizers(t, c.Name, c.ResourceVersion, left)
			return left, false
		}},
		{"the object is deleted and a namesake created", func(t *testing.T, c *corev1.ConfigMap) ([]string, bool) {
			patchFinalizers(t, c.Name, c.ResourceVersion, nil) // the original goes
			namesake := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Finalizers: slices.Clone(c.Finalizers)}}
			if _, err := cms.Create(ctx, namesake, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating the namesake: %v", err)
			}
			if err := cms.Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			return slices.Clone(c.Finalizers), true
		}},
		{"an unrelated field changes", func(t *testing.T, c *corev1.ConfigMap) ([]string, bool) {
			if _, err := cms.Patch(ctx, c.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			return without(c.Finalizers, target), false
		}},
		{"the list is shuffled and shortened", func(t *testing.T, c *corev1.ConfigMap) ([]string, bool) {
			left := without(c.Finalizers, c.Finalizers[len(c.Finalizers)-1])
			if !slices.Contains(left, target) {
				left = without(c.Finalizers, c.Finalizers[0])
			}
			slices.Reverse(left)
			patchFinalizers(t, c.Name, c.ResourceVersion, left)
			return without(left, target), false
		}},
	}
	others := []string{"alpha.example.com/a", "beta.example.com/b", "gamma.example.com/c"}
	wrongful := 0
	for i := range 200 {
		rc := races[i%len(races)]
		name := fmt.Sprintf("race-%03d", i)
		// Our finalizer sits at a different index each time.
		fins := slices.Insert(slices.Clone(others[:1+i%3]), i%(2+i%3), target)
		created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: fins}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		tg := plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: ns, Name: name, UID: created.UID}, Finalizer: target, Field: finalizev1alpha1.FieldMetadataFinalizers}
		var want []string
		var replaced bool
		r := remover(t)
		reverified := 0
		if pinned {
			verified, err := cms.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tg.ResourceVersion, tg.Finalizers = verified.ResourceVersion, slices.Clone(verified.Finalizers)
			// The provider still says gone: verifying again pins the version as it is now.
			r.Reverify = func(_ context.Context, tg plan.Target) (plan.Verification, error) {
				reverified++
				cur, err := cms.Get(ctx, tg.Name, metav1.GetOptions{})
				if err != nil {
					return plan.Verification{}, err
				}
				if cur.UID != tg.UID {
					return plan.Verification{}, write.ErrUIDChanged
				}
				return plan.Verification{Rule: "race", Verdict: finalizev1alpha1.VerdictGone, ResourceVersion: cur.ResourceVersion}, nil
			}
		}
		r.BeforeWrite = func(attempt int) {
			if attempt != 1 {
				return
			}
			cur, err := cms.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want, replaced = rc.do(t, cur)
		}
		out, err := r.Remove(ctx, tg, write.DryRunNone)
		if pinned && out.Result == write.Removed && reverified == 0 {
			t.Errorf("%s (%s): removed after a race without being verified again", name, rc.name)
		}
		if replaced != errors.Is(err, write.ErrUIDChanged) {
			t.Errorf("%s (%s): outcome %+v, err %v", name, rc.name, out, err)
		}
		if !replaced && err != nil {
			t.Errorf("%s (%s): %v", name, rc.name, err)
		}
		now, getErr := cms.Get(ctx, name, metav1.GetOptions{})
		var got []string
		if getErr == nil {
			got = now.Finalizers
		}
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			wrongful++
			t.Errorf("%s (%s): finalizers %v, want %v (outcome %+v)", name, rc.name, got, want, out)
		}
		if replaced && (err == nil || now == nil || now.UID == created.UID) {
			t.Errorf("%s (%s): the namesake must be refused, err %v", name, rc.name, err)
		}
	}
	t.Logf("200 races (pinned to a verified snapshot: %v), %d wrongful removals", pinned, wrongful)
}
