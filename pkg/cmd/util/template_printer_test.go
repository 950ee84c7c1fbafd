package util

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// -o go-template prints what kubectl's printer prints, byte for byte, and fails where it
// fails with the same error: kubectl's functions (exists, base64decode), the template
// builtins, missing keys both ways, --template, the file formats, a template that does
// not parse and one that fails while it runs. Each case is printed by cli-runtime's
// printer and by this package's, and the two are compared.
func TestGoTemplateIsKubectls(t *testing.T) {
	list := &finalizev1alpha1.StuckObjectList{
		TypeMeta: metav1.TypeMeta{APIVersion: finalizev1alpha1.SchemeGroupVersion.String(), Kind: "StuckObjectList"},
		Items: []finalizev1alpha1.StuckObject{{
			Target:            finalizev1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "ns<&>", Name: "cm-0"},
			DeletionTimestamp: metav1.NewTime(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)),
			Finalizers:        []finalizev1alpha1.Finalizer{{Name: "example.com/<cleanup>", Field: finalizev1alpha1.FieldMetadataFinalizers}},
			Cause:             &finalizev1alpha1.Cause{Reason: finalizev1alpha1.ReasonUnknown, Message: "a \"quoted\"\nmessage"},
		}, {
			Target:     finalizev1alpha1.ObjectReference{APIVersion: "example.com/v1", Kind: "Database", Resource: "databases", Name: "db"},
			Finalizers: []finalizev1alpha1.Finalizer{{Name: "a"}, {Name: "b"}},
		}},
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "s", Finalizers: []string{"x"}},
		Data:       map[string][]byte{"password": []byte("hunter2"), "empty": nil},
	}
	file := filepath.Join(t.TempDir(), "t.tmpl")
	if err := os.WriteFile(file, []byte(`{{range .items}}{{.target.kind}}/{{.target.name}}{{"\n"}}{{end}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	objects := []runtime.Object{list, secret}
	cases := []struct {
		format, template string
		strict           bool // --allow-missing-template-keys=false
	}{
		{format: `go-template={{range .items}}{{.target.namespace}}/{{.target.name}} {{len .finalizers}}{{"\n"}}{{end}}`},
		{format: `go-template={{.kind}} {{.metadata.name}} {{.nothing}} {{.items}}`},
		{format: `go-template={{.metadata.name}} {{.nothing}}`, strict: true},
		{format: `template={{range $i, $o := .items}}{{$i}}:{{index $o.finalizers 0 "name"}} {{end}}`},
		{format: `go-template={{exists . "items" 0 "cause" "reason"}} {{exists . "items" 1 "cause"}} {{exists . "items" 7}} {{exists . "kind" 0}} {{exists . "kind" -1}} {{exists .nothing}} {{exists . "metadata" "name"}} {{exists . "items" "x"}} {{exists .}}`},
		{format: `go-template={{with .data}}{{base64decode .password}}|{{.empty}}|{{end}}`},
		{format: `go-template={{base64decode .kind}}`},
		{format: `go-template={{index .items 9}}`},
		{format: `go-template={{range .items}}{{.cause.message | printf "%q"}} {{.target.name | html}} {{js .target.namespace}} {{urlquery .target.namespace}} {{eq .target.kind "ConfigMap"}} {{and .cause .cause.reason}}{{"\n"}}{{end}}`},
		{format: `go-template={{.items.name}}`},
		{format: `go-template={{.metadata.name.foo}}`, strict: true},
		{format: `go-template={{ .kind `},
		{format: `go-template={{nosuchfunc .kind}}`},
		{format: `go-template=`},
		{format: `go-template`},
		{format: `go-template`, template: `{{.kind}} from --template`},
		{format: `go-template=ignored`, template: `{{.kind}} --template wins`},
		{format: `go-template-file=` + file},
		{format: `templatefile`, template: file},
		{format: `go-template-file=` + file + ".missing"},
		{format: `go-templates={{.kind}}`},
	}
	for _, c := range cases {
		for _, obj := range objects {
			flags := func() *genericclioptions.GoTemplatePrintFlags {
				f := genericclioptions.NewGoTemplatePrintFlags()
				*f.TemplateArgument = c.template
				*f.AllowMissingKeys = !c.strict
				return f
			}
			name := c.format + " --template=" + c.template + " " + reflect.TypeOf(obj).Elem().Name()
			kubectl, kerr := printWith(flags(), c.format, obj, true)
			ours, oerr := printWith(flags(), c.format, obj, false)
			if ours != kubectl || errString(oerr) != errString(kerr) {
				t.Errorf("%s:\nkubectl: %q, error %v\nours:    %q, error %v", name, kubectl, kerr, ours, oerr)
			}
		}
	}
}

// printWith prints obj with -o format: kubectl's printer when kubectl is set, else this
// package's.
func printWith(f *genericclioptions.GoTemplatePrintFlags, format string, obj runtime.Object, kubectl bool) (string, error) {
	var out bytes.Buffer
	var err error
	if kubectl {
		p, perr := f.ToPrinter(format)
		if perr != nil {
			return "", perr
		}
		err = p.PrintObj(obj, &out)
	} else {
		p, perr := goTemplateToPrinter(f, format)
		if perr != nil {
			return "", perr
		}
		err = p.PrintObj(obj, &out)
	}
	return out.String(), err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A command's -o go-template goes through this package's printer, never cli-runtime's:
// the standard text/template would cost the executable its dead code elimination
// (make verify checks the executable itself).
func TestTablePrintFlagsPrintGoTemplatesWithTheCopy(t *testing.T) {
	for _, format := range []string{"go-template={{.kind}}", "template={{.kind}}", "go-template-file=/dev/null", "templatefile=/dev/null"} {
		f := NewTablePrintFlags()
		f.OutputFormat = format
		p, err := f.ToPrinter()
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if _, ok := p.(*goTemplatePrinter); !ok {
			t.Errorf("%s: printer %T, want *goTemplatePrinter", format, p)
		}
	}
}
