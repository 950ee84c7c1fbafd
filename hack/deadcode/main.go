// Command deadcode fails when the linker cannot drop the unused methods of an executable.
//
// A call of reflect's Method or MethodByName with a name the compiler cannot see (the
// standard text/template's, for one) makes the linker keep every exported method of every
// type that could reach an interface: for kubectl-finalize, 12 MB of a 45 MB executable,
// resident on every run (docs/performance.md). deadcode links the package given, as the
// release does, with the linker's dependency dump (-ldflags=-dumpdep), and prints for each
// function the linker marked that way the chain of references from the program's entry to
// it, so the change that brought it is plain. `make verify` runs it on ./cmd/kubectl-finalize.
//
//	go run ./hack/deadcode ./cmd/kubectl-finalize
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: deadcode PACKAGE")
		os.Exit(2)
	}
	pkg := os.Args[1]
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w -dumpdep", "-o", os.DevNull, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	var dump bytes.Buffer
	build.Stderr = &dump
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s\ndeadcode: go build %s: %v\n", lastLines(dump.String(), 20), pkg, err)
		os.Exit(1)
	}
	g, err := parse(&dump)
	if err != nil {
		fmt.Fprintf(os.Stderr, "deadcode: reading the linker's dump: %v\n", err)
		os.Exit(1)
	}
	// A package that is not a command links nothing, and its dump is empty: that is no
	// proof the linker drops anything.
	if len(g.from["main.main"]) == 0 {
		fmt.Fprintf(os.Stderr, "deadcode: %s: the linker's dump has no main.main: is it a command (package main)?\n", pkg)
		os.Exit(1)
	}
	if len(g.marked) == 0 {
		fmt.Printf("deadcode: %s: the linker drops unused methods\n", pkg)
		return
	}
	fmt.Fprintf(os.Stderr, "deadcode: %s: the linker keeps every exported method, because these functions call reflect's Method or MethodByName with a name it cannot see:\n", pkg)
	for _, c := range g.causes() {
		fmt.Fprintf(os.Stderr, "\n%s, reached by:\n", c[len(c)-1])
		for _, s := range c {
			fmt.Fprintf(os.Stderr, "  %s\n", s)
		}
	}
	fmt.Fprintln(os.Stderr, "\nCall it with a constant name, use an interface instead, or keep the package out of the executable (pkg/cmd/util/template_printer.go says why go-template does).")
	os.Exit(1)
}

// graph is the linker's reachability dump: each reachable symbol and the ones it keeps.
type graph struct {
	from   map[string][]string // symbol -> the symbols it references
	marked []string            // the symbols marked <ReflectMethod>, sorted
}

// parse reads lines of the form "A -> B", each side maybe followed by a " <Attr>" tag, as
// the Go linker's -dumpdep writes them (cmd/link/internal/ld/deadcode.go). The entry is
// the symbol "_".
func parse(r io.Reader) (*graph, error) {
	g := &graph{from: map[string][]string{}}
	marked := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		a, b, ok := strings.Cut(sc.Text(), " -> ")
		if !ok {
			continue
		}
		a, aTags := symbol(a)
		b, bTags := symbol(b)
		g.from[a] = append(g.from[a], b)
		for s, tags := range map[string]string{a: aTags, b: bTags} {
			if strings.Contains(tags, "<ReflectMethod>") && !marked[s] {
				marked[s] = true
				g.marked = append(g.marked, s)
			}
		}
	}
	slices.Sort(g.marked)
	return g, sc.Err()
}

// causes are the chains to the marked functions that are called, not merely kept as
// methods: once one such call is in, every exported method is kept, and the marked
// methods among them (reflect.Value's own, say) only follow from it. When every chain goes
// through a kept method, all are causes.
func (g *graph) causes() [][]string {
	var called, all [][]string
	for _, m := range g.marked {
		c := g.path(m)
		all = append(all, c)
		if !throughMethod(c) {
			called = append(called, c)
		}
	}
	if len(called) == 0 {
		return all
	}
	return called
}

// throughMethod reports whether a chain steps from a type to a function: a method kept
// because its type's value can reach an interface.
func throughMethod(chain []string) bool {
	for i := 1; i < len(chain); i++ {
		if strings.HasPrefix(chain[i-1], "type:") && !strings.HasPrefix(chain[i], "type:") {
			return true
		}
	}
	return false
}

// symbol splits a side of an edge into its name and its tags.
func symbol(s string) (name, tags string) {
	if i := strings.Index(s, " <"); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// path is the shortest chain of references from the entry to target, the entry first.
func (g *graph) path(target string) []string {
	prev := map[string]string{"_": ""}
	queue := []string{"_"}
	for len(queue) > 0 && queue[0] != target {
		n := queue[0]
		queue = queue[1:]
		for _, m := range g.from[n] {
			if _, seen := prev[m]; !seen {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	if _, ok := prev[target]; !ok {
		return []string{"(no chain from the entry: reached through an interface's method)"}
	}
	var chain []string
	for n := target; n != ""; n = prev[n] {
		chain = append(chain, n)
	}
	slices.Reverse(chain)
	return chain
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
