package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTheDemoUsesOnlyThePublicTestEnvironment: of test/, the demo imports test/env
// alone, the package kept stable for it; the rest of test/ changes with the tests.
func TestTheDemoUsesOnlyThePublicTestEnvironment(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	const testTree = "github.com/kubectl-finalize/kubectl-finalize/test/"
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			if path := strings.Trim(imp.Path.Value, `"`); strings.HasPrefix(path, testTree) && path != testTree+"env" {
				t.Errorf("%s imports %s: the demo uses test/env alone", f, path)
			}
		}
	}
}

// TestTryListNamesTheRealFiles: the printed commands name the policy and audit log in
// the demo's folder, and the three that use the policy come in the order they work.
func TestTryListNamesTheRealFiles(t *testing.T) {
	var out bytes.Buffer
	printTry(&out, "/d", "/d/kubeconfig", "/bins", "/d/policy.yaml", "https://127.0.0.1:1", "db.example/finalizer")
	var got []string
	for _, c := range tryCommands(out.String()) {
		if strings.Contains(c, "--policy") {
			got = append(got, c)
		}
	}
	want := []string{
		"kubectl finalize reconcile --once --dry-run --policy /d/policy.yaml",
		"kubectl finalize remove database/reports-2023-db -n reporting --policy /d/policy.yaml --finalizer db.example/finalizer --yes --audit-log /d/audit.jsonl",
		"kubectl finalize reconcile --once --policy /d/policy.yaml --audit-log /d/audit.jsonl",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the policy commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTryCommandsJoinsAndDropsComments(t *testing.T) {
	printed := "x\nTry:\n  kubectl a   # one\n  # a header\n  kubectl b \\\n    --c d\n\nStop it with: make demo-down\n"
	if got, want := tryCommands(printed), []string{"kubectl a", "kubectl b --c d"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestCheckTryCatchesADryRunThatWrites runs checkTry against a fake kubectl: a demo
// that behaves passes, one whose dry run removes a finalizer fails.
func TestCheckTryCatchesADryRunThatWrites(t *testing.T) {
	dir := t.TempDir()
	var printed bytes.Buffer
	printTry(&printed, dir, filepath.Join(dir, "kubeconfig"), "/bins", filepath.Join(dir, "policy.yaml"), "https://127.0.0.1:1", "db.example/finalizer")
	audit := filepath.Join(dir, "audit.jsonl")
	fake := func(dryRunWrites bool) kubectlFunc {
		dbs := []string{"analytics-db", "billing-db", "live-db", "orders-db", "reports-2023-db", "reports-2024-db"}
		drop := func(name string) {
			dbs = slices.DeleteFunc(dbs, func(s string) bool { return s == name })
			f, _ := os.OpenFile(audit, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			defer f.Close()
			_, _ = f.WriteString(`{"object":"` + name + `"}` + "\n")
		}
		return func(args ...string) (string, int, error) {
			line := strings.Join(args, " ")
			switch {
			case strings.HasPrefix(line, "get databases"):
				return strings.Join(dbs, "\n"), 0, nil
			case strings.Contains(line, "--dry-run"):
				if dryRunWrites {
					drop("reports-2024-db")
				}
				return "reports-2023-db WouldRemove 404 Not Found\nreports-2024-db WouldRemove\norders-db 200 OK Kept", 0, nil
			case strings.Contains(line, "remove"):
				drop("reports-2023-db")
				return "reports-2023-db: finalizer removed", 0, nil
			case strings.Contains(line, "reconcile"):
				drop("reports-2024-db")
				return "reports-2024-db Removed\norders-db Kept", 0, nil
			}
			return "", 1, nil
		}
	}
	if err := checkTry(printed.String(), fake(false)); err != nil {
		t.Fatalf("a demo that behaves: %v", err)
	}
	if err := os.Remove(audit); err != nil {
		t.Fatal(err)
	}
	if err := checkTry(printed.String(), fake(true)); err == nil || !strings.Contains(err.Error(), "--dry-run") {
		t.Fatalf("a dry run that removes a finalizer must fail the check: %v", err)
	}
}
