package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
)

// Limits of the exec provider.
const (
	defaultExecTimeout = 30 * time.Second
	// MaxStdoutBytes bounds what is read of a provider's stdout: one response fits.
	MaxStdoutBytes = 1 << 20
	// StderrTailBytes is how much of the end of stderr is kept as evidence.
	StderrTailBytes = 2048
	// waitDelay is how long a provider's children may keep its stdout and stderr open
	// after it exits, before they are closed and the process group is killed.
	waitDelay = 500 * time.Millisecond
)

// Kinds of the exec protocol.
const (
	kindVerifyRequest  = "VerifyRequest"
	kindVerifyResponse = "VerifyResponse"
)

func init() {
	register(&kind[finalizev1alpha1.ExecProvider]{
		name:             "exec",
		spec:             func(v *finalizev1alpha1.Verify) *finalizev1alpha1.ExecProvider { return v.Exec },
		check:            checkExec,
		templates:        execTemplates,
		sendsAllIdentity: true, // on stdin
		build:            newExec,
	})
}

// execTemplates: the arguments; the program is fixed.
func execTemplates(e *finalizev1alpha1.ExecProvider) []string {
	if len(e.Command) < 2 {
		return nil
	}
	return e.Command[1:]
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func checkExec(c Checks, path *field.Path, e *finalizev1alpha1.ExecProvider) {
	if len(e.Command) == 0 || e.Command[0] == "" {
		c.Add(field.Required(path.Child("command"), "the program to run, then its arguments"))
	} else if strings.Contains(e.Command[0], "{") {
		c.Add(field.Invalid(path.Child("command").Index(0), e.Command[0], "the program is fixed: only its arguments may be templated"))
	}
	for i := 1; i < len(e.Command); i++ {
		c.Template(path.Child("command").Index(i), e.Command[i])
	}
	for i, v := range e.Env {
		ep := path.Child("env").Index(i)
		if !envNameRE.MatchString(v.Name) {
			c.Add(field.Invalid(ep.Child("name"), v.Name, "not an environment variable name"))
		}
		// A value is not templated, and may be empty (a variable set to nothing); one
		// whose name says it holds a credential is refused, as a header's is: the policy
		// is read by whoever may read the CronJob.
		switch {
		case v.ValueFrom != nil && v.Value != "":
			c.Add(field.Invalid(ep, v.Name, "set value or valueFrom, not both"))
		case v.ValueFrom != nil:
			checkValueFrom(c, ep.Child("valueFrom"), v.ValueFrom)
		case v.Value != "" && credentialEnv(v.Name):
			c.Add(field.Forbidden(ep.Child("value"), fmt.Sprintf("environment variable %s carries credentials: %s", v.Name, credentialHint)))
		}
	}
	if e.SecretData {
		c.Warn(fmt.Sprintf("%s: secretData is true: the program reads the values of every Secret the rule matches", path.Child("secretData")))
	}
	if e.AllowLeadingDash {
		c.Warn(fmt.Sprintf("%s: allowLeadingDash is true: a value an object holds (\"--rm\") can become an option of the program; "+
			"prefer the option and the value in one argument (\"--id={.status.id}\")", path.Child("allowLeadingDash")))
	}
	checkTimeout(c, path.Child("timeout"), e.Timeout)
}

type execProvider struct {
	path string
	args []*Template
	// env are the variables the rule adds to the inherited environment.
	env     []execEnv
	timeout time.Duration
	// secretData sends a Secret's values; without it they are REDACTED.
	secretData bool
	opts       Options
	// allowLeadingDash and allowControl relax what a templated value may be.
	allowLeadingDash, allowControl bool
}

// execEnv is one variable the rule adds: a value of the policy, or a secret.
type execEnv struct {
	name, value string
	secret      *secretSource
}

func newExec(spec *finalizev1alpha1.ExecProvider, opts Options) (Provider, error) {
	if len(spec.Command) == 0 {
		return nil, errors.New("command: the program to run is missing")
	}
	// A program that cannot start makes the rule unable to verify anything, as a
	// credential that cannot be read does: it is found when the provider is built, so
	// that every pass fails while it lasts, an idle one and a dry run included, not only
	// the first that has something to verify.
	if err := canStart(spec.Command[0]); err != nil {
		return nil, fmt.Errorf("command[0]: %w", err)
	}
	p := &execProvider{path: spec.Command[0], timeout: defaultExecTimeout, secretData: spec.SecretData, opts: opts,
		allowLeadingDash: spec.AllowLeadingDash, allowControl: spec.AllowControlCharacters}
	if spec.Timeout != nil {
		p.timeout = spec.Timeout.Duration
	}
	for i, a := range spec.Command[1:] {
		t, err := ParseTemplate(a)
		if err != nil {
			return nil, fmt.Errorf("command[%d]: %w", i+1, err)
		}
		p.args = append(p.args, t)
	}
	for _, e := range spec.Env {
		v := execEnv{name: e.Name, value: e.Value}
		if e.ValueFrom != nil {
			var err error
			if v.secret, err = newSecretSource("environment variable "+e.Name, e.ValueFrom, opts); err != nil {
				return nil, err
			}
		}
		p.env = append(p.env, v)
	}
	registerInherited(opts)
	return p, nil
}

// registerInherited registers with the redactor the value of every variable of the
// environment the program inherits whose name says it holds a credential (credentialEnv):
// the program may print its environment. A value shorter than redact.MinLength is no
// credential, and is not registered.
func registerInherited(opts Options) {
	for _, kv := range opts.environ() {
		if name, value, ok := strings.Cut(kv, "="); ok && credentialEnv(name) && redact.Long(value) {
			_ = redact.Register(value) // long enough: it cannot fail
		}
	}
}

func (p *execProvider) String() string { return "exec " + p.path }

type execCall struct {
	p       *execProvider
	argv    []string
	request finalizev1alpha1.VerifyRequest
	stdin   []byte
}

func (p *execProvider) Prepare(req *Request) (Call, error) {
	c := &execCall{p: p, argv: []string{p.path}}
	for i, t := range p.args {
		a, err := t.render(req.Object.Object, req.Identity, func(offset int) escapeFunc {
			return argument(offset == 0, p.allowLeadingDash, p.allowControl)
		})
		if err != nil {
			return nil, fmt.Errorf("command[%d]: %w", i+1, err)
		}
		c.argv = append(c.argv, a)
	}
	// The whole identity goes to the program, so every value of it must be one.
	for _, name := range slices.Sorted(maps.Keys(req.Identity)) {
		if v := req.Identity[name]; isPlaceholder(v) {
			return nil, fmt.Errorf("identity value %s is %q, a placeholder, not a value", name, v)
		}
	}
	obj := req.Object.Object
	switch {
	case !isSecret(req.Object):
	case p.secretData:
		// The program holds the values now, and may print them.
		registerSecret(obj)
	default:
		obj = redactSecret(obj)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	c.request = finalizev1alpha1.VerifyRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: finalizev1alpha1.SchemeGroupVersion.String(), Kind: kindVerifyRequest},
		Rule:     req.Rule, Finalizer: req.Finalizer, UID: string(req.Object.GetUID()), ResourceVersion: req.Object.GetResourceVersion(),
		Identity: req.Identity, Object: runtime.RawExtension{Raw: raw},
	}
	if c.stdin, err = json.Marshal(&c.request); err != nil {
		return nil, err
	}
	return c, nil
}

// lastApplied is kubectl's annotation that holds the object as last applied: a Secret's
// values included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// isSecret reports whether o is a core Secret.
func isSecret(o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Secret"
}

// redactSecret is a copy of a Secret whose values are REDACTED: each value of data and
// stringData (the keys stay, a program may look for one), and kubectl's
// last-applied-configuration annotation.
// Only the maps it changes are copied; the object asked about is left as it is.
func redactSecret(obj map[string]any) map[string]any {
	out := maps.Clone(obj)
	for _, field := range []string{"data", "stringData"} {
		if m, ok := out[field].(map[string]any); ok {
			values := make(map[string]any, len(m))
			for k := range m {
				values[k] = redacted
			}
			out[field] = values
		} else if out[field] != nil {
			out[field] = redacted
		}
	}
	if md, ok := out["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if _, ok := ann[lastApplied]; ok {
				md = maps.Clone(md)
				ann = maps.Clone(ann)
				ann[lastApplied] = redacted
				md["annotations"] = ann
				out["metadata"] = md
			}
		}
	}
	return out
}

// registerSecret registers with the redactor each value of a Secret's data (decoded) and
// stringData. A value shorter than redact.MinLength (a port, "true") is no credential,
// and is not registered.
func registerSecret(obj map[string]any) {
	for _, field := range []string{"data", "stringData"} {
		m, _ := obj[field].(map[string]any)
		for _, v := range m {
			s, _ := v.(string)
			if field == "data" {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					continue
				}
				s = string(b)
			}
			if redact.Long(s) {
				_ = redact.Register(s) // long enough: it cannot fail
			}
		}
	}
}

// canStart says why the program cannot start, if it cannot: it is not found, not
// executable, or a script whose interpreter is not there (the release image has no
// shell).
func canStart(name string) error {
	path, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("the program %s cannot run: %w", name, err)
	}
	if why := missingInterpreter(path, fs.ErrNotExist); why != "" {
		return fmt.Errorf("the program %s cannot run%s", name, why)
	}
	return nil
}

// missingInterpreter explains a "no such file or directory" about a program that is
// there: a script whose interpreter (its #! line) is not, such as a shell script in the
// release image, which has no shell. Empty otherwise.
func missingInterpreter(path string, err error) string {
	if !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	line, _, _ := bytes.Cut(head[:n], []byte("\n"))
	interpreter, ok := bytes.CutPrefix(line, []byte("#!"))
	if !ok {
		return ""
	}
	fields := strings.Fields(string(interpreter))
	if len(fields) == 0 {
		return ""
	}
	if _, err := os.Stat(fields[0]); err == nil {
		return ""
	}
	return fmt.Sprintf(" (it is a script for %s, which does not exist here; the release image has no shell: docs/providers.md, \"Where the program runs\")", fields[0])
}

// Key is the program, its arguments and environment (without its secrets, the same for
// every call), and the object version asked about: every answer echoes the object, so it
// is asked for each one.
func (c *execCall) Key() string {
	h := sha256.New()
	env := make([]string, 0, len(c.p.env))
	for _, e := range c.p.env {
		env = append(env, e.name+"="+e.value)
	}
	fmt.Fprintf(h, "exec\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s", strings.Join(c.argv, "\x00"), strings.Join(env, "\x00"),
		c.request.Rule, c.request.Finalizer, c.request.UID, c.request.ResourceVersion)
	return hex.EncodeToString(h.Sum(nil))
}

// environ is the environment of the program: what kubectl-finalize inherited, then the
// rule's variables, each secret read now (a file at every run). A secret that cannot be
// read is an error: the program does not run.
func (c *execCall) environ() ([]string, error) {
	env := c.p.opts.environ()
	for _, e := range c.p.env {
		v := e.value
		if e.secret != nil {
			s, err := e.secret.read()
			if err != nil {
				return nil, err
			}
			v = e.secret.src.Prefix + s
		}
		env = append(env, e.name+"="+v)
	}
	return env, nil
}

func (c *execCall) Do(ctx context.Context) Answer {
	name := c.argv[0]
	env, err := c.environ()
	if err != nil {
		return Answer{Verdict: finalizev1alpha1.VerdictUnknown, CannotRun: true, Evidence: fmt.Sprintf("exec %s: not run: %v", name, err)}
	}
	ctx, cancel := context.WithTimeout(ctx, c.p.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...) //nolint:gosec // the program is the policy's; its arguments are never read by a shell
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(c.stdin)
	// A provider that writes more than one response's worth is stopped at once, not
	// read until its timeout: its answer is Unknown whatever else it writes.
	stdout := &cappedBuffer{max: MaxStdoutBytes, onOverflow: func() { killProcessGroup(cmd) }}
	// What the program prints on stderr is redacted before its tail is kept: a secret it
	// was given and prints is never kept, not even cut in two by the tail's start.
	tail := &tailBuffer{max: StderrTailBytes}
	redacting := redact.NewWriter(tail)
	cmd.Stdout, cmd.Stderr = stdout, redacting
	cmd.WaitDelay = waitDelay
	inOwnProcessGroup(cmd)
	started := time.Now()
	err = cmd.Run()
	// Children that outlived the provider go with its process group.
	killProcessGroup(cmd)
	_ = redacting.Flush() // a tailBuffer's Write never fails
	switch {
	case err != nil && cmd.Process == nil:
		// The program never started (not found, not executable): every call under the
		// rule would fail the same way.
		return Answer{Verdict: finalizev1alpha1.VerdictUnknown, CannotRun: true, Evidence: fmt.Sprintf("exec %s: the program cannot run: %v%s", name, err, missingInterpreter(name, err))}
	case stdout.overflow:
		return Unknown("exec %s: more than %d bytes on stdout; the process group was killed", name, MaxStdoutBytes)
	case ctx.Err() != nil:
		return Unknown("exec %s: no answer within %s; the process group was killed%s", name, c.p.timeout, tail.evidence())
	case errors.Is(err, exec.ErrWaitDelay):
		return Unknown("exec %s: it exited, but processes it started kept its output open; they were killed%s", name, tail.evidence())
	case err != nil:
		return Unknown("exec %s: %v%s", name, err, tail.evidence())
	}
	resp, err := c.decode(stdout.Bytes())
	if err != nil {
		return Unknown("exec %s: %v%s", name, err, tail.evidence())
	}
	// Redacted before it is cut short, or the start of a secret would show.
	evidence := strings.TrimSpace(redact.String(resp.Evidence))
	if evidence == "" {
		evidence = fmt.Sprintf("exec %s answered %s in %s", name, resp.Verdict, time.Since(started).Round(time.Millisecond))
	}
	return Answer{Verdict: resp.Verdict, Evidence: truncate(evidence, 1000)}
}

// decode reads exactly one VerifyResponse of this protocol version, about the object and
// finalizer asked about.
func (c *execCall) decode(out []byte) (*finalizev1alpha1.VerifyResponse, error) {
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, errors.New("nothing on stdout: a provider answers with one VerifyResponse")
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("stdout is not a VerifyResponse: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("stdout holds more than one VerifyResponse")
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("stdout is not a VerifyResponse: %w", err)
	}
	want := finalizev1alpha1.SchemeGroupVersion.String()
	switch {
	case tm.APIVersion != want:
		return nil, fmt.Errorf("the response's apiVersion is %q; this kubectl-finalize speaks %s", tm.APIVersion, want)
	case tm.Kind != kindVerifyResponse:
		return nil, fmt.Errorf("the response's kind is %q, not %s", tm.Kind, kindVerifyResponse)
	}
	strict := json.NewDecoder(bytes.NewReader(raw))
	strict.DisallowUnknownFields()
	var resp finalizev1alpha1.VerifyResponse
	if err := strict.Decode(&resp); err != nil {
		return nil, fmt.Errorf("stdout is not a valid %s VerifyResponse: %w", want, err)
	}
	if resp.UID != c.request.UID || resp.ResourceVersion != c.request.ResourceVersion || resp.Finalizer != c.request.Finalizer {
		return nil, fmt.Errorf("the response is about uid %q, resourceVersion %q, finalizer %q, not the object asked about (uid %q, resourceVersion %q, finalizer %q)",
			resp.UID, resp.ResourceVersion, resp.Finalizer, c.request.UID, c.request.ResourceVersion, c.request.Finalizer)
	}
	switch resp.Verdict {
	case finalizev1alpha1.VerdictGone, finalizev1alpha1.VerdictPresent, finalizev1alpha1.VerdictUnknown, finalizev1alpha1.VerdictRetained:
	default:
		return nil, fmt.Errorf("the verdict %q is none of Gone, Present, Unknown, Retained", resp.Verdict)
	}
	return &resp, nil
}

// cappedBuffer keeps the first max bytes written, notes whether more came and then
// calls onOverflow, once. It is not an io.ReaderFrom, so every write goes through Write.
type cappedBuffer struct {
	buf        bytes.Buffer
	max        int
	overflow   bool
	onOverflow func()
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room < len(p) {
		if room > 0 {
			b.buf.Write(p[:room])
		}
		if !b.overflow && b.onOverflow != nil {
			b.onOverflow()
		}
		b.overflow = true
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Bytes are the bytes kept.
func (b *cappedBuffer) Bytes() []byte { return b.buf.Bytes() }

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

// evidence is the end of stderr, for people, or "".
func (b *tailBuffer) evidence() string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(b.buf), "?"))
	if s == "" {
		return ""
	}
	return "; stderr: " + s
}
