// Package util holds what the commands share. It is part of the cobra layer: domain
// packages never import it.
//
//   - factory.go: the Factory commands get their clients from, built from kubectl's flags;
//     contexts.go: the contexts it can read besides its own (--context given again,
//     --all-contexts).
//   - command.go: a command's Options, and how Complete, Validate and Run are called.
//   - args.go: positional arguments: none, or objects named TYPE/NAME or TYPE NAME.
//   - print_flags.go, list_flags.go, fleet_flags.go: the output, listing and fleet flags;
//     json_stream.go, template_printer.go: -o json written item by item, and -o
//     go-template on a copy of text/template that cannot call methods.
//   - fleet.go: reading several clusters, each through a Factory of its own.
//   - completion.go: shell completion of flags and arguments from the cluster.
//   - progress.go, warnings.go: the progress line and the warnings on stderr.
//   - exit.go, errors.go, print_error.go: exit codes and the outcomes they stand for, the
//     errors that carry them, and the one place an error is rendered.
package util
