// Package redact is the one redactor every output of the process passes through.
//
// Every secret value the process reads (a credential from valueFrom, an exec provider's
// secret environment, a Secret's data a provider reads, the kubeconfig's credentials) is
// registered here once, where it is read, with Register. From then on it is replaced by
// REDACTED wherever it would be shown:
//
//   - the process's stdout and stderr, and klog, are Writers (see NewWriter), set up in
//     main: reports, tables, warnings, prompts, the rendered error and logs at every -v;
//   - what is written as structured data is redacted before it is written: an audit line
//     (JSON), an Event's note (String), a backup (Object), metrics' labels (String);
//   - an exec provider's stderr passes a Writer before its tail is kept as evidence.
//
// A value is replaced in every form it takes in output: as it is, escaped as a JSON or
// Go string, query- and path-escaped as in a URL, single-quoted as in YAML, and
// base64-encoded (as a Secret's data holds it); a value with line breaks is replaced
// line by line too, as a log may cut it there. A value shorter than MinLength is refused
// (ErrTooShort) where it is read as a credential: no credential is that short, and one
// that short would be found all over the output. Nothing registered is ever skipped.
//
// What is never registered cannot be redacted: a secret a provider reads by itself (an
// exec program reading a file kubectl-finalize never reads) is not known here.
package redact
