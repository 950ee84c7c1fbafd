package redact

import (
	"io"
	"sync"
)

// Writer redacts what is written through it before it reaches the writer it wraps. A
// value split across two writes is still caught: the end of a write that could be the
// start of a registered value is held back until the next write shows whether it is.
// Everything else is written at once, so a prompt or a progress line that ends without
// a line break is shown as it is written. Flush writes what is held back; call it before
// the process exits. A Writer is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	held string
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write redacts p, with what was held back before it, and writes all of it but what may
// be the start of a registered value.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := registry.current.Load()
	if st == nil && w.held == "" {
		return w.w.Write(p)
	}
	out := w.held + string(p)
	if st != nil {
		out = st.replacer.Replace(out)
		n := len(out) - st.heldBack(out)
		out, w.held = out[:n], out[n:]
	} else {
		w.held = ""
	}
	if _, err := io.WriteString(w.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held back. What is held back is the start of a registered value
// that never came whole: when it is MinLength bytes or more, it is REDACTED too.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := w.held
	w.held = ""
	if held == "" {
		return nil
	}
	if Long(held) {
		held = Replacement
	}
	_, err := io.WriteString(w.w, held)
	return err
}

// Unwrap is the writer w writes to: a terminal stays known as one.
func (w *Writer) Unwrap() io.Writer { return w.w }
