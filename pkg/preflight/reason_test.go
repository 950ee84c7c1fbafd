package preflight

import (
	"os"
	"strings"
	"testing"
)

// The table of docs/preflight.md is generated from the reasons, between these markers.
const (
	preflightDoc = "../../docs/preflight.md"
	tableBegin   = "<!-- hazards: generated from the reasons pkg/preflight declares (go test ./pkg/preflight -run TestHazardTable -update) -->\n"
	tableEnd     = "<!-- end of hazards -->\n"
)

func TestEveryReasonIsComplete(t *testing.T) {
	if len(Reasons()) < 6 {
		t.Fatalf("%d reasons declared, want at least the 6 of v1alpha1", len(Reasons()))
	}
	for _, r := range Reasons() {
		t.Run(r.Name, func(t *testing.T) {
			switch {
			case r.Name == "":
				t.Error("no name")
			case r.Rank < 0:
				t.Errorf("rank %d, want 0 (blocks everyone) or more", r.Rank)
			case r.Help == "" || strings.HasSuffix(r.Help, "."):
				t.Errorf("help %q: want a few words, without a final period", r.Help)
			}
			for _, cell := range []string{r.Deleted, r.Stranded} {
				if cell == "" || strings.Contains(cell, "|") || strings.Contains(cell, "\n") {
					t.Errorf("doc %q: want one table cell", cell)
				}
			}
		})
	}
}

// TestHazardTable: the table of docs/preflight.md is the reasons'; -update rewrites it.
func TestHazardTable(t *testing.T) {
	var table strings.Builder
	table.WriteString("| reason | what is deleted | what is left stuck |\n|---|---|---|\n")
	for _, r := range Reasons() {
		table.WriteString("| `" + r.Name + "` | " + r.Deleted + " | " + r.Stranded + " |\n")
	}
	b, err := os.ReadFile(preflightDoc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no table between %q and %q", preflightDoc, tableBegin, tableEnd)
	}
	if got := s[i+len(tableBegin) : j]; got != table.String() {
		if !*update {
			t.Fatalf("%s: the hazard table is not the reasons'; run go test ./pkg/preflight -run TestHazardTable -update\ngot:\n%s\nwant:\n%s", preflightDoc, got, table.String())
		}
		if err := os.WriteFile(preflightDoc, []byte(s[:i+len(tableBegin)]+table.String()+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
