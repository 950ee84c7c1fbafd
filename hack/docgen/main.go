// Command docgen writes the command reference (one Markdown file per command) into the
// folder given as its argument. `make docs` runs it; `make verify` checks its output is
// committed.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra/doc"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: docgen DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Defaults that embed the home folder must not differ between machines.
	_ = os.Setenv("HOME", "$HOME")
	root := cmd.NewCmdFinalize(genericiooptions.NewTestIOStreamsDiscard())
	root.DisableAutoGenTag = true
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
