package fleet

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

func TestRunBoundsConcurrencyAndTime(t *testing.T) {
	var inFlight, most atomic.Int32
	var dones []int
	results := Run(context.Background(), []string{"a", "b", "c", "d", "slow"}, Options{Concurrency: 2, Timeout: 200 * time.Millisecond,
		OnDone: func(done, total int, _ string) { dones = append(dones, done) }},
		func(ctx context.Context, c string) (string, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if c == "slow" {
				time.Sleep(5 * time.Second) // ignores its context, as discovery does
			}
			return "read " + c, nil
		})
	if most.Load() > 2 {
		t.Errorf("%d clusters read at once, want at most 2", most.Load())
	}
	for i, c := range []string{"a", "b", "c", "d"} {
		if results[i].Cluster != c || results[i].Value != "read "+c || results[i].Err != nil {
			t.Errorf("result %d: %+v", i, results[i])
		}
	}
	if r := results[4]; r.Err == nil || r.Err.Error() != "no answer within 200ms (--cluster-timeout)" || r.Took > time.Second {
		t.Errorf("the slow cluster: %+v", r)
	}
	if len(dones) != 5 {
		t.Errorf("progress %v", dones)
	}
}

func TestMerge(t *testing.T) {
	obj := func(name string, secs int64) finalizev1alpha1.StuckObject {
		return finalizev1alpha1.StuckObject{Target: finalizev1alpha1.ObjectReference{Name: name}, TerminatingSeconds: secs}
	}
	lists := []Result[*finalizev1alpha1.StuckObjectList]{
		{Cluster: "b", Value: &finalizev1alpha1.StuckObjectList{Items: []finalizev1alpha1.StuckObject{obj("x", 10)},
			Incomplete: []finalizev1alpha1.IncompleteResource{{Resource: "widgets", Reason: finalizev1alpha1.ReasonForbidden}}}},
		{Cluster: "a", Value: &finalizev1alpha1.StuckObjectList{Items: []finalizev1alpha1.StuckObject{obj("x", 10), obj("y", 99)}}},
		{Cluster: "down", Err: errors.New("connection refused")},
	}
	l, err := MergeLists(lists)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range l.Items {
		got = append(got, it.Cluster+"/"+it.Target.Name)
	}
	if !slices.Equal(got, []string{"a/y", "a/x", "b/x"}) {
		t.Errorf("order %v", got)
	}
	if len(l.Incomplete) != 2 || l.Incomplete[0].Cluster != "down" || l.Incomplete[0].Reason != finalizev1alpha1.ReasonClusterUnreachable ||
		l.Incomplete[1].Cluster != "b" || l.Kind != "StuckObjectList" {
		t.Errorf("incomplete %+v", l.Incomplete)
	}
	if _, err := MergeLists(lists[2:]); !errors.Is(err, ErrNoCluster) {
		t.Errorf("no cluster read: %v", err)
	}

	cause := func(reason, name string, n int) finalizev1alpha1.RootCause {
		return finalizev1alpha1.RootCause{Reason: reason, Subject: finalizev1alpha1.Subject{Kind: "Controller", Name: name}, Objects: make([]finalizev1alpha1.ObjectReference, n)}
	}
	d, err := MergeDiagnoses([]Result[*finalizev1alpha1.Diagnosis]{
		{Cluster: "a", Value: &finalizev1alpha1.Diagnosis{RootCauses: []finalizev1alpha1.RootCause{cause("ControllerInactive", "op", 3), cause("WebhookBlocking", "hook", 1)}}},
		{Cluster: "b", Value: &finalizev1alpha1.Diagnosis{RootCauses: []finalizev1alpha1.RootCause{cause("ControllerInactive", "op", 2), cause("ControllerInactive", "other", 1)}}},
		{Cluster: "c", Value: &finalizev1alpha1.Diagnosis{RootCauses: []finalizev1alpha1.RootCause{cause("ControllerInactive", "op", 1), cause("WebhookBlocking", "hook", 4)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.AcrossClusters) != 2 || d.AcrossClusters[0].Subject.Name != "op" || !slices.Equal(d.AcrossClusters[0].Clusters, []string{"a", "b", "c"}) ||
		d.AcrossClusters[0].Objects != 6 || d.AcrossClusters[1].Subject.Name != "hook" || d.AcrossClusters[1].Objects != 5 {
		t.Errorf("across clusters %+v", d.AcrossClusters)
	}
	if len(d.RootCauses) != 6 || d.RootCauses[0].Cluster != "a" || d.RootCauses[5].Cluster != "c" {
		t.Errorf("root causes %+v", d.RootCauses)
	}
}
