package cmd

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// docs are the pages whose commands users copy.
func docs(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append(pages, "../../README.md")
}

var fence = regexp.MustCompile("(?s)```(?:sh|bash|console)\n(.*?)```")

// commands returns every `kubectl finalize ...` command of the shell blocks of a page,
// continuation lines joined, prompts, pipes, redirections and comments cut.
func commands(text string) []string {
	var out []string
	for _, block := range fence.FindAllStringSubmatch(text, -1) {
		joined := strings.ReplaceAll(block[1], "\\\n", " ")
		for _, line := range strings.Split(joined, "\n") {
			line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
			if !strings.HasPrefix(line, "kubectl finalize ") {
				continue
			}
			// A pipe or a redirection of the output ends the command.
			for _, op := range []string{" | ", " > ", " >> "} {
				if i := strings.Index(line, op); i >= 0 {
					line = line[:i]
				}
			}
			if i := strings.Index(line, "  #"); i >= 0 {
				line = line[:i]
			}
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// words splits a command line as a shell does for the quoting the docs use.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	quote, in := rune(0), false
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// TestEveryDocumentedCommandParses runs the parser of the real command tree over every
// command the docs show, so a renamed flag or command cannot leave the docs behind.
func TestEveryDocumentedCommandParses(t *testing.T) {
	n := 0
	for _, page := range docs(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range commands(string(b)) {
			n++
			if err := parse(line); err != nil {
				t.Errorf("%s: %q: %v", filepath.Base(page), line, err)
			}
		}
	}
	if n < 20 {
		t.Fatalf("found only %d commands in the docs: is the extraction broken?", n)
	}
}

// parse parses a command line as the plugin would, without running it.
func parse(line string) error {
	root := NewCmdFinalize(genericiooptions.NewTestIOStreamsDiscard())
	c, rest, err := root.Find(words(line)[2:])
	if err != nil {
		return err
	}
	if err := c.ParseFlags(rest); err != nil {
		return err
	}
	return c.ValidateArgs(c.Flags().Args())
}

func TestParseCatchesStaleCommands(t *testing.T) {
	page := "```sh\nkubectl finalize scan --no-such-flag  # x\n$ kubectl finalize reconcile --once \\\n  --polcy p.yaml\nkubectl finalize version extra\n```\n"
	cmds := commands(page)
	if len(cmds) != 3 {
		t.Fatalf("commands: %q", cmds)
	}
	for _, c := range cmds {
		if parse(c) == nil {
			t.Errorf("%q parses", c)
		}
	}
}

// causes are the reasons the doctor prints, read from the API types' source: every
// untyped constant named Reason... (the IncompleteReason constants are typed), so that a
// cause added to the contract is a cause the tests below require documented.
func causes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../apis/finalize/v1alpha1/types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if vs.Type != nil {
				continue
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !strings.HasPrefix(name.Name, "Reason") || !ok || lit.Kind != token.STRING {
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, v)
			}
		}
	}
	// The list is the source's: these are known members of it.
	for _, known := range []string{finalizev1alpha1.ReasonUnknown, finalizev1alpha1.ReasonVolumeStillAttached, finalizev1alpha1.ReasonConversionWebhookUnavailable} {
		if !slices.Contains(out, known) {
			t.Fatalf("the causes read from types.go (%q) lack %s", out, known)
		}
	}
	return out
}

// TestTheRunbookWalksEveryCause checks that docs/runbook.md has a section for every
// reason the doctor prints, and that the doctor's help names each for scripts.
func TestTheRunbookWalksEveryCause(t *testing.T) {
	b, err := os.ReadFile("../../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	help, err := os.ReadFile("../../docs/reference/kubectl_finalize_doctor.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, reason := range causes(t) {
		if !regexp.MustCompile(`(?m)^### .*\b` + reason + `\b`).Match(b) {
			t.Errorf("docs/runbook.md has no section on %s", reason)
		}
		if !regexp.MustCompile(`\b` + reason + `\b`).Match(help) {
			t.Errorf("the doctor's help (docs/reference/kubectl_finalize_doctor.md) does not name cause %s", reason)
		}
	}
}

// TestTheScanHelpNamesEveryIncompleteReason checks that the scan's help says what each
// reason of an "incomplete" entry means: the typed IncompleteReason constants of
// types.go, and ConversionWebhookUnavailable, a cause and an incomplete reason at once.
func TestTheScanHelpNamesEveryIncompleteReason(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../apis/finalize/v1alpha1/types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	reasons := []string{finalizev1alpha1.ReasonConversionWebhookUnavailable}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "IncompleteReason" {
				continue
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					r, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					reasons = append(reasons, r)
				}
			}
		}
	}
	if !slices.Contains(reasons, string(finalizev1alpha1.ReasonClusterUnreachable)) {
		t.Fatalf("the incomplete reasons read from types.go (%q) lack ClusterUnreachable", reasons)
	}
	help, err := os.ReadFile("../../docs/reference/kubectl_finalize_scan.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reasons {
		if !regexp.MustCompile(`(?m)^\s+` + r + `\s+\S`).Match(help) {
			t.Errorf("the scan's help (docs/reference/kubectl_finalize_scan.md) does not say what incomplete reason %s means", r)
		}
	}
}

var link = regexp.MustCompile(`\]\(([^)#\s]+)(?:#[^)]*)?\)`)

// TestRelativeLinksResolve checks that every link of the docs to a file of the
// repository points at one.
func TestRelativeLinksResolve(t *testing.T) {
	pages := docs(t)
	more, _ := filepath.Glob("../../docs/*/*.md")
	for _, page := range append(pages, more...) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
			}
		}
	}
}

func TestWords(t *testing.T) {
	got := strings.Join(words(`kubectl finalize remove a --reason "x y" --f 'a b'`), "|")
	if got != "kubectl|finalize|remove|a|--reason|x y|--f|a b" {
		t.Fatal(got)
	}
}

// threatModelTests finds the tests docs/threat-model.md names: "PACKAGE: `TestA`,
// `TestB`", where PACKAGE is a folder under test/ ("test/verify") or under pkg/ ("write"
// for pkg/remove/write, "plan" for pkg/remove/plan, "cmd/remove" for pkg/cmd/remove).
var threatModelTests = regexp.MustCompile("((?:test/)?[a-z][a-z/]*): ((?:`(?:Test|Fuzz)[A-Za-z0-9_]+`(?:, )?)+)")

// TestTheThreatModelNamesTestsThatExist: every row of docs/threat-model.md names the test
// that shows it; a test renamed or removed must take its row with it.
func TestTheThreatModelNamesTestsThatExist(t *testing.T) {
	page, err := os.ReadFile("../../docs/threat-model.md")
	if err != nil {
		t.Fatal(err)
	}
	short := map[string]string{"write": "pkg/remove/write", "plan": "pkg/remove/plan", "util": "pkg/cmd/util"}
	named := 0
	for _, m := range threatModelTests.FindAllStringSubmatch(string(page), -1) {
		dir := m[1]
		switch {
		case short[dir] != "":
			dir = short[dir]
		case !strings.HasPrefix(dir, "test/"):
			dir = "pkg/" + dir
		}
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("docs/threat-model.md names %s, which has no tests", m[1])
			continue
		}
		var src strings.Builder
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src.Write(b)
		}
		for _, name := range regexp.MustCompile("`([A-Za-z0-9_]+)`").FindAllStringSubmatch(m[2], -1) {
			named++
			if !strings.Contains(src.String(), "func "+name[1]+"(") {
				t.Errorf("docs/threat-model.md names %s: %s, which is not a test there", m[1], name[1])
			}
		}
	}
	if named < 50 {
		t.Errorf("docs/threat-model.md names %d tests; the pattern no longer finds them", named)
	}
}
