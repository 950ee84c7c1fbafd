package remove

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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
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
func forcedActions(n int) ([]Action, []runtime.Object) {
	var actions []Action
	var objs []runtime.Object
	for i := range n {
		uid := string(rune('a' + i))
		o := fakeObject(uid, "db.example.com/finalizer")
		o.Name = "cfg-" + uid
		objs = append(objs, o)
		actions = append(actions, Action{
			Target:    Target{Resource: configmaps, Namespace: "a", Name: o.Name, UID: types.UID("uid-" + uid), Finalizer: "db.example.com/finalizer", Field: finalizev1alpha1.FieldMetadataFinalizers},
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
				records, err := ex.Execute(context.Background(), actions)
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
	if _, err := ex.Execute(context.Background(), actions); err != nil {
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
	f, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	a := &Auditor{Log: f}
	if err := a.Intent(&Intent{Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], `{"id":`) || !json.Valid([]byte(lines[2])) {
		t.Errorf("log %q", lines)
	}
}

// TestANamespaceTheScanDidNotIndexIsNotEmpty: a namespace the scan did not list as being
// deleted has no content in the index, which proves nothing: without a ContentReader,
// its kubernetes finalizer is refused.
func TestANamespaceTheScanDidNotIndexIsNotEmpty(t *testing.T) {
	ts := metav1.Now()
	nsRes := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}
	fin := finalizev1alpha1.Finalizer{Name: "kubernetes", Field: finalizev1alpha1.FieldSpecFinalizers, System: true}
	late := &kube.Object{Resource: nsRes, Meta: metav1.ObjectMeta{Name: "late", UID: "uid-late", DeletionTimestamp: &ts}, Finalizers: []finalizev1alpha1.Finalizer{fin}}
	listed := &kube.Object{Resource: nsRes, Meta: metav1.ObjectMeta{Name: "listed", UID: "uid-listed", DeletionTimestamp: &ts}, Finalizers: []finalizev1alpha1.Finalizer{fin}}
	res := &scan.Result{Objects: []*kube.Object{listed}, Index: &scan.Index{Content: map[string]*scan.NamespaceContent{}}}
	opts := Options{ForceUnverified: true, Reason: "x", AllowSystem: true}
	p := (&Planner{Result: res}).Plan(context.Background(), []Request{{Object: late, All: true}, {Object: listed, All: true}}, opts)
	if len(p.Refusals) != 1 || p.Refusals[0].Target.Name != "late" || p.Refusals[0].Kind != finalizev1alpha1.RefusalStranding ||
		!strings.Contains(p.Refusals[0].Why, "the scan did not index what namespace late holds") {
		t.Errorf("refusals %+v; want the namespace the scan did not index refused", p.Refusals)
	}
	if len(p.Actions) != 1 || p.Actions[0].Name != "listed" {
		t.Errorf("actions %+v; want the indexed, empty namespace", p.Actions)
	}
}

// TestRetryTakesUpTheLogAgain: after a failed line no intent is written until Retry;
// Retry ends the line the failure cut short, and the next intent is whole.
func TestRetryTakesUpTheLogAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := &Auditor{Log: f}
	// A line cut short, as a full disk leaves it, and the failure it came with.
	if _, err := f.WriteString(`{"id":"1","sta`); err != nil {
		t.Fatal(err)
	}
	a.failed = fmt.Errorf("%w: writing: %w", ErrAuditLog, syscall.ENOSPC)
	if err := a.Intent(&Intent{Time: time.Now()}); !errors.Is(err, ErrAuditLog) {
		t.Fatalf("an intent after a failed line: %v, want ErrAuditLog", err)
	}
	if err := a.Retry(); err != nil {
		t.Fatal(err)
	}
	if err := a.Intent(&Intent{Time: time.Now()}); err != nil {
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
	if err := a.Intent(&Intent{Time: time.Now()}); err != nil {
		t.Fatalf("an intent to a pipe: %v", err)
	}
	w.Close()
	b, _ := io.ReadAll(r)
	if !json.Valid(bytes.TrimSpace(b)) {
		t.Errorf("read from the pipe %q", b)
	}
}

// TestAnEmptyPageWithAContinueTokenIsNotEmpty: a namespace's content is read on past an
// empty page that carries a continue token; a type that answers only such pages is
// unread, never empty.
func TestAnEmptyPageWithAContinueTokenIsNotEmpty(t *testing.T) {
	kc := kubefake.NewClientset()
	disc := kc.Discovery().(*fakediscovery.FakeDiscovery)
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"list"}},
	}}}
	for _, tt := range []struct {
		name  string
		pages int // empty pages with a continue token before the one with an object; -1: never one
		want  string
	}{
		{"an object after two empty pages", 2, "the namespace still holds objects"},
		{"empty pages without end", -1, "could not list configmaps"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = metav1.AddMetaToScheme(scheme)
			meta := metadatafake.NewSimpleMetadataClient(scheme)
			served := 0
			meta.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
				served++
				list := &metav1.List{}
				if tt.pages >= 0 && served > tt.pages {
					list.Items = []runtime.RawExtension{{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}}}}
					return true, list, nil
				}
				list.Continue = fmt.Sprintf("token-%d", served)
				return true, list, nil
			})
			got := (&ContentReader{Discovery: disc, Metadata: meta}).Holds(context.Background(), "ns")
			if !strings.Contains(got, tt.want) {
				t.Errorf("Holds: %q; want %q", got, tt.want)
			}
		})
	}
}

// TestARecordAfterAFailedLineStartsALineOfItsOwn: with several writers, a removal in
// hand writes its record after another's line failed half way: the record starts a line
// of its own, whole JSON.
func TestARecordAfterAFailedLineStartsALineOfItsOwn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := &Auditor{Log: f}
	if _, err := f.WriteString(`{"id":"2","stage":"Inte`); err != nil {
		t.Fatal(err)
	}
	a.failed = fmt.Errorf("%w: writing: %w", ErrAuditLog, syscall.ENOSPC)
	if err := a.Line(&Record{ID: "1", Time: time.Now(), Result: Removed}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !json.Valid([]byte(lines[1])) {
		t.Errorf("log %q; want the cut line, then the record whole on a line of its own", lines)
	}
}
