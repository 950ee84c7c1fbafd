package util

import (
	"fmt"
	"strings"
)

// A Term is one entry of a list in a command's help: a name, and what it means.
type Term struct{ Name, Meaning string }

// TermList is a list in a command's help, in two columns as kubectl's help lists things:
// the title, then each name and its meaning, the meaning wrapped to 88 columns.
func TermList(title string, terms []Term) string {
	const indent, width = 32, 88
	var b strings.Builder
	b.WriteString(title)
	for _, t := range terms {
		line := fmt.Sprintf("\n  %-*s", indent-2, t.Name)
		for _, word := range strings.Fields(t.Meaning) {
			if len(line) > indent+1 && len(line)+1+len(word) > width+1 {
				b.WriteString(line)
				line = "\n" + strings.Repeat(" ", indent)
			}
			if len(line) > indent+1 {
				line += " "
			}
			line += word
		}
		b.WriteString(line)
	}
	return b.String()
}
