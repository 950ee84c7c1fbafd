package reconcile

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
)

// auditLines reads an audit log: each line's stage and id.
func auditLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

// TestAFullAuditLogStopsThePassBeforeAnyWrite: the audit log is on a full disk. No
// finalizer goes: the first removal fails with the disk's error (its intent line could
// not be written, so nothing was), no other is attempted, and the pass exits 1.
func TestAFullAuditLogStopsThePassBeforeAnyWrite(t *testing.T) {
	audit := cli.FullDiskLog(t)
	ns, fin, c := world(t)
	versions := map[string]string{}
	for _, name := range []string{"a", "b", "c"} {
		versions[name] = object(t, ns, name, fin, "deleted-"+name, true).ResourceVersion
	}
	rep, r := pass(t, cp.AdminKubeconfig, cli.WritePolicy(t, "", c.Rule("dbs", fin, "")), "--audit-log", audit)
	if r.Code != 1 || !strings.Contains(r.Stderr, "1 of the removals failed") {
		t.Errorf("exit %d, want 1; stderr:\n%s", r.Code, r.Stderr)
	}
	if rep.Summary[finalizev1alpha1.ResultFailed] != 1 || rep.Summary[finalizev1alpha1.ResultKept] != 2 || rep.Summary[finalizev1alpha1.ResultRemoved] != 0 {
		t.Errorf("summary %v, want 1 Failed and 2 Kept", rep.Summary)
	}
	for _, a := range rep.Actions {
		switch a.Result {
		case finalizev1alpha1.ResultFailed:
			if !strings.Contains(a.Error, "no space left on device") || !strings.Contains(a.Error, "not removed") {
				t.Errorf("%s: error %q does not say it was not removed, for lack of space", a.Target.Name, a.Error)
			}
		case finalizev1alpha1.ResultKept:
			if !strings.Contains(a.Message, "not attempted: an audit line could not be written") {
				t.Errorf("%s: kept with %q", a.Target.Name, a.Message)
			}
		default:
			t.Errorf("%s: %s %s", a.Target.Name, a.Result, a.Error)
		}
	}
	for name, rv := range versions {
		if got := resourceVersion(t, ns, name); got != rv {
			t.Errorf("%s was written (resourceVersion %s → %s) although nothing could be audited", name, rv, got)
		}
	}
}

// TestEveryRemovalHasAnIntentLineBeforeItsRecord: each removal writes two lines with the
// same id, its intent (synced before the write) and its record after.
func TestEveryRemovalHasAnIntentLineBeforeItsRecord(t *testing.T) {
	ns, fin, c := world(t)
	for _, name := range []string{"a", "b"} {
		object(t, ns, name, fin, "deleted-"+name, true)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	rep, r := pass(t, cp.AdminKubeconfig, cli.WritePolicy(t, "", c.Rule("dbs", fin, "")), "--audit-log", audit)
	if r.Code != 0 || rep.Summary[finalizev1alpha1.ResultRemoved] != 2 {
		t.Fatalf("exit %d, summary %v: %s", r.Code, rep.Summary, r.Stderr)
	}
	lines := auditLines(t, audit)
	intents := map[any]int{}
	for i, l := range lines {
		switch l["stage"] {
		case "Intent":
			if _, ok := l["result"]; ok || l["id"] == "" || l["rule"] != "dbs" || l["verified"] != true {
				t.Errorf("intent line %v", l)
			}
			intents[l["id"]] = i
		case "Complete":
			at, ok := intents[l["id"]]
			if !ok || at > i || l["result"] != "Removed" {
				t.Errorf("record %v has no intent line before it", l)
			}
		default:
			t.Errorf("a line of no stage: %v", l)
		}
	}
	if len(lines) != 4 || len(intents) != 2 {
		t.Errorf("%d lines, %d intents; want an intent and a record for each of 2 removals", len(lines), len(intents))
	}
}

// TestAContinuousRunNeverGoesQuietAfterTheAuditLogFails: a continuous run whose audit
// log is on a full disk fails every pass, not only the first (each pass tries the log
// again, and its first removal fails), and removes the finalizers once the disk has
// room again, with every line whole.
func TestAContinuousRunNeverGoesQuietAfterTheAuditLogFails(t *testing.T) {
	audit, free := cli.FullDisk(t)
	ns, fin, c := world(t)
	for _, name := range []string{"a", "b"} {
		object(t, ns, name, fin, "deleted-"+name, true)
	}
	p := start(t, cp.AdminKubeconfig, "reconcile", "--policy", cli.WritePolicy(t, "", c.Rule("dbs", fin, "")),
		"--interval", "1s", "--metrics-bind-address", "0", "-o", "json", "--audit-log", audit)
	reps := p.awaitPasses(t, 3)
	for i, rep := range reps[:3] {
		if rep.Summary[finalizev1alpha1.ResultFailed] == 0 || rep.Summary[finalizev1alpha1.ResultRemoved] != 0 {
			t.Errorf("pass %d on a full disk: summary %v, want a failure and no removal", i+1, rep.Summary)
		}
	}
	free()
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return resourceVersion(t, ns, "a") == "gone" && resourceVersion(t, ns, "b") == "gone", nil
	}); err != nil {
		t.Fatalf("the finalizers were not removed once the disk had room; last reports: %+v", p.reports(t)[len(p.reports(t))-1].Summary)
	}
	// Each record line follows its removal, the re-read and the Event: wait for both.
	var lines []map[string]any
	complete := 0
	_ = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		lines, complete = auditLines(t, audit), 0 // fails on a line that is not whole JSON
		for _, l := range lines {
			if l["stage"] == "Complete" && l["result"] == "Removed" {
				complete++
			}
		}
		return complete >= 2, nil
	})
	if complete != 2 {
		t.Errorf("%d records of a removal in the audit log, want 2: %v", complete, lines)
	}
}

// TestTheRecordNamesTheVerificationTheWriteWasMadeOn: the stuck object's instance
// annotation changes while its first verification is being answered, so the write pinned
// to the version verified fails; the object is verified again, about the new instance,
// which is gone too, and the finalizer is removed on that second answer. The report's row,
// the audit log's record and the Event name the second request and when it was answered,
// and keep the first beside it as the first; an intent line naming the second was
// written before the write.
func TestTheRecordNamesTheVerificationTheWriteWasMadeOn(t *testing.T) {
	ns, fin, c := world(t)
	kube := cp.Kube(t)
	object(t, ns, "moved", fin, "deleted-first", true)
	c.OnRequest(func(id string) {
		if id == "deleted-first" && c.Hits(id) == 1 {
			_, _ = kube.CoreV1().ConfigMaps(ns).Patch(context.Background(), "moved", types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"instance":"deleted-second"}}}`), metav1.PatchOptions{})
		}
	})
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	_, r := pass(t, cp.AdminKubeconfig, cli.WritePolicy(t, "", c.Rule("dbs", fin, "")), "--audit-log", audit)
	if r.Code != 0 || c.Hits("deleted-first") != 1 || c.Hits("deleted-second") != 1 || resourceVersion(t, ns, "moved") != "gone" {
		t.Fatalf("code %d, asked %v: %s", r.Code, c.Asked(), r.Stderr)
	}
	second, first := "/instances/deleted-second: 404", "/instances/deleted-first: 404"

	// The report's row, read as JSON: the verification acted on, and the first beside it.
	var rep struct {
		Actions []map[string]any `json:"actions"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var row map[string]any
	for _, a := range rep.Actions {
		if a["target"].(map[string]any)["name"] == "moved" {
			row = a
		}
	}
	firstRow, _ := row["firstVerification"].(map[string]any)
	at, _ := row["verifiedAt"].(string)
	if row["result"] != "Removed" || !strings.Contains(fmt.Sprint(row["evidence"]), second) || at == "" || row["verifications"] != 2.0 ||
		firstRow == nil || !strings.Contains(fmt.Sprint(firstRow["evidence"]), first) || fmt.Sprint(firstRow["verifiedAt"]) >= at {
		t.Errorf("the report's row does not name the second verification as the one acted on: %v", row)
	}

	// The audit log: an intent naming the second verification before the write, and the
	// record naming it.
	var intent, record map[string]any
	for _, l := range auditLines(t, audit) {
		if l["target"].(map[string]any)["name"] != "moved" {
			continue
		}
		switch l["stage"] {
		case "Intent":
			intent = l
		case "Complete":
			record = l
		}
	}
	if intent == nil || record == nil || intent["id"] != record["id"] ||
		!strings.Contains(fmt.Sprint(intent["evidence"]), second) || intent["resourceVersion"] != record["resourceVersion"] || intent["verifiedAt"] == nil {
		t.Errorf("the last intent line does not name the verification the write was made on:\nintent %v\nrecord %v", intent, record)
	}
	recordAt, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(record["verifiedAt"]))
	rowAt, _ := time.Parse(time.RFC3339Nano, at)
	firstRecord, _ := record["firstVerification"].(map[string]any)
	if record == nil || !strings.Contains(fmt.Sprint(record["evidence"]), second) || recordAt.IsZero() || !recordAt.Truncate(time.Microsecond).Equal(rowAt) ||
		record["verifications"] != 2.0 || firstRecord == nil || !strings.Contains(fmt.Sprint(firstRecord["evidence"]), first) {
		t.Errorf("the audit record does not name the second verification as the one acted on: %v", record)
	}

	// The Event names it too, with the time it was answered.
	event, _ := record["event"].(string)
	evNS, evName, _ := strings.Cut(event, "/")
	ev, err := kube.EventsV1().Events(evNS).Get(t.Context(), evName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Event %q: %v", event, err)
	}
	if !strings.Contains(ev.Note, "verified by rule dbs at "+at+": GET "+c.URL+second) {
		t.Errorf("the Event's note does not name the second verification and its time (%s): %s", at, ev.Note)
	}
}

// TestADryRunWhoseAuditLogCannotBeOpenedFails: a dry run is how a policy is rolled out
// (docs/reconcile.md): it must fail where the pass it stands for would. With an audit
// log the pass cannot open (its folder is not there: a volume not mounted), the pass
// fails before any write; the dry run said WouldRemove and exited 0. It fails too, with
// the same error, and writes nothing.
func TestADryRunWhoseAuditLogCannotBeOpenedFails(t *testing.T) {
	ns, fin, c := world(t)
	object(t, ns, "gone", fin, "deleted-1", true)
	policy := cli.WritePolicy(t, "", c.Rule("dbs", fin, "  namespaces: ["+ns+"]\n"))
	log := filepath.Join(t.TempDir(), "not-mounted", "audit.jsonl")
	const says = "opening the audit log"
	for _, dry := range []bool{true, false} {
		args := []string{"reconcile", "--once", "--policy", policy, "--audit-log", log}
		if dry {
			args = append(args, "--dry-run")
		}
		r := cli.Run(t, cp.AdminKubeconfig, args...)
		if r.Code == 0 || !strings.Contains(r.Stderr, says) {
			t.Errorf("dry run %v: code %d; want a failure saying %q; stdout:\n%s\nstderr:\n%s", dry, r.Code, says, r.Stdout, r.Stderr)
		}
	}
	if got := resourceVersion(t, ns, "gone"); got == "gone" {
		t.Error("a pass whose audit log cannot be opened removed a finalizer")
	}
	if _, err := os.Stat(filepath.Dir(log)); !os.IsNotExist(err) {
		t.Errorf("the dry run made the log's folder: %v", err)
	}
}
