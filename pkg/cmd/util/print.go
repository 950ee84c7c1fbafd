package util

import (
	"fmt"
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
	FlagOutput    = "output"
	FlagNoHeaders = "no-headers"
)

// PrintFlags are kubectl's output flags for a command whose default output is its own
// table: -o wide|name|json|yaml|jsonpath=...|go-template=..., --no-headers, --template.
type PrintFlags struct {
	OutputFormat string
	NoHeaders    bool
	Template     *genericclioptions.KubeTemplatePrintFlags
}

// NewPrintFlags returns output flags that default to the table.
func NewPrintFlags() *PrintFlags {
	return &PrintFlags{Template: genericclioptions.NewKubeTemplatePrintFlags()}
}

// Formats are the -o values, as kubectl lists them.
func (f *PrintFlags) Formats() []string {
	return append([]string{"wide", "name", "json", "yaml"}, f.Template.AllowedFormats()...)
}

// AddFlags binds the output flags to cmd.
func (f *PrintFlags) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.OutputFormat, FlagOutput, "o", f.OutputFormat,
		fmt.Sprintf("Output format. One of: (%s).", strings.Join(f.Formats(), ", ")))
	cmd.Flags().BoolVar(&f.NoHeaders, FlagNoHeaders, f.NoHeaders, "If true, don't print headers in table output (default or -o wide).")
	f.Template.AddFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc(FlagOutput, cobra.FixedCompletions(f.Formats(), cobra.ShellCompDirectiveNoFileComp))
}

// Table reports whether output is the command's own table; Wide its wide variant.
func (f *PrintFlags) Table() bool { return f.OutputFormat == "" || f.OutputFormat == "wide" }

// Wide reports whether -o wide was asked for.
func (f *PrintFlags) Wide() bool { return f.OutputFormat == "wide" }

// Name reports whether -o name was asked for.
func (f *PrintFlags) Name() bool { return f.OutputFormat == "name" }

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

// ToPrinter returns the printer for json, yaml, jsonpath and go-template output.
func (f *PrintFlags) ToPrinter() (printers.ResourcePrinter, error) {
	switch f.OutputFormat {
	case "json":
		return &printers.JSONPrinter{}, nil
	case "yaml":
		return &printers.YAMLPrinter{}, nil
	}
	format := f.OutputFormat
	if !slices.Contains(f.Template.AllowedFormats(), strings.SplitN(format, "=", 2)[0]) {
		return nil, genericclioptions.NoCompatiblePrinterError{OutputFormat: &format}
	}
	return f.Template.ToPrinter(format)
}

// PrintObject prints obj with the json, yaml or template printer.
func (f *PrintFlags) PrintObject(obj runtime.Object, w io.Writer) error {
	p, err := f.ToPrinter()
	if err != nil {
		return err
	}
	return p.PrintObj(obj, w)
}
