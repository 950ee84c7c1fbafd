package write

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// verifierFunc is a Verifier for planner and executor unit tests.
type verifierFunc func(plan.VerifyRequest) plan.Verification

func (f verifierFunc) Verify(_ context.Context, req plan.VerifyRequest) plan.Verification {
	return f(req)
}

func pinnedAction(rv string) plan.Action {
	return plan.Action{
		Target:       plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1"}, Finalizer: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers, ResourceVersion: rv},
		Finalizer:    finalizev1alpha1.Finalizer{Name: "db.example.com/finalizer"},
		Verification: plan.Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictGone, Evidence: "404", ResourceVersion: rv},
		Verified:     true,
	}
}

func patchesOf(c *metadatafake.FakeMetadataClient) []string {
	var out []string
	for _, a := range c.Actions() {
		if p, ok := a.(clienttesting.PatchActionImpl); ok {
			out = append(out, string(p.GetPatch()))
		}
	}
	return out
}

// TestAChangedObjectIsVerifiedAgainBeforeTheWrite: the object changed after it was
// verified; it is verified again, fresh, and the write is pinned to the new version.
func TestAChangedObjectIsVerifiedAgainBeforeTheWrite(t *testing.T) {
	for _, tt := range []struct {
		name    string
		answer  plan.Verification
		patches int
		err     string
	}{
		{"still gone", plan.Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictGone, ResourceVersion: "8"}, 1, ""},
		{"present now", plan.Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictPresent, Evidence: "200 OK", ResourceVersion: "8"}, 0, "not verified any more: Present: 200 OK"},
		{"no longer matched", plan.Verification{}, 0, "no rule matches it any more"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = metav1.AddMetaToScheme(scheme)
			obj := fakeObject("1", "db.example.com/finalizer")
			obj.ResourceVersion = "8"
			client := metadatafake.NewSimpleMetadataClient(scheme, obj)
			var asked []bool
			ex := &Executor{Remover: &Remover{Metadata: client}, Auditor: &Auditor{Kube: kubefake.NewClientset(), Log: &strings.Builder{}, User: "tester"},
				Verifier: verifierFunc(func(req plan.VerifyRequest) plan.Verification {
					asked = append(asked, req.Fresh)
					return tt.answer
				})}
			_, err := ex.Execute(context.Background(), []plan.Action{pinnedAction("7")}, nil)
			if len(asked) != 1 || !asked[0] {
				t.Errorf("verified again %v times (fresh: %v), want once, fresh", len(asked), asked)
			}
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("error %v, want %q", err, tt.err)
			}
			patches := patchesOf(client)
			if len(patches) != tt.patches {
				t.Fatalf("patches %q, want %d", patches, tt.patches)
			}
			if tt.patches == 1 && !strings.Contains(patches[0], `{"op":"test","path":"/metadata/resourceVersion","value":"8"}`) {
				t.Errorf("the write is not pinned to the version verified again: %s", patches[0])
			}
		})
	}
}

func TestAPinnedWriteWithoutAVerifierIsRefused(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	obj := fakeObject("1", "db.example.com/finalizer")
	obj.ResourceVersion = "8"
	client := metadatafake.NewSimpleMetadataClient(scheme, obj)
	_, err := (&Remover{Metadata: client}).Remove(context.Background(), pinnedAction("7").Target, DryRunNone)
	if !errors.Is(err, ErrNotReverified) || len(patchesOf(client)) != 0 {
		t.Errorf("got %v and patches %q", err, patchesOf(client))
	}
	// Unchanged: the patch tests the version verified.
	obj.ResourceVersion = "7"
	client = metadatafake.NewSimpleMetadataClient(scheme, obj)
	if _, err := (&Remover{Metadata: client}).Remove(context.Background(), pinnedAction("7").Target, DryRunNone); err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"test","path":"/metadata/uid","value":"uid-1"},{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"test","path":"/metadata/finalizers/0","value":"db.example.com/finalizer"},{"op":"remove","path":"/metadata/finalizers/0"}]`
	if p := patchesOf(client); len(p) != 1 || p[0] != want {
		t.Errorf("patch %q\nwant %s", p, want)
	}
}

// TestAVerifiedSnapshotIsWrittenWithoutReadingFirst: a removal pinned to the version a
// provider verified, with the finalizers seen at that version, is one guarded write and
// no read: the write's tests are the read. Finalizers left on the object come from the
// write's response, so the object is not read afterwards either.
func TestAVerifiedSnapshotIsWrittenWithoutReadingFirst(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	obj := fakeObject("1", "a.example.com/x", "db.example.com/finalizer")
	obj.ResourceVersion = "7"
	client := metadatafake.NewSimpleMetadataClient(scheme, obj)
	a := pinnedAction("7")
	a.Finalizers = []string{"a.example.com/x", "db.example.com/finalizer"}
	ex := &Executor{Remover: &Remover{Metadata: client}, Auditor: &Auditor{Kube: kubefake.NewClientset(), Log: &strings.Builder{}, User: "tester"}}
	records, err := ex.Execute(context.Background(), []plan.Action{a}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, act := range client.Actions() {
		verbs = append(verbs, act.GetVerb())
	}
	if !slices.Equal(verbs, []string{"patch"}) {
		t.Errorf("requests %v, want one patch", verbs)
	}
	want := `[{"op":"test","path":"/metadata/uid","value":"uid-1"},{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"test","path":"/metadata/finalizers/1","value":"db.example.com/finalizer"},{"op":"remove","path":"/metadata/finalizers/1"}]`
	if p := patchesOf(client); len(p) != 1 || p[0] != want {
		t.Errorf("patch %q\nwant %s", p, want)
	}
	if rec := records[0]; rec.Result != Removed || rec.Deleted || !slices.Equal(rec.Remaining, []string{"a.example.com/x"}) {
		t.Errorf("record %+v, want removed with a.example.com/x remaining", rec)
	}
}

// TestAStaleSnapshotIsNeverWritten: when the object is not at the verified version any
// more, the write that trusted the snapshot fails whole, and nothing is removed until
// the object is verified again.
func TestAStaleSnapshotIsNeverWritten(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	obj := fakeObject("1", "db.example.com/finalizer", "a.example.com/x")
	obj.ResourceVersion = "9" // changed since version 8 was verified, and reordered
	client := metadatafake.NewSimpleMetadataClient(scheme, obj)
	a := pinnedAction("8")
	a.Finalizers = []string{"a.example.com/x", "db.example.com/finalizer"}
	_, err := (&Remover{Metadata: client}).Remove(context.Background(), a.Target, DryRunNone)
	if err == nil {
		t.Fatal("a write pinned to a stale version succeeded")
	}
	got, gerr := client.Resource(configmaps.GroupVersionResource).Namespace("a").Get(context.Background(), "cfg", metav1.GetOptions{})
	if gerr != nil {
		t.Fatal(gerr)
	}
	if !slices.Equal(got.Finalizers, obj.Finalizers) {
		t.Errorf("finalizers %v after a stale write, want %v untouched", got.Finalizers, obj.Finalizers)
	}
}

// TestWorkersKeepEachObjectTogetherAndStopBetweenObjects: with several workers, every
// action gets its record at its own index; the actions on one object run in one worker,
// in order; a stop lets the action in hand finish and leaves the rest unattempted (nil
// records, and rows that say so).
func TestWorkersKeepEachObjectTogetherAndStopBetweenObjects(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	var objs []runtime.Object
	var actions []plan.Action
	for i := range 6 {
		o := fakeObject(fmt.Sprint(i), "a.example.com/x", "b.example.com/y")
		o.Name = fmt.Sprintf("cfg-%d", i)
		objs = append(objs, o)
		for _, f := range o.Finalizers {
			actions = append(actions, plan.Action{Target: plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: o.Name, UID: o.UID}, Finalizer: f, Field: finalizev1alpha1.FieldMetadataFinalizers}, Finalizer: finalizev1alpha1.Finalizer{Name: f}, Reason: "test"})
		}
	}
	// Interleave two objects' actions, as a plan may.
	actions[1], actions[2] = actions[2], actions[1]
	if got := byObject(actions); !slices.Equal(got[0], []int{0, 2}) || !slices.Equal(got[1], []int{1, 3}) || len(got) != 6 {
		t.Fatalf("groups %v", got)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	ex := &Executor{Remover: &Remover{Metadata: client}, Auditor: &Auditor{Kube: kubefake.NewClientset(), Log: &strings.Builder{}, User: "tester"}, Workers: 4}
	records, err := ex.Execute(context.Background(), actions, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range records {
		if rec == nil || rec.Target.Name != actions[i].Name || rec.Finalizer != actions[i].Target.Finalizer || rec.Result != Removed {
			t.Errorf("record %d = %+v, want the removal of %s", i, rec, actions[i].String())
		}
	}

	// A stop during the first action: it finishes, and nothing else starts.
	client = metadatafake.NewSimpleMetadataClient(scheme, objs...)
	var mu sync.Mutex
	done := 0
	ex = &Executor{Remover: &Remover{Metadata: client}, Auditor: &Auditor{Kube: kubefake.NewClientset(), Log: &strings.Builder{}, User: "tester"}, Workers: 1,
		OnRecord: func(*Record) { mu.Lock(); done++; mu.Unlock() },
		Continue: func() bool { mu.Lock(); defer mu.Unlock(); return done < 1 }}
	rows := make([]*finalizev1alpha1.Removal, len(actions))
	for i := range actions {
		row := actions[i].API()
		rows[i] = &row
	}
	records, _ = ex.Execute(context.Background(), actions, rows)
	for i, rec := range records {
		if attempted := rec != nil; attempted != (i == 0) {
			t.Errorf("record %d attempted: %v", i, attempted)
		}
	}
	// Each row has its outcome: the one attempted its record's, the others why not; the
	// audit line is the row's.
	if rows[0].Result != finalizev1alpha1.ResultRemoved || records[0].Target != rows[0].Target || records[0].Finalizer != rows[0].Finalizer || records[0].Reason != rows[0].Reason {
		t.Errorf("row 0 %+v, record %+v", rows[0], records[0])
	}
	for _, row := range rows[1:] {
		if row.Result != finalizev1alpha1.ResultKept || row.Message != notAttemptedStopped {
			t.Errorf("a row not attempted: %+v", row)
		}
	}
}

// TestTheWriteIsRecordedOnTheVerificationItWasMadeOn: the object changed after it was
// verified, and was verified again about another request. An intent line naming the
// second verification is on the log before the write, the record and the Event name it
// (with its time) and keep the first beside it; a log that cannot take that intent line
// keeps the finalizer.
func TestTheWriteIsRecordedOnTheVerificationItWasMadeOn(t *testing.T) {
	firstAt, secondAt := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC), time.Date(2026, 11, 24, 2, 0, 1, 500, time.UTC)
	for _, tt := range []struct {
		name    string
		ok      int
		patches int
		err     string
	}{
		{"recorded", 10, 1, ""},
		{"the second intent fails", 1, 0, "the intent of the write made on that verification could not be recorded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = metav1.AddMetaToScheme(scheme)
			obj := fakeObject("1", "db.example.com/finalizer")
			obj.ResourceVersion = "8"
			client := metadatafake.NewSimpleMetadataClient(scheme, obj)
			log := &failingLog{ok: tt.ok}
			atWrite := -1
			kc := kubefake.NewClientset()
			ex := &Executor{Remover: &Remover{Metadata: client, BeforeWrite: func(int) { atWrite = len(log.lines) }},
				Auditor: &Auditor{Kube: kc, Log: log, User: "tester"},
				Verifier: verifierFunc(func(plan.VerifyRequest) plan.Verification {
					return plan.Verification{Rule: "dbs", Verdict: finalizev1alpha1.VerdictGone, Evidence: "GET /second: 404", ResourceVersion: "8", VerifiedAt: secondAt}
				})}
			a := pinnedAction("7")
			a.Verification.Evidence, a.Verification.VerifiedAt = "GET /first: 404", firstAt
			records, err := ex.Execute(context.Background(), []plan.Action{a}, nil)
			if p := patchesOf(client); len(p) != tt.patches {
				t.Fatalf("patches %q, want %d", p, tt.patches)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrAuditLog) {
					t.Errorf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var intents []Intent
			for _, l := range log.lines[:atWrite] {
				var in Intent
				if json.Unmarshal([]byte(l), &in) == nil && in.Stage == StageIntent {
					intents = append(intents, in)
				}
			}
			if len(intents) != 2 || intents[0].Evidence != "GET /first: 404" || intents[0].ResourceVersion != "7" ||
				intents[1].ID != intents[0].ID || intents[1].Evidence != "GET /second: 404" || intents[1].ResourceVersion != "8" ||
				!intents[1].VerifiedAt.Equal(&metav1.MicroTime{Time: secondAt.Truncate(time.Microsecond)}) || intents[1].Verifications != 2 {
				t.Errorf("intent lines before the write: %q", log.lines[:atWrite])
			}
			rec := records[0]
			if rec.Evidence != "GET /second: 404" || rec.ResourceVersion != "8" || rec.Verifications != 2 || rec.VerifiedAt == nil || !rec.VerifiedAt.Time.Equal(secondAt.Truncate(time.Microsecond)) ||
				rec.FirstVerification == nil || rec.FirstVerification.Evidence != "GET /first: 404" || rec.FirstVerification.ResourceVersion != "7" {
				t.Errorf("record %+v", rec)
			}
			evs, _ := kc.EventsV1().Events("a").List(context.Background(), metav1.ListOptions{})
			if len(evs.Items) != 1 || !strings.Contains(evs.Items[0].Note, "verified by rule dbs at 2026-11-24T02:00:01.000000Z: GET /second: 404 (the object changed after its first verification, rule dbs at 2026-11-24T02:00:00.000000Z: Gone: GET /first: 404; 2 verifications)") {
				t.Errorf("events %+v", evs.Items)
			}
		})
	}
}

// TestTheAuditNamesWhatIsWrittenNotTheRowShown: the rows a confirmation was shown are the
// report's, not the audit's: a row changed before the write changes nothing the audit
// lines name, and a run refused before any action (no auditor) still gives every row why.
func TestTheAuditNamesWhatIsWrittenNotTheRowShown(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	o := fakeObject("1", "db.example.com/finalizer")
	a := plan.Action{Target: plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: o.Name, UID: o.UID}, Finalizer: "db.example.com/finalizer",
		Field: finalizev1alpha1.FieldMetadataFinalizers}, Finalizer: finalizev1alpha1.Finalizer{Name: "db.example.com/finalizer"}, Reason: "INC-1"}
	row := a.API()
	row.Target.Name, row.Finalizer, row.Reason = "another", "other.example.com/x", "edited"
	var log strings.Builder
	ex := &Executor{Remover: &Remover{Metadata: metadatafake.NewSimpleMetadataClient(scheme, o)}, Auditor: &Auditor{Kube: kubefake.NewClientset(), Log: &log, User: "tester"}}
	records, err := ex.Execute(context.Background(), []plan.Action{a}, []*finalizev1alpha1.Removal{&row})
	if err != nil {
		t.Fatal(err)
	}
	if rec := records[0]; rec.Target.Name != o.Name || rec.Finalizer != "db.example.com/finalizer" || rec.Reason != "INC-1" || strings.Contains(log.String(), "another") {
		t.Errorf("the audit names the row shown, not the write: %+v\n%s", rec, log.String())
	}
	if row.Result != finalizev1alpha1.ResultRemoved {
		t.Errorf("row %+v, want its outcome", row)
	}

	unaudited := a.API()
	_, err = (&Executor{Remover: &Remover{Metadata: metadatafake.NewSimpleMetadataClient(scheme, o)}}).Execute(context.Background(), []plan.Action{a}, []*finalizev1alpha1.Removal{&unaudited})
	if err == nil || unaudited.Result != finalizev1alpha1.ResultFailed || unaudited.Error != err.Error() {
		t.Errorf("without an auditor: err %v, row %+v", err, unaudited)
	}
}
