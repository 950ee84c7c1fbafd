package util

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
)

// jsonPrinter is -o json: what printers.JSONPrinter writes, byte for byte, but a list's
// items (and a report's actions) are encoded and written one at a time. JSONPrinter
// encodes the whole object into one buffer and indents it into a second: for ten thousand
// stuck objects, two buffers of tens of megabytes on top of the objects themselves (#36).
type jsonPrinter struct{ printers.JSONPrinter }

// streamed are the JSON names of the fields whose elements are written one at a time:
// a list's items, and the actions of a plan or a reconcile pass.
var streamed = []string{"items", "actions"}

// marker is how JSONPrinter's indentation writes the top-level object's field name when
// it is empty: at four spaces, a key no nested object's can be at.
func marker(name string) string { return "\n    \"" + name + "\": []" }

// itemsIndent is the prefix of each item's lines.
const itemsIndent = "        "

// PrintObj writes obj as JSONPrinter does. A pointer to a struct with a non-empty slice
// field named in streamed, in JSON (without omitempty), is streamed: its other fields
// are encoded once, with that field empty, and each element is written in its place;
// anything else is JSONPrinter's.
func (p *jsonPrinter) PrintObj(obj runtime.Object, w io.Writer) error {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct || obj.GetObjectKind().GroupVersionKind().Empty() {
		return p.JSONPrinter.PrintObj(obj, w)
	}
	st := v.Elem()
	field, name, ok := streamedField(st.Type())
	if !ok || st.Field(field).Len() == 0 {
		return p.JSONPrinter.PrintObj(obj, w)
	}
	items := st.Field(field)
	err := p.stream(st, field, name, items.Len(), func(i int) any {
		// Each item as an element of the slice is: addressable, so methods of its
		// pointer apply.
		return items.Index(i).Addr().Interface()
	}, w)
	if errors.Is(err, errUnmarked) {
		return p.JSONPrinter.PrintObj(obj, w)
	}
	return err
}

// errUnmarked: the encoded object does not show where its streamed field is, once.
var errUnmarked = errors.New("the streamed field is not found once in the encoded object")

// stream writes st as JSONPrinter does, its field (named name in JSON) holding the n
// elements item makes, each encoded and written in turn; errUnmarked, having written
// nothing, when it cannot tell where that field is.
func (p *jsonPrinter) stream(st reflect.Value, field int, name string, n int, item func(i int) any, w io.Writer) error {
	shell := reflect.New(st.Type()).Elem()
	shell.Set(st)
	shell.Field(field).Set(reflect.MakeSlice(st.Field(field).Type(), 0, 0))
	head, err := json.MarshalIndent(shell.Addr().Interface(), "", "    ")
	if err != nil {
		return err
	}
	itemsMarker := marker(name)
	at := bytes.Index(head, []byte(itemsMarker))
	if at < 0 || bytes.Contains(head[at+len(itemsMarker):], []byte(itemsMarker)) {
		return errUnmarked
	}
	// A failed write is kept by bw, and returned by the Flush at the end.
	bw := bufio.NewWriterSize(w, 64<<10)
	_, _ = bw.Write(head[:at])
	// What comes before the items can be most of the head (a diagnosis's root causes list
	// every object they explain): it is not kept while the items are written.
	tail := bytes.Clone(head[at+len(itemsMarker):])
	_, _ = bw.WriteString(itemsMarker[:len(itemsMarker)-1] + "\n")
	// One encoder and one buffer for every item: json.MarshalIndent makes two buffers of
	// each (the value, then its indented copy), megabytes of garbage for ten thousand.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent(itemsIndent, "    ")
	for i := range n {
		buf.Reset()
		if err := enc.Encode(item(i)); err != nil {
			return err
		}
		_, _ = bw.WriteString(itemsIndent)
		_, _ = bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		if i < n-1 {
			_ = bw.WriteByte(',')
		}
		_ = bw.WriteByte('\n')
	}
	_, _ = bw.WriteString("    ]")
	_, _ = bw.Write(tail)
	_ = bw.WriteByte('\n')
	return bw.Flush()
}

// streamedField is the index and JSON name of t's first exported slice field whose JSON
// name is in streamed, without omitempty.
func streamedField(t reflect.Type) (int, string, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if slices.Contains(streamed, name) && f.IsExported() && f.Type.Kind() == reflect.Slice && !strings.Contains(opts, "omitempty") {
			return i, name, true
		}
	}
	return 0, "", false
}
