package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMaskIgnoresAgesWidthsAndOrder(t *testing.T) {
	a := "NAME   AGE\nfoo    7s\nbar    12m3s\nwaited for 2d\n"
	b := "NAME    AGE\nbar     1h\nfoo     59s\nwaited for 3h4m\n"
	if d := diffLines(mask(a), mask(b)); d != "" {
		t.Fatalf("masked captures differ:\n%s", d)
	}
	c := "NAME   AGE\nfoo    7s\nbaz    1s\nwaited for 2d\n"
	if d := diffLines(mask(a), mask(c)); d != "  - bar <age>\n  + baz <age>" {
		t.Fatalf("a changed line must show: %q", d)
	}
}

func TestRenderSVGEscapesAndWraps(t *testing.T) {
	svg := string(renderSVG("$ kubectl finalize scan\n<unknown> & \"x\"\n" + strings.Repeat("x", maxColumns+5) + "\n"))
	for _, want := range []string{
		`<tspan class="cmd">kubectl finalize scan</tspan>`,
		`&lt;unknown&gt; &amp; &#34;x&#34;`,
		">" + strings.Repeat("x", maxColumns) + "<",
		">xxxxx<",
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("the image lacks %q:\n%s", want, svg)
		}
	}
}

func TestReadmeShowsTheCommittedCaptures(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "docs", "demo")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(dir, "README.md")
	body := "# x\n\n<!-- demo:scan -->\nold\n<!-- /demo:scan -->\n\n<!-- demo:doctor-namespace -->\n<!-- /demo:doctor-namespace -->\nend\n"
	for name, text := range map[string]string{"scan": "$ kubectl finalize scan\nNAME\n", "doctor-namespace": "$ kubectl finalize doctor ns/a\nns/a\n"} {
		if err := os.WriteFile(filepath.Join(out, name+".txt"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(readme, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := checkReadme(readme, out); len(p) != 1 {
		t.Fatalf("a README with stale blocks must fail the check: %v", p)
	}
	if err := updateReadme(readme, out); err != nil {
		t.Fatal(err)
	}
	if p := checkReadme(readme, out); len(p) != 0 {
		t.Fatalf("after the update: %v", p)
	}
	got, _ := os.ReadFile(readme)
	for _, want := range []string{"![kubectl finalize scan](docs/demo/scan.svg)", "```console\n$ kubectl finalize doctor ns/a\nns/a\n```", "\nend\n"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("README lacks %q:\n%s", want, got)
		}
	}
	if err := os.WriteFile(readme, []byte("# no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := checkReadme(readme, out); len(p) != 1 || !strings.Contains(p[0], "markers") {
		t.Fatalf("a README without markers: %v", p)
	}
}
