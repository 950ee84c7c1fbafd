package printer

import (
	"bytes"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// tablewriter's init makes a cache of 8,192 cell widths, allocated at once (1.6 MB of
// heap in every command, table or not), and a table of ten thousand rows fills it with
// its cells, kept alive after the print. The width of a kubectl column's cell is cheap
// to compute again: the cache is left out (#36).
func init() { twwidth.SetCacheCapacity(0) }

// Table writes rows under headers the way kubectl does: no borders, left-aligned
// columns three spaces apart, headers in upper case, no trailing spaces.
func Table(w io.Writer, headers []string, rows [][]string, noHeaders bool) error {
	var buf bytes.Buffer
	cell := tw.CellConfig{
		Formatting: tw.CellFormatting{AutoWrap: tw.WrapNone},
		Alignment:  tw.CellAlignment{Global: tw.AlignLeft},
		Padding:    tw.CellPadding{Global: tw.Padding{Left: "", Right: "   ", Overwrite: true}},
	}
	header := cell
	header.Formatting.AutoFormat = tw.On
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbolCustom("kubectl").WithColumn(" "),
			Settings: tw.Settings{
				Separators: tw.Separators{ShowHeader: tw.Off, ShowFooter: tw.Off, BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowTop: tw.Off, ShowBottom: tw.Off, ShowHeaderLine: tw.Off, ShowFooterLine: tw.Off},
			},
		})),
		tablewriter.WithConfig(tablewriter.Config{Header: header, Row: cell}),
		tablewriter.WithTrimSpace(tw.Off),
	)
	if !noHeaders {
		t.Header(headers)
	}
	if err := t.Bulk(rows); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}
