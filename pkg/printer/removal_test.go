package printer

import (
	"bytes"
	"strings"
	"testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// TestOnlyAGoneActedOnReadsVerified: the rows of a pass. A Gone the finalizer was removed
// on reads "verified"; a Gone that was kept (a broken rule, controls that could not be
// read, the breaker) reads as the rule's answer; every kept row says why in one phrase.
func TestOnlyAGoneActedOnReadsVerified(t *testing.T) {
	target := func(name string) finalizev1alpha1.ObjectReference {
		return finalizev1alpha1.ObjectReference{APIVersion: "db.example.com/v1", Kind: "Database", Resource: "databases", Namespace: "prod", Name: name}
	}
	const fin = "db.example.com/finalizer"
	removals := []finalizev1alpha1.Removal{
		{Target: target("removed"), Finalizer: fin, Rule: "dbs", Verdict: "Gone", Evidence: "GET https://dbapi/v1/i-1: 404 Not Found", Result: "Removed"},
		{Target: target("broken-rule"), Finalizer: fin, Rule: "typo", Verdict: "Gone", Evidence: "GET https://dbapi/v2/i-2: 404 Not Found", Result: "Kept",
			Message: "rule typo cannot be trusted: the provider is broken: it called databases/live -n prod gone; nothing is removed under it"},
		{Target: target("controls-unread"), Finalizer: fin, Rule: "dbs", Verdict: "Gone", Evidence: "GET https://dbapi/v1/i-3: 404 Not Found", Result: "Failed",
			Error: "databases/controls-unread -n prod: rule dbs could not verify it: reading its controls failed: etcdserver: request timed out"},
		{Target: target("breaker"), Finalizer: fin, Rule: "dbs", Verdict: "Gone", Evidence: "GET https://dbapi/v1/i-4: 404 Not Found", Result: "Kept",
			Message: "not removed: the pass planned 30 removals, more than the 20 allowed (maxRemovals); nothing was written"},
		{Target: target("present"), Finalizer: fin, Rule: "dbs", Verdict: "Present", Evidence: "GET https://dbapi/v1/i-5: 200 OK", Result: "Kept",
			Message: "rule dbs: the provider answered Present: GET https://dbapi/v1/i-5: 200 OK"},
		{Target: target("unaudited"), Finalizer: fin, Rule: "dbs", Verdict: "Gone", Evidence: "GET https://dbapi/v1/i-6: 404 Not Found", Result: "Kept",
			Message: "not attempted: an audit line could not be written, so no further removal was started"},
	}
	var buf bytes.Buffer
	if err := Removals(&buf, removals, RemovalTableOptions{Results: true}); err != nil {
		t.Fatal(err)
	}
	golden(t, "removals-kept.golden", buf.Bytes())
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n")[1:] {
		if strings.Contains(line, "verified by") != strings.HasPrefix(line, "databases.db.example.com/removed ") {
			t.Errorf("only the removal made on a Gone reads verified:\n%s", line)
		}
		if strings.Contains(line, " Kept") && !strings.Contains(line, " Kept: ") {
			t.Errorf("a kept row does not say why:\n%s", line)
		}
	}
}

// TestAForceDeletionSaysSo: a pod deleted in place of the kubelet of a node that does not
// answer shows no finalizer but the force deletion, and the kubelet of its node as the
// one it was waiting for.
func TestAForceDeletionSaysSo(t *testing.T) {
	pod := finalizev1alpha1.ObjectReference{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: "shop", Name: "db-0"}
	removals := []finalizev1alpha1.Removal{
		{Target: pod, Action: finalizev1alpha1.ActionForceDelete, Node: "worker-3", Cause: "NodeGone", Rule: "gone-nodes", Verdict: "Gone",
			Evidence: "GET nodes/worker-3: 404 Not Found", Result: "Removed"},
	}
	var buf bytes.Buffer
	if err := Removals(&buf, removals, RemovalTableOptions{Results: true}); err != nil {
		t.Fatal(err)
	}
	row := strings.Split(strings.TrimSpace(buf.String()), "\n")[1]
	for _, want := range []string{"pods/db-0 -n shop", "<force delete>", "kubelet on worker-3", "NodeGone", "verified by rule gone-nodes"} {
		if !strings.Contains(row, want) {
			t.Errorf("row lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestANotAskedRowSaysWhyWithoutAVerdict: a row its rule did not ask about (too young)
// has no verdict, and says why without an empty one ("rule R: : ...", #38).
func TestANotAskedRowSaysWhyWithoutAVerdict(t *testing.T) {
	r := &finalizev1alpha1.Removal{Finalizer: "x.example.com/y", Rule: "dbs", Evidence: "terminating for 7s, minAge 15m", Result: "Kept"}
	if got, want := Verification(r), "rule dbs: terminating for 7s, minAge 15m"; got != want {
		t.Errorf("Verification = %q, want %q", got, want)
	}
}
