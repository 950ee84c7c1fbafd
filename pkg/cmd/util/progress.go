package util

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal, or writes to one (the redactor's writers).
func IsTerminal(w io.Writer) bool {
	f, ok := unwrapWriter(w).(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) //nolint:gosec // a file descriptor fits an int
}

// Progress writes one self-overwriting status line to a terminal, at most ten times a
// second, and erases it when done. Where the output is not a terminal it writes nothing,
// so logs and pipes stay clean.
type Progress struct {
	w       io.Writer
	enabled bool
	mu      sync.Mutex
	last    time.Time
	shown   bool
}

// newProgress returns a progress line on w, enabled only if w is a terminal.
func newProgress(w io.Writer) *Progress {
	return &Progress{w: w, enabled: IsTerminal(w)}
}

// Update shows msg, unless the line was updated less than 100 ms ago and final is false.
func (p *Progress) Update(msg string, final bool) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !final && time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.shown = true
	fmt.Fprintf(p.w, "\r\033[K%s", msg)
}

// Done erases the line.
func (p *Progress) Done() {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
