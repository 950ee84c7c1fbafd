package util

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	template "github.com/DataDog/datadog-agent/pkg/template/text"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// goTemplatePrinter is -o go-template: kubectl's printer (printers.GoTemplatePrinter), with
// the same functions, options and errors, executed by DataDog's copy of text/template
// that cannot call methods instead of the standard library's.
//
// The standard text/template looks a field name up as a method first, by name
// (reflect.Value.MethodByName). The linker cannot know which names, so when that code is
// in the executable it keeps every exported method of every type that could reach an
// interface: about 12 MB of the 45 MB executable, and as many resident on every run
// (docs/performance.md, "The linker's dead code elimination"). kubectl's printer hands the
// template the object decoded from its JSON into maps, slices, strings, float64s and
// bools, which have no methods to call: the copy prints what kubectl prints, byte for byte
// (TestGoTemplateIsKubectls). make verify fails if anything brings the standard one back
// (hack/deadcode).
type goTemplatePrinter struct {
	raw      string
	template *template.Template
}

// templateFormats are the -o values of a Go template, as cli-runtime's
// GoTemplatePrintFlags takes them; the file ones name a file.
var templateFormats = map[string]bool{"template": false, "go-template": false, "go-template-file": true, "templatefile": true}

// goTemplateToPrinter is GoTemplatePrintFlags.ToPrinter, with this printer: the template
// is the text after "format=", or --template's value when it is set.
func goTemplateToPrinter(f *genericclioptions.GoTemplatePrintFlags, format string) (printers.ResourcePrinter, error) {
	text := ""
	if f.TemplateArgument != nil {
		text = *f.TemplateArgument
	}
	if text == "" {
		if name, value, ok := strings.Cut(format, "="); ok {
			if _, known := templateFormats[name]; known {
				format, text = name, value
			}
		}
	}
	file, known := templateFormats[format]
	if !known {
		return nil, genericclioptions.NoCompatiblePrinterError{OutputFormat: &format, AllowedFormats: f.AllowedFormats()}
	}
	if text == "" {
		return nil, fmt.Errorf("template format specified but no template given")
	}
	if file {
		data, err := os.ReadFile(text)
		if err != nil {
			return nil, fmt.Errorf("error reading --template %s, %w", text, err)
		}
		text = string(data)
	}
	t, err := template.New("output").Funcs(template.FuncMap{"exists": exists, "base64decode": base64decode}).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("error parsing template %s, %w", text, err)
	}
	// kubectl's default: a missing key prints <no value>, unless
	// --allow-missing-template-keys=false.
	if f.AllowMissingKeys == nil || *f.AllowMissingKeys {
		t.Option("missingkey=default")
	} else {
		t.Option("missingkey=error")
	}
	return &goTemplatePrinter{raw: text, template: t}, nil
}

// PrintObj executes the template on obj as its JSON decodes into maps, as kubectl does;
// when the template fails, what kubectl writes to help debug it follows on w.
func (p *goTemplatePrinter) PrintObj(obj runtime.Object, w io.Writer) error {
	if printers.InternalObjectPreventer.IsForbidden(reflect.Indirect(reflect.ValueOf(obj)).Type().PkgPath()) {
		return fmt.Errorf("%s", printers.InternalObjectPrinterErr)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		return err
	}
	if err := p.execute(w, out); err != nil {
		fmt.Fprintf(w, "Error executing template: %v. Printing more information for debugging the template:\n", err)
		fmt.Fprintf(w, "\ttemplate was:\n\t\t%v\n", p.raw)
		fmt.Fprintf(w, "\traw data was:\n\t\t%v\n", string(data))
		fmt.Fprintf(w, "\tobject given to template engine was:\n\t\t%+v\n\n", out)
		return fmt.Errorf("error executing template %q: %w", p.raw, err)
	}
	return nil
}

// execute runs the template; a panic in it is an error, as in kubectl.
func (p *goTemplatePrinter) execute(w io.Writer, data any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("caught panic: %+v", r)
		}
	}()
	return p.template.Execute(w, data)
}

// exists is kubectl's template function: whether item has a non-nil value at the path of
// indices, each a map key or an integer index of a slice, array or string. As kubectl's,
// it holds for no value at all (an invalid reflect.Value) when no index is given.
func exists(item any, indices ...any) bool {
	v := reflect.ValueOf(item)
	for _, i := range indices {
		var isNil bool
		if v, isNil = deref(v); isNil {
			return false
		}
		index := reflect.ValueOf(i)
		switch v.Kind() {
		case reflect.Slice, reflect.Array, reflect.String:
			n, ok := intIndex(index)
			if !ok || n < 0 || n >= int64(v.Len()) {
				return false
			}
			v = v.Index(int(n))
		case reflect.Map:
			if !index.IsValid() {
				index = reflect.Zero(v.Type().Key())
			}
			if !index.Type().AssignableTo(v.Type().Key()) {
				return false
			}
			// A missing key is the element's zero value: nil for the maps of an object.
			if e := v.MapIndex(index); e.IsValid() {
				v = e
			} else {
				v = reflect.Zero(v.Type().Elem())
			}
		default:
			return false
		}
	}
	_, isNil := deref(v)
	return !isNil
}

// deref follows pointers and empty interfaces, and says whether it met a nil one; it
// stops at an interface with methods.
func deref(v reflect.Value) (reflect.Value, bool) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return v, true
		}
		if v.Kind() == reflect.Interface && v.NumMethod() > 0 {
			break
		}
		v = v.Elem()
	}
	return v, false
}

// intIndex is index as an int64, when it is an integer.
func intIndex(index reflect.Value) (int64, bool) {
	switch index.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return index.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int64(index.Uint()), true
	}
	return 0, false
}

// base64decode is kubectl's template function: the text of a base64 string (a Secret's
// data).
func base64decode(v string) (string, error) {
	data, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return "", fmt.Errorf("base64 decode failed: %w", err)
	}
	return string(data), nil
}
