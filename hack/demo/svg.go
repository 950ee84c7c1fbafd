package main

import (
	"bytes"
	"fmt"
	"html"
	"strings"
	"unicode/utf8"
)

// The terminal the images show: columns wrap as a terminal of this width wraps them.
const (
	maxColumns = 220
	fontSize   = 13
	lineHeight = 17
	charWidth  = 7.8 // 0.6em, the advance of common monospace fonts
	padding    = 16
	titleBar   = 30
)

// renderSVG draws a terminal window holding text: the first line is the command, typed
// after a prompt; the rest is its output, as printed. Lines longer than the terminal wrap.
func renderSVG(text string) []byte {
	lines := wrap(strings.Split(strings.TrimRight(text, "\n"), "\n"))
	columns := 0
	for _, l := range lines {
		columns = max(columns, utf8.RuneCountInString(l))
	}
	width := int(float64(columns)*charWidth) + 2*padding
	height := titleBar + padding + len(lines)*lineHeight + padding
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`+"\n",
		width, height, width, height, html.EscapeString(strings.TrimPrefix(lines[0], "$ ")))
	b.WriteString(`<style>text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:` +
		fmt.Sprint(fontSize) + `px;white-space:pre;fill:#d8dee9}.prompt{fill:#a3be8c}.cmd{fill:#eceff4;font-weight:bold}</style>` + "\n")
	fmt.Fprintf(&b, `<rect width="%d" height="%d" rx="8" fill="#2e3440"/>`+"\n", width, height)
	for i, color := range []string{"#bf616a", "#ebcb8b", "#a3be8c"} {
		fmt.Fprintf(&b, `<circle cx="%d" cy="15" r="6" fill="%s"/>`+"\n", 20+i*20, color)
	}
	for i, l := range lines {
		y := titleBar + padding + i*lineHeight
		if i == 0 && strings.HasPrefix(l, "$ ") {
			fmt.Fprintf(&b, `<text x="%d" y="%d" xml:space="preserve"><tspan class="prompt">$</tspan> <tspan class="cmd">%s</tspan></text>`+"\n",
				padding, y, html.EscapeString(l[2:]))
			continue
		}
		if l == "" {
			continue
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" xml:space="preserve">%s</text>`+"\n", padding, y, html.EscapeString(l))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// wrap breaks lines longer than maxColumns, as the terminal does.
func wrap(lines []string) []string {
	var out []string
	for _, l := range lines {
		r := []rune(l)
		for len(r) > maxColumns {
			out = append(out, string(r[:maxColumns]))
			r = r[maxColumns:]
		}
		out = append(out, string(r))
	}
	return out
}
