package write

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// failingLog takes the first ok writes and fails every one after them, as a disk that
// fills up does.
type failingLog struct {
	ok    int
	lines []string
}

func (l *failingLog) Write(p []byte) (int, error) {
	if len(l.lines) >= l.ok {
		return 0, syscall.ENOSPC
	}
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

// forcedActions are n forced removals of one finalizer, each from an object of its own.
func forcedActions(n int) ([]plan.Action, []runtime.Object) {
	var actions []plan.Action
	var objs []runtime.Object
	for i := range n {
		uid := string(rune('a' + i))
		o := fakeObject(uid, "db.example.com/finalizer")
		o.Name = "cfg-" + uid
		objs = append(objs, o)
		actions = append(actions, plan.Action{
			Target:    plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: o.Name, UID: types.UID("uid-" + uid)}, Finalizer: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers},
			Finalizer: finalizev1alpha1.Finalizer{Name: "db.example.com/finalizer"}, Reason: "INC-1",
		})
	}
	return actions, objs
}

// TestNoRemovalGoesUnrecorded: the audit log fails at the first intent, or after the
// first intent. Either way no removal starts after the failure, the failing action says
// what happened, and the error matches ErrAuditLog.
func TestNoRemovalGoesUnrecorded(t *testing.T) {
	for _, tt := range []struct {
		name      string
		ok        int
		patches   int
		failed    string
		wantLines int
	}{
		{"the intent line fails", 0, 0, "not removed: its intent could not be recorded", 0},
		{"the record fails after the write", 1, 1, "was removed, but its audit record could not be written", 1},
	} {
		for _, workers := range []int{1, 3} {
			if tt.ok > 0 && workers > 1 {
				continue // which write succeeds is then up to the scheduler
			}
			t.Run(fmt.Sprintf("%s, %d workers", tt.name, workers), func(t *testing.T) {
				scheme := runtime.NewScheme()
				_ = metav1.AddMetaToScheme(scheme)
				actions, objs := forcedActions(3)
				client := metadatafake.NewSimpleMetadataClient(scheme, objs...)
				log := &failingLog{ok: tt.ok}
				var seen []*Record
				ex := &Executor{Remover: &Remover{Metadata: client}, Auditor: &Auditor{Kube: kubefake.NewClientset(), Log: log, User: "tester"}, Workers: workers,
					OnRecord: func(r *Record) { seen = append(seen, r) }}
				records, err := ex.Execute(context.Background(), actions, nil)
				if !errors.Is(err, ErrAuditLog) || !strings.Contains(err.Error(), "no space left on device") {
					t.Errorf("error %v, want ErrAuditLog naming the disk's error", err)
				}
				if p := patchesOf(client); len(p) != tt.patches {
					t.Errorf("%d writes, want %d", len(p), tt.patches)
				}
				// One action fails, whichever the workers took first; no other is attempted.
				var attempted []*Record
				for _, rec := range records {
					if rec != nil {
						attempted = append(attempted, rec)
					}
				}
				if len(attempted) != 1 || !strings.Contains(attempted[0].Error, tt.failed) || len(seen) != 1 {
					t.Fatalf("records %+v (%d reported); want one, with an error saying %q, and the others not attempted", attempted, len(seen), tt.failed)
				}
				if len(log.lines) != tt.wantLines {
					t.Errorf("lines %q", log.lines)
				}
			})
		}
	}
}

// TestAnIntentLineComesBeforeTheWrite: the intent is on the log when the write is made,
// and the record after it carries the same id.
func TestAnIntentLineComesBeforeTheWrite(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	actions, objs := forcedActions(1)
	client := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	log := &failingLog{ok: 10}
	var atWrite int
	remover := &Remover{Metadata: client, BeforeWrite: func(int) { atWrite = len(log.lines) }}
	ex := &Executor{Remover: remover, Auditor: &Auditor{Kube: kubefake.NewClientset(), Log: log, User: "tester"}}
	if _, err := ex.Execute(context.Background(), actions, nil); err != nil {
		t.Fatal(err)
	}
	if atWrite != 1 || len(log.lines) != 2 {
		t.Fatalf("%d lines at the write, %d after; want the intent before and the record after", atWrite, len(log.lines))
	}
	var intent Intent
	var rec Record
	if err := json.Unmarshal([]byte(log.lines[0]), &intent); err != nil || intent.Stage != StageIntent || intent.ID == "" || intent.Reason != "INC-1" {
		t.Errorf("intent %s: %v", log.lines[0], err)
	}
	if err := json.Unmarshal([]byte(log.lines[1]), &rec); err != nil || rec.Stage != StageComplete || rec.ID != intent.ID || rec.Result != Removed {
		t.Errorf("record %s: %v", log.lines[1], err)
	}
	if strings.Contains(log.lines[0], `"result"`) || strings.Contains(log.lines[0], `"deleted"`) {
		t.Errorf("the intent says what has not happened yet: %s", log.lines[0])
	}
}

// TestOpenLogEndsALineCutShort: a log whose last line a crash or a full disk cut short
// gets a newline before the next line.
func TestOpenLogEndsALineCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte(`{"id":"1","stage":"Intent"}`+"\n"+`{"id":"1","sta`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := openLog(path)
	if err != nil {
		t.Fatal(err)
	}
	a := &Auditor{Log: f}
	if err := a.Intent(&Intent{Entry: Entry{Time: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], `{"id":`) || !json.Valid([]byte(lines[2])) {
		t.Errorf("log %q", lines)
	}
}

// failedLog is an audit log whose last line a full disk cut short after partial, and an
// Auditor that saw that line fail.
func failedLog(t *testing.T, partial string) (string, *Auditor) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := openLog(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.WriteString(partial); err != nil {
		t.Fatal(err)
	}
	return path, &Auditor{Log: f, failed: fmt.Errorf("%w: writing: %w", ErrAuditLog, syscall.ENOSPC)}
}

// TestRetryTakesUpTheLogAgain: after a failed line no intent is written until Retry;
// Retry ends the line the failure cut short, and the next intent is whole.
func TestRetryTakesUpTheLogAgain(t *testing.T) {
	path, a := failedLog(t, `{"id":"1","sta`)
	if err := a.Intent(&Intent{Entry: Entry{Time: time.Now()}}); !errors.Is(err, ErrAuditLog) {
		t.Fatalf("an intent after a failed line: %v, want ErrAuditLog", err)
	}
	if err := a.Retry(); err != nil {
		t.Fatal(err)
	}
	if err := a.Intent(&Intent{Entry: Entry{Time: time.Now()}}); err != nil {
		t.Fatalf("an intent after Retry: %v", err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !json.Valid([]byte(lines[1])) {
		t.Errorf("log %q; want the cut line ended, then a whole intent", lines)
	}
}

// TestALogThatCannotBeSyncedIsWrittenAll: a pipe (--audit-log /dev/stdout under a log
// shipper) cannot be synced; its lines are written, and no removal fails for it.
func TestALogThatCannotBeSyncedIsWrittenAll(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a := &Auditor{Log: w}
	if err := a.Intent(&Intent{Entry: Entry{Time: time.Now()}}); err != nil {
		t.Fatalf("an intent to a pipe: %v", err)
	}
	w.Close()
	b, _ := io.ReadAll(r)
	if !json.Valid(bytes.TrimSpace(b)) {
		t.Errorf("read from the pipe %q", b)
	}
}

// TestARecordAfterAFailedLineStartsALineOfItsOwn: with several writers, a removal in
// hand writes its record after another's line failed half way: the record starts a line
// of its own, whole JSON.
func TestARecordAfterAFailedLineStartsALineOfItsOwn(t *testing.T) {
	path, a := failedLog(t, `{"id":"2","stage":"Inte`)
	if err := a.Line(&Record{Entry: Entry{ID: "1", Time: time.Now()}, Result: Removed}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !json.Valid([]byte(lines[1])) {
		t.Errorf("log %q; want the cut line, then the record whole on a line of its own", lines)
	}
}

// TestTheAuditLinesKeepTheirShape: the two lines of a removal share their first fields
// (Entry), and each line keeps its fields in the order and with the names the audit log
// has always had: tools that read it parse these bytes.
func TestTheAuditLinesKeepTheirShape(t *testing.T) {
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	entry := Entry{ID: "0a1b", Time: at, User: "admin", Action: plan.ReasonRemoved,
		Target:    finalizev1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "a", Name: "cfg", UID: "uid-1"},
		Finalizer: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers, Verified: true, Rule: "dbs",
		Verdict: finalizev1alpha1.VerdictGone, Evidence: "404"}
	var log strings.Builder
	a := &Auditor{Log: &log}
	if err := a.Intent(&Intent{Entry: entry, ResourceVersion: "7"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Line(&Record{Entry: entry, Result: Removed, ResourceVersion: "7", Attempts: 1, Event: "a/cfg.1"}); err != nil {
		t.Fatal(err)
	}
	head := `"time":"2026-11-22T12:00:00Z","user":"admin","action":"FinalizerRemoved",` +
		`"target":{"apiVersion":"v1","kind":"ConfigMap","resource":"configmaps","namespace":"a","name":"cfg","uid":"uid-1"},` +
		`"finalizer":"db.example.com/finalizer","field":"metadata.finalizers","verified":true,"rule":"dbs","verdict":"Gone","evidence":"404"`
	want := `{"id":"0a1b","stage":"Intent",` + head + `,"resourceVersion":"7"}` + "\n" +
		`{"id":"0a1b","stage":"Complete",` + head + `,"result":"Removed","resourceVersion":"7","attempts":1,"deleted":false,"remaining":[],"event":"a/cfg.1"}` + "\n"
	if log.String() != want {
		t.Errorf("audit lines\n got %s\nwant %s", log.String(), want)
	}
}

// TestARegisteredSecretIsInNoRecord: a value registered with the redactor (a credential a
// provider was given, which its evidence repeats) is REDACTED from the audit line, which
// stays JSON, from the Event's note, before it is cut to the API server's limit, and from
// the backup of an object that holds it.
func TestARegisteredSecretIsInNoRecord(t *testing.T) {
	const secret = `unit-audit-t0ken"<&>`
	if err := redact.Register(secret); err != nil {
		t.Fatal(err)
	}
	entry := Entry{User: "admin", Action: plan.ReasonForceRemoved, Target: finalizev1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "cfg"},
		Finalizer: "db.example.com/finalizer", Rule: "dbs", Verdict: finalizev1alpha1.VerdictUnknown,
		Evidence: "exit status 3; stderr: " + strings.Repeat("x", maxNote-100) + " token " + secret, Reason: "INC-1"}
	var log strings.Builder
	kc := kubefake.NewClientset()
	a := &Auditor{Log: &log, Kube: kc, User: "admin"}
	if err := a.Line(&Record{Entry: entry, Result: Removed}); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(log.String()), &line); err != nil || strings.Contains(log.String(), "t0ken") || !strings.HasSuffix(line["evidence"].(string), " token REDACTED") {
		t.Errorf("the audit line (%v): %s", err, log.String())
	}
	ref, err := a.Event(context.Background(), plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1"}, Finalizer: "db.example.com/finalizer"}, &Record{Entry: entry})
	if err != nil {
		t.Fatal(err)
	}
	ns, name, _ := strings.Cut(ref, "/")
	ev, err := kc.EventsV1().Events(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The note is cut within the secret's place: only a whole REDACTED, or a part of it,
	// may show there.
	if strings.Contains(ev.Note, "t0k") || strings.Contains(ev.Note, "unit-au") || len(ev.Note) > maxNote {
		t.Errorf("the Event's note: %s", ev.Note)
	}

	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cfg", UID: "uid-1", Annotations: map[string]string{"note": "the token is " + secret}},
		Data: map[string]string{"token": secret}}
	path, err := Backup(context.Background(), dynamicfake.NewSimpleDynamicClient(scheme, cm), filepath.Join(t.TempDir(), "backups"), plan.Target{Ref: kube.Ref{Resource: configmaps, Namespace: "a", Name: "cfg", UID: "uid-1"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "t0ken") || !strings.Contains(string(b), "token: REDACTED") || !strings.Contains(string(b), "note: the token is REDACTED") {
		t.Errorf("the backup:\n%s", b)
	}
}
