package doctor

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
)

// The docs whose cause tables are generated from the registry, between these markers.
const (
	doctorDoc  = "../../docs/doctor.md"
	runbookDoc = "../../docs/runbook.md"
	tableBegin = "<!-- causes: generated from the causes pkg/doctor registers (go test ./pkg/doctor -run TestCauseTables -update) -->\n"
	tableEnd   = "<!-- end of causes -->\n"
)

func TestEveryCauseIsComplete(t *testing.T) {
	sections := runbookSections(t)
	if len(Causes()) < 19 {
		t.Fatalf("%d causes registered, want at least the 19 of v1alpha1", len(Causes()))
	}
	for _, c := range Causes() {
		t.Run(c.Reason, func(t *testing.T) {
			switch {
			case c.Reason == "":
				t.Error("no reason")
			case c.Priority < 0:
				t.Errorf("priority %d, want 0 (most urgent) or more", c.Priority)
			case c.Help == "" || strings.HasSuffix(c.Help, "."):
				t.Errorf("help %q: want a few words, without a final period", c.Help)
			case c.Doc == "" || strings.Contains(c.Doc, "|") || strings.Contains(c.Doc, "\n"):
				t.Errorf("doc %q: want one table cell", c.Doc)
			}
			if _, ok := sections[c.Reason]; !ok {
				t.Errorf("docs/runbook.md has no section for it (### %s)", c.Reason)
			}
		})
	}
}

// TestEveryReasonGivenIsRegistered: a cause the rules give but nobody registered would
// sort first among an object's causes (priority 0) and be missing from --help and docs.
func TestEveryReasonGivenIsRegistered(t *testing.T) {
	// The reasons of an incomplete read, not of a cause.
	incomplete := sets.New("ReasonDiscoveryFailed", "ReasonForbidden", "ReasonListFailed", "ReasonClusterUnreachable")
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	used := regexp.MustCompile(`finalizev1alpha1\.Reason(\w+)`)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range used.FindAllStringSubmatch(string(src), -1) {
			if incomplete.Has("Reason" + m[1]) {
				continue
			}
			if _, ok := causes[m[1]]; !ok {
				t.Errorf("%s gives %s, which no family registers", name, m[1])
			}
		}
	}
}

// TestCauseTables: the cause tables of docs/doctor.md and docs/runbook.md are the
// registry's; -update rewrites them.
func TestCauseTables(t *testing.T) {
	sections := runbookSections(t)
	var doctor, runbook strings.Builder
	doctor.WriteString("| reason | when |\n|---|---|\n")
	runbook.WriteString("| reason | in short |\n|---|---|\n")
	for _, c := range Causes() {
		doctor.WriteString("| `" + c.Reason + "` | " + c.Doc + " |\n")
		runbook.WriteString("| [`" + c.Reason + "`](#" + sections[c.Reason] + ") | " + c.Help + " |\n")
	}
	for doc, table := range map[string]string{doctorDoc: doctor.String(), runbookDoc: runbook.String()} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
		if i < 0 || j < i {
			t.Fatalf("%s: no table between %q and %q", doc, tableBegin, tableEnd)
		}
		got := s[i+len(tableBegin) : j]
		if got == table {
			continue
		}
		if *update {
			if err := os.WriteFile(doc, []byte(s[:i+len(tableBegin)]+table+s[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: the cause table is not the registry's; run go test ./pkg/doctor -run TestCauseTables -update\ngot:\n%s\nwant:\n%s", doc, got, table)
	}
}

// runbookSections maps each reason a heading of docs/runbook.md names to the heading's
// anchor, as GitHub makes it.
func runbookSections(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(runbookDoc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	strip := regexp.MustCompile(`[^a-z0-9 _-]`)
	word := regexp.MustCompile(`[A-Z][A-Za-z]+`)
	for _, line := range strings.Split(string(b), "\n") {
		heading, ok := strings.CutPrefix(line, "### ")
		if !ok {
			continue
		}
		anchor := strings.ReplaceAll(strip.ReplaceAllString(strings.ToLower(heading), ""), " ", "-")
		for _, w := range word.FindAllString(heading, -1) {
			out[w] = anchor
		}
	}
	return out
}
