package reconcile

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
