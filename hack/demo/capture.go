package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/test/env"
)

// A shot is one command whose real output the docs show: as text in docs/demo/NAME.txt
// and the README, and as an image in docs/demo/NAME.svg.
type shot struct {
	name string
	args []string
	// readme: the README shows this shot between <!-- demo:NAME --> markers.
	readme bool
}

var shots = []shot{
	{name: "scan", args: []string{"scan"}, readme: true},
	{name: "doctor-namespace", args: []string{"doctor", "ns/orphaned-operator"}, readme: true},
	{name: "doctor", args: []string{"doctor"}},
}

// capture starts a control plane, seeds the demo, lets the namespace controller make its
// first pass, and runs every shot through the real kubectl with the plugin on PATH. With
// check, it compares the captures with the committed ones instead of writing them.
func capture(out, readme string, check bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "kubectl-finalize-capture-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bin")
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, "kubectl-finalize"), "./cmd/kubectl-finalize")
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building kubectl-finalize: %w\n%s", err, b)
	}
	e, err := env.Start(ctx, env.Options{Dir: filepath.Join(tmp, "demo")})
	if err != nil {
		return err
	}
	defer e.Stop()
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(e.BinDir, "kubectl"), append([]string{"finalize"}, args...)...)
		cmd.Env = append(os.Environ(),
			"PATH="+bin+string(os.PathListSeparator)+e.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+e.AdminKubeconfig)
		// One pipe for both streams, as a terminal shows them.
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			err = nil // the demo's unavailable APIService makes every scan partial
		}
		return b.String(), err
	}
	if err := settle(ctx, run); err != nil {
		return err
	}
	var problems []string
	for _, sh := range shots {
		output, err := run(sh.args...)
		if err != nil {
			return fmt.Errorf("kubectl finalize %s: %w\n%s", strings.Join(sh.args, " "), err, output)
		}
		text := "$ kubectl finalize " + strings.Join(sh.args, " ") + "\n" + output
		if check {
			problems = append(problems, sh.check(out, text)...)
			continue
		}
		if err := sh.write(out, text); err != nil {
			return err
		}
	}
	if err := captureTry(ctx, e, bin); err != nil {
		return err
	}
	if check {
		problems = append(problems, checkReadme(readme, out)...)
		if len(problems) > 0 {
			return fmt.Errorf("the demo output in the docs is stale (run make docs):\n%s", strings.Join(problems, "\n"))
		}
		return nil
	}
	return updateReadme(readme, out)
}

// captureTry runs the Try list's commands that write, as make demo prints them, against
// the demo's cloud and policy (checkTry).
func captureTry(ctx context.Context, e *env.Env, bin string) error {
	var printed bytes.Buffer
	printTry(&printed, e.Dir, e.AdminKubeconfig, e.BinDir, e.Policy, e.CloudURL, e.Seeder.DatabaseFinalizer())
	kubectl := func(args ...string) (string, int, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(e.BinDir, "kubectl"), args...)
		cmd.Env = append(os.Environ(),
			"PATH="+bin+string(os.PathListSeparator)+e.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+e.AdminKubeconfig)
		b, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(b), exit.ExitCode(), nil
		}
		return string(b), 0, err
	}
	if err := checkTry(printed.String(), kubectl); err != nil {
		return fmt.Errorf("the demo's Try list: %w", err)
	}
	return nil
}

// settle waits until every namespace has had the namespace controller's first pass, and
// the retired databases are as old, so the captures show causes rather than "not proven
// yet".
func settle(ctx context.Context, run func(...string) (string, error)) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := run("doctor", "-o", "json")
		if err != nil {
			return err
		}
		var list struct {
			Items []struct {
				Target struct {
					Kind, Name, Namespace string
				} `json:"target"`
				TerminatingSeconds int64 `json:"terminatingSeconds"`
				Cause              struct {
					Reason string `json:"reason"`
				} `json:"cause"`
			} `json:"items"`
		}
		// Warnings share the pipe: the JSON document starts at the first brace.
		if err := json.NewDecoder(strings.NewReader(out[max(strings.Index(out, "{"), 0):])).Decode(&list); err != nil {
			return fmt.Errorf("doctor -o json: %w\n%s", err, out)
		}
		var waiting []string
		for _, it := range list.Items {
			// The retired databases, like the namespaces, must show their operator inactive.
			retired := it.Target.Kind == "Database" && it.Target.Namespace == "reporting"
			if (it.Target.Kind == "Namespace" || retired) && (it.TerminatingSeconds < 15 || it.Cause.Reason == "Progressing") {
				waiting = append(waiting, it.Target.Name)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespaces %s did not settle in 2 minutes", strings.Join(waiting, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func (sh shot) write(dir, text string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, sh.name+".txt"), []byte(text), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, sh.name+".svg"), renderSVG(text), 0o644)
}

// check compares a fresh capture with the committed text, masking what changes from run
// to run, and the committed image with the one the committed text renders.
func (sh shot) check(dir, text string) []string {
	committed, err := os.ReadFile(filepath.Join(dir, sh.name+".txt"))
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	if d := diffLines(mask(string(committed)), mask(text)); d != "" {
		problems = append(problems, fmt.Sprintf("%s.txt differs from what kubectl finalize %s prints now (ages masked, - committed, + now):\n%s", sh.name, strings.Join(sh.args, " "), d))
	}
	svg, err := os.ReadFile(filepath.Join(dir, sh.name+".svg"))
	if err != nil || !bytes.Equal(svg, renderSVG(string(committed))) {
		problems = append(problems, sh.name+".svg is not the image of "+sh.name+".txt")
	}
	return problems
}

var (
	// A duration as kubectl and the doctor print it: 7s, 12m, 3h4m, 2d.
	volatile = regexp.MustCompile(`\b\d+(?:ms|s|m|h|d|y)(?:\d+[smh])?\b`)
	spaces   = regexp.MustCompile(`[ \t]+`)
)

// mask makes a capture comparable with another of a later run: ages vary, and with them
// column widths and the order of objects deleted in the same second. What is left are
// the lines themselves, sorted.
func mask(text string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		l = volatile.ReplaceAllString(l, "<age>")
		lines = append(lines, strings.TrimSpace(spaces.ReplaceAllString(l, " ")))
	}
	slices.Sort(lines)
	return lines
}

// diffLines lists the lines only one side has.
func diffLines(a, b []string) string {
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		count[l]--
	}
	var out []string
	for _, l := range a {
		if count[l] > 0 {
			out = append(out, "  - "+l)
			count[l]--
		}
	}
	for _, l := range b {
		if count[l] < 0 {
			out = append(out, "  + "+l)
			count[l]++
		}
	}
	return strings.Join(out, "\n")
}

// readmeBlock is what the README holds for a shot: the image, and the text beneath it.
func readmeBlock(dir, name, text string) string {
	rel := filepath.ToSlash(filepath.Join(dir, name))
	return fmt.Sprintf("<!-- demo:%[1]s -->\n![kubectl finalize %[3]s](%[2]s.svg)\n\n<details><summary>As text</summary>\n\n```console\n%[4]s```\n\n</details>\n<!-- /demo:%[1]s -->",
		name, rel, strings.TrimPrefix(strings.SplitN(text, "\n", 2)[0], "$ kubectl finalize "), text)
}

var readmeMarker = regexp.MustCompile(`(?s)<!-- demo:([a-z-]+) -->.*?<!-- /demo:([a-z-]+) -->`)

// rewriteReadme puts the committed captures between the README's markers.
func rewriteReadme(readme, dir string) (string, []byte, error) {
	b, err := os.ReadFile(readme)
	if err != nil {
		return "", nil, err
	}
	rel, err := filepath.Rel(filepath.Dir(readme), dir)
	if err != nil {
		return "", nil, err
	}
	var missing []string
	for _, sh := range shots {
		if sh.readme && !bytes.Contains(b, []byte("<!-- demo:"+sh.name+" -->")) {
			missing = append(missing, sh.name)
		}
	}
	if len(missing) > 0 {
		return "", nil, fmt.Errorf("%s has no <!-- demo:NAME --> ... <!-- /demo:NAME --> markers for %s", readme, strings.Join(missing, ", "))
	}
	var errs []error
	out := readmeMarker.ReplaceAllStringFunc(string(b), func(m string) string {
		name := readmeMarker.FindStringSubmatch(m)[1]
		text, err := os.ReadFile(filepath.Join(dir, name+".txt"))
		if err != nil {
			errs = append(errs, err)
			return m
		}
		return readmeBlock(rel, name, string(text))
	})
	return out, b, errors.Join(errs...)
}

func updateReadme(readme, dir string) error {
	out, _, err := rewriteReadme(readme, dir)
	if err != nil {
		return err
	}
	return os.WriteFile(readme, []byte(out), 0o644)
}

func checkReadme(readme, dir string) []string {
	out, was, err := rewriteReadme(readme, dir)
	if err != nil {
		return []string{err.Error()}
	}
	if out != string(was) {
		return []string{readme + " does not show the committed captures"}
	}
	return nil
}
