package util

import (
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// Flag names of the output flags.
const (
	flagOutput    = "output"
	flagNoHeaders = "no-headers"
)

// PrintFlags are a command's output flags. Each command says what -o takes: its own table
// and kubectl's formats (NewTablePrintFlags), or its result as JSON or YAML
// (NewResultPrintFlags). Without -o, the command prints its own way.
type PrintFlags struct {
	OutputFormat string
	NoHeaders    bool
	// Usage is the help of -o; "%s" in it stands for the formats.
	Usage string

	// template is set for a command with a table of its own: -o wide|name and
	// kubectl's templates, with --no-headers and --template.
	template *genericclioptions.KubeTemplatePrintFlags
	// result prints a command's result as kubectl prints objects: json and yaml in
	// any case (kyaml too), or only the formats listed.
	result  *genericclioptions.JSONYamlPrintFlags
	formats []string
}

// NewTablePrintFlags returns the output flags of a command whose default output is its
// own table: -o wide|name|json|yaml|jsonpath=...|go-template=..., --no-headers, --template.
func NewTablePrintFlags() *PrintFlags {
	return &PrintFlags{Usage: "Output format. One of: (%s).", template: genericclioptions.NewKubeTemplatePrintFlags()}
}

// NewResultPrintFlags returns the output flags of a command that prints its result as
// JSON or YAML with -o: the formats given, or every format cli-runtime prints when none
// is.
func NewResultPrintFlags(usage string, formats ...string) *PrintFlags {
	f := &PrintFlags{Usage: usage, result: genericclioptions.NewJSONYamlPrintFlags(), formats: formats}
	if len(formats) == 0 {
		f.formats = f.result.AllowedFormats()
	}
	return f
}

// Formats are the -o values, as kubectl lists them.
func (f *PrintFlags) Formats() []string {
	if f.template == nil {
		return f.formats
	}
	return append([]string{"wide", "name", "json", "yaml"}, f.template.AllowedFormats()...)
}

// AddFlags binds the output flags to cmd.
func (f *PrintFlags) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.OutputFormat, flagOutput, "o", f.OutputFormat, strings.Replace(f.Usage, "%s", strings.Join(f.Formats(), ", "), 1))
	if f.template != nil {
		cmd.Flags().BoolVar(&f.NoHeaders, flagNoHeaders, f.NoHeaders, "If true, don't print headers in table output (default or -o wide).")
		f.template.AddFlags(cmd)
	}
	_ = cmd.RegisterFlagCompletionFunc(flagOutput, cobra.FixedCompletions(f.Formats(), cobra.ShellCompDirectiveNoFileComp))
}

// Default reports whether no -o was given: the command prints its own way.
func (f *PrintFlags) Default() bool { return f.OutputFormat == "" }

// Table reports whether output is the command's own table, plain or wide.
func (f *PrintFlags) Table() bool { return f.Default() || f.Wide() }

// Wide reports whether -o wide was asked for.
func (f *PrintFlags) Wide() bool { return f.template != nil && f.OutputFormat == "wide" }

// Name reports whether -o name was asked for.
func (f *PrintFlags) Name() bool { return f.template != nil && f.OutputFormat == "name" }

// JSON reports whether -o json was asked for.
func (f *PrintFlags) JSON() bool {
	if f.result != nil {
		return strings.EqualFold(f.OutputFormat, "json")
	}
	return f.OutputFormat == "json"
}

// Validate rejects an unknown output format with kubectl's wording.
func (f *PrintFlags) Validate() error {
	if f.Table() || f.Name() {
		return nil
	}
	if _, err := f.ToPrinter(); err != nil {
		return UsageErrorf(nil, "unable to match a printer suitable for the output format %q, allowed formats are: %s",
			f.OutputFormat, strings.Join(f.Formats(), ","))
	}
	return nil
}

// ToPrinter returns the printer of -o: json, yaml, and for a command with a table of its
// own, jsonpath and go-template.
func (f *PrintFlags) ToPrinter() (printers.ResourcePrinter, error) {
	format := f.OutputFormat
	if f.result != nil {
		if !slices.Contains(f.formats, strings.ToLower(format)) {
			return nil, genericclioptions.NoCompatiblePrinterError{OutputFormat: &format, AllowedFormats: f.formats}
		}
		if strings.EqualFold(format, "json") && !f.result.ShowManagedFields {
			// cli-runtime's printer for json, with its JSONPrinter streamed (jsonPrinter).
			return &printers.OmitManagedFieldsPrinter{Delegate: &jsonPrinter{}}, nil
		}
		return f.result.ToPrinter(format)
	}
	switch format {
	case "json":
		return &jsonPrinter{}, nil
	case "yaml":
		return &printers.YAMLPrinter{}, nil
	}
	if !slices.Contains(f.template.AllowedFormats(), strings.SplitN(format, "=", 2)[0]) {
		return nil, genericclioptions.NoCompatiblePrinterError{OutputFormat: &format}
	}
	// KubeTemplatePrintFlags.ToPrinter, with the Go template printer of this package
	// (template_printer.go): cli-runtime's would bring the standard text/template back.
	if p, err := f.template.JSONPathPrintFlags.ToPrinter(format); !genericclioptions.IsNoCompatiblePrinterError(err) {
		return p, err
	}
	return goTemplateToPrinter(f.template.GoTemplatePrintFlags, format)
}

// PrintObject prints obj with the printer of -o.
func (f *PrintFlags) PrintObject(obj runtime.Object, w io.Writer) error {
	p, err := f.ToPrinter()
	if err != nil {
		return err
	}
	return p.PrintObj(obj, w)
}
