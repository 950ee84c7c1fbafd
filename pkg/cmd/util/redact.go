package util

import (
	"io"
	"math"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
)

// RedactStreams wraps the standard output and error of streams with the redactor, so
// that everything a command prints (reports, tables, warnings, prompts, the rendered
// error) passes it: every value registered is REDACTED. Flush writes what the writers
// hold back; call it once everything is written, before the process exits.
func RedactStreams(streams genericiooptions.IOStreams) (redacted genericiooptions.IOStreams, flush func()) {
	out, errOut := redact.NewWriter(streams.Out), redact.NewWriter(streams.ErrOut)
	return genericiooptions.IOStreams{In: streams.In, Out: out, ErrOut: errOut}, func() {
		_ = out.Flush()
		_ = errOut.Flush()
	}
}

// LogTo sends everything klog writes, at every -v, to w (the redacting standard error):
// client-go's requests and response bodies at -v=8 and up included. klog is given a
// logger: its output then never goes to its own files or to os.Stderr, whatever its
// hidden flags (--logtostderr, --log-file, --stderrthreshold) say, and -v and -vmodule
// still decide what is written.
func LogTo(w io.Writer) {
	// klog decides which calls are enabled (-v, -vmodule); the logger writes every call
	// it is handed.
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(w), textlogger.Verbosity(math.MaxInt32)))
	klog.SetLoggerWithOptions(logger, klog.WriteKlogBuffer(func(b []byte) { _, _ = w.Write(b) }))
}

// unwrapWriter is the writer a wrapping writer (the redactor's) writes to.
func unwrapWriter(w io.Writer) io.Writer {
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}
