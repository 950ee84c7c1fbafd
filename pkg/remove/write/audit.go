package write

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/version"
)

// maxNote is the API server's limit on an Event's note.
const maxNote = 1024

// whoAmI asks the API server who the client is (SelfSubjectReview), for the audit.
func whoAmI(ctx context.Context, kube client.Interface) (string, error) {
	r, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the API server who you are (SelfSubjectReview): %w", err)
	}
	return r.Status.UserInfo.Username, nil
}

// Stage says which of a removal's two audit lines a line is.
type Stage string

// The stages of a removal's audit lines.
const (
	// StageIntent is written and synced before anything about the removal is written to
	// the cluster (or its backup to disk): no finalizer is removed without it on disk.
	StageIntent Stage = "Intent"
	// StageComplete is written after the removal, with what it did. An intent without
	// its complete line is a removal whose outcome was never recorded: the process
	// stopped in between, or the log could not be written; the object tells.
	StageComplete Stage = "Complete"
)

// ErrAuditLog means an audit line could not be written and synced: the removal it was
// about is not recorded on disk, and no further removal starts.
var ErrAuditLog = errors.New("the audit log could not be written")

// errAuditStopped means an earlier audit line failed: the auditor writes no intent any
// more, so the removal is not attempted.
var errAuditStopped = fmt.Errorf("%w earlier in this run", ErrAuditLog)

// Entry is what both audit lines of a removal say: who removes which finalizer of
// which object, and on what grounds. The ID ties the two lines together.
type Entry struct {
	ID     string                           `json:"id,omitempty"`
	Stage  Stage                            `json:"stage,omitempty"`
	Time   time.Time                        `json:"time"`
	User   string                           `json:"user"`
	Action string                           `json:"action"`
	Target finalizev1alpha1.ObjectReference `json:"target"`
	// Node is set on the lines of a pod's force deletion (action PodForceDeleted or
	// PodForceDeletedUnverified, finalizer empty): the node whose kubelet its deletion
	// waited for; Evidence says how its machine was verified gone.
	Node      string                   `json:"node,omitempty"`
	Finalizer string                   `json:"finalizer"`
	Field     string                   `json:"field"`
	Verified  bool                     `json:"verified"`
	Rule      string                   `json:"rule,omitempty"`
	Verdict   finalizev1alpha1.Verdict `json:"verdict,omitempty"`
	Evidence  string                   `json:"evidence,omitempty"`
	// VerifiedAt is when the verification (Rule, Verdict, Evidence) was answered. Rule,
	// Verdict, Evidence and VerifiedAt are those of the verification the removal is made
	// on: an intent line written after the object was verified again, and the record,
	// name that verification, not the first.
	VerifiedAt *metav1.MicroTime `json:"verifiedAt,omitempty"`
	// Verifications counts the verifications so far: one, and one more each time the
	// object changed and was verified again.
	Verifications int `json:"verifications,omitempty"`
	// FirstVerification is the first verification, when the one the removal is made on
	// answered otherwise (another rule, verdict or request).
	FirstVerification *finalizev1alpha1.VerificationRecord `json:"firstVerification,omitempty"`
	Reason            string                               `json:"reason,omitempty"`
}

// entryOf is the audit entry of a removal whose row (as the plan shows it) is row: action
// is the audit's reason for its kind (plan.Kind.Reason), verified whether a provider
// proved it.
func entryOf(row *finalizev1alpha1.Removal, action string, verified bool) Entry {
	e := Entry{Action: action, Target: row.Target, Node: row.Node, Finalizer: row.Finalizer, Field: row.Field, Verified: verified,
		Rule: row.Rule, Verdict: row.Verdict, Evidence: row.Evidence, VerifiedAt: row.VerifiedAt, Verifications: row.Verifications}
	if !verified {
		e.Reason = row.Reason
	}
	return e
}

// verification sets the verification the removal is made on.
func (e *Entry) verification(v *finalizev1alpha1.VerificationRecord) {
	e.Rule, e.Verdict, e.Evidence, e.VerifiedAt = v.Rule, v.Verdict, v.Evidence, v.VerifiedAt
}

// sameAnswer reports whether two verifications gave the same answer: the same rule,
// verdict and evidence (which names the request), whenever and on whichever version.
func sameAnswer(a, b *finalizev1alpha1.VerificationRecord) bool {
	return a.Rule == b.Rule && a.Verdict == b.Verdict && a.Evidence == b.Evidence
}

// Intent is the audit line written before a removal (StageIntent), which always has an
// ID and a Stage. A removal whose object changed after it was verified, and was verified
// again, has one more intent line, with the same ID, for each verification made again:
// written after it and before the write made on it, naming it. The last intent line
// before the record names what the write was made on.
type Intent struct {
	Entry
	// ResourceVersion is the version a verified removal is pinned to: as planned, or as
	// verified again.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// Record is the audit line written after a removal (StageComplete), with the same ID as
// its intent line.
type Record struct {
	Entry
	Result Result `json:"result,omitempty"`
	// ResourceVersion is the version of the object the provider verified, which the
	// write was pinned to; empty for a forced removal.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Attempts counts the decisions the removal took (more than one when the object
	// changed under it); Reverified, the times it was verified again because it had.
	Attempts   int      `json:"attempts,omitempty"`
	Reverified int      `json:"reverified,omitempty"`
	Deleted    bool     `json:"deleted"`
	Remaining  []string `json:"remaining"`
	Backup     string   `json:"backup,omitempty"`
	Event      string   `json:"event,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// outcome gives the row of the removal recorded its result, and the verification the
// write was made on when the object was verified again after the plan's.
func (rec *Record) outcome(row *finalizev1alpha1.Removal) {
	row.Result = rec.Result
	if rec.Error != "" {
		row.Result, row.Error = finalizev1alpha1.ResultFailed, rec.Error
	}
	if rec.Verifications > 1 {
		row.Rule, row.Verdict, row.Evidence, row.VerifiedAt = rec.Rule, rec.Verdict, rec.Evidence, rec.VerifiedAt
		row.Verifications, row.FirstVerification = rec.Verifications, rec.FirstVerification
		if rec.ResourceVersion != "" {
			row.ResourceVersion = rec.ResourceVersion
		}
	}
}

// Audit is where a run records its removals: the audit log, and the user the API server
// knows the client as. It is opened when first needed, once.
type Audit struct {
	// Path, if set, is the file the lines are appended to; otherwise they go to Stderr.
	Path   string
	Stderr io.Writer
	// Warn receives why the user could not be named; the lines then name "<unknown>".
	Warn func(error)

	auditor *Auditor
	file    *os.File
}

// Open opens the log and asks who the user is, the first time; later calls return the
// same Auditor. A log that cannot be opened, or that others may write, is an error.
func (a *Audit) Open(ctx context.Context, kube client.Interface) (*Auditor, error) {
	if a.auditor != nil {
		return a.auditor, nil
	}
	log := a.Stderr
	if a.Path != "" {
		f, err := openLog(a.Path)
		if err != nil {
			return nil, err
		}
		a.file, log = f, f
	}
	auditor, err := newAuditor(ctx, kube, log)
	if err != nil && a.Warn != nil {
		a.Warn(fmt.Errorf("%w; the audit names the user as %s", err, auditor.User))
	}
	a.auditor = auditor
	return auditor, nil
}

// Retry lets a new run try the log again after a line failed in an earlier one (see
// Auditor.Retry). It does nothing before the log is opened.
func (a *Audit) Retry() error {
	if a.auditor == nil {
		return nil
	}
	return a.auditor.Retry()
}

// Close closes the log file, if one was opened.
func (a *Audit) Close() error {
	if a.file == nil {
		return nil
	}
	return a.file.Close()
}

// newAuditor returns an Auditor that writes its lines to log and names the user the API
// server knows the client as. If the server cannot say who that is, the auditor names
// the user "<unknown>" and the error says why.
func newAuditor(ctx context.Context, kube client.Interface, log io.Writer) (*Auditor, error) {
	host, _ := os.Hostname()
	a := &Auditor{Kube: kube, User: "<unknown>", Instance: fmt.Sprintf("kubectl-finalize-%s@%s", version.Get().Version, host), Log: log}
	user, err := whoAmI(ctx, kube)
	if err != nil {
		return a, err
	}
	a.User = user
	return a, nil
}

// openLog opens an audit log file for appending. A new file is readable by its owner
// only; an existing one keeps its mode, unless others may write it: a trail others can
// rewrite proves nothing, so it is refused.
//
// A log whose last line was cut short (a crash, a full disk) gets the newline it lacks,
// so that the next line starts a line of its own; a log that cannot take even that is
// refused before anything is removed.
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	if mode := fi.Mode().Perm(); mode&0o022 != 0 {
		f.Close()
		return nil, fmt.Errorf("the audit log %s may be written by others (mode %04o): chmod go-w it, or choose another --audit-log", path, mode)
	}
	if err := endLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("the audit log %s: %w", path, err)
	}
	return f, nil
}

// CheckLog says whether openLog would open path, and writes nothing to it: for a dry
// run, which must fail where the run it stands for would. An existing log is opened for
// appending and closed, and its mode checked as openLog checks it; for a new one, a
// temporary file is made and removed in its folder.
func CheckLog(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.check")
		if err != nil {
			return fmt.Errorf("opening the audit log: %w", err)
		}
		_ = tmp.Close()
		return os.Remove(tmp.Name())
	}
	if err != nil {
		return fmt.Errorf("opening the audit log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("opening the audit log: %w", err)
	}
	if mode := fi.Mode().Perm(); mode&0o022 != 0 {
		return fmt.Errorf("the audit log %s may be written by others (mode %04o): chmod go-w it, or choose another --audit-log", path, mode)
	}
	return nil
}

// endLine gives a regular file whose last line was cut short the newline it lacks.
func endLine(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 {
		return nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
		return fmt.Errorf("reading its end: %w", err)
	}
	if last[0] == '\n' {
		return nil
	}
	if err := writeSynced(f, []byte{'\n'}); err != nil {
		return fmt.Errorf("it ends in a line cut short, and ending it failed: %w", err)
	}
	return nil
}

// Auditor records removals: an Event on the object and two JSON lines, an intent
// before the removal and a record after it.
type Auditor struct {
	Kube client.Interface
	User string
	// Instance identifies this run in Events (reportingInstance).
	Instance string
	Log      io.Writer
	mu       sync.Mutex
	// failed is the first line that could not be written: after it, no intent is
	// written, so no removal starts.
	failed error
}

// Intent writes the intent line of a removal and syncs it. Nothing about the removal
// may be written before it returns nil. Once a line has failed, it writes nothing and
// returns an error that says so (errors.Is ErrAuditLog).
func (a *Auditor) Intent(in *Intent) error {
	in.Stage = StageIntent
	if in.ID == "" {
		in.ID = newID()
	}
	return a.line(in, true)
}

// Line writes rec as the complete line of its removal and syncs it, even after an
// earlier line failed: the removal happened, and its record is worth one more try.
func (a *Auditor) Line(rec *Record) error {
	if rec.Remaining == nil {
		rec.Remaining = []string{}
	}
	if rec.Stage == "" {
		rec.Stage = StageComplete
	}
	return a.line(rec, false)
}

// Retry lets a new run of removals (the next pass of a continuous reconcile) try the log
// again after a line failed: a line cut short by the failure is ended first, and if even
// that fails, the log stays failed and the error says why. The next intent then either
// reaches the disk, or fails its removal and stops the run again: a run never goes on
// quietly without writing.
func (a *Auditor) Retry() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed == nil {
		return nil
	}
	if f, ok := a.Log.(*os.File); ok {
		if err := endLine(f); err != nil {
			return fmt.Errorf("%w: %w", ErrAuditLog, err)
		}
	}
	a.failed = nil
	return nil
}

// Failed is the error of the first line that could not be written, nil if none.
func (a *Auditor) Failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed
}

func (a *Auditor) line(v any, intent bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// Evidence may repeat what a provider was told, a credential among it: every value
	// registered with the redactor is REDACTED, and the line stays JSON.
	b = redact.JSON(b)
	a.mu.Lock()
	defer a.mu.Unlock()
	if intent && a.failed != nil {
		return errAuditStopped
	}
	if f, ok := a.Log.(*os.File); ok && a.failed != nil {
		// The failed write may have left part of a line: the record of a removal still
		// in hand starts a line of its own, or is not written.
		if err := endLine(f); err != nil {
			return fmt.Errorf("%w: %w", ErrAuditLog, err)
		}
	}
	if err := writeSynced(a.Log, append(b, '\n')); err != nil {
		err = fmt.Errorf("%w: %w", ErrAuditLog, err)
		if a.failed == nil {
			a.failed = err
		}
		return err
	}
	return nil
}

// writeSynced writes b, and syncs it to disk when w is a regular file. A pipe, a
// terminal or a character device (--audit-log /dev/stdout, a FIFO read by a log
// shipper) cannot be synced: what was written is handed on, and that is all there is.
func writeSynced(w io.Writer, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	if f, ok := w.(*os.File); ok {
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("syncing to disk: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("syncing to disk: %w", err)
		}
	}
	return nil
}

// newID names a removal in its two audit lines.
func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Event records a removal as an events.k8s.io/v1 Event regarding the object. A
// terminating namespace refuses new Events, and cluster-scoped objects have no namespace:
// the Event then goes to "default", still regarding the object. It returns the
// Event's namespace/name.
func (a *Auditor) Event(ctx context.Context, t plan.Target, rec *Record) (string, error) {
	action, note := t.WriteKind().Event(&t)
	at := ""
	if rec.VerifiedAt != nil {
		at = " at " + rec.VerifiedAt.UTC().Format(metav1.RFC3339Micro)
	}
	switch {
	case rec.Verified:
		note += fmt.Sprintf(", verified by rule %s%s: %s", rec.Rule, at, rec.Evidence)
	case rec.Rule != "":
		note += fmt.Sprintf(", unverified (rule %s%s: %s: %s), forced with reason: %s", rec.Rule, at, rec.Verdict, rec.Evidence, rec.Reason)
	default:
		note += fmt.Sprintf(", unverified, forced with reason: %s", rec.Reason)
	}
	if first := rec.FirstVerification; first != nil {
		firstAt := ""
		if first.VerifiedAt != nil {
			firstAt = " at " + first.VerifiedAt.UTC().Format(metav1.RFC3339Micro)
		}
		note += fmt.Sprintf(" (the object changed after its first verification, rule %s%s: %s: %s; %d verifications)",
			first.Rule, firstAt, first.Verdict, first.Evidence, rec.Verifications)
	}
	note += fmt.Sprintf("; by %s", rec.User)
	// Redacted before it is cut short, or the start of a secret would show.
	note = redact.String(note)
	if len(note) > maxNote {
		note = note[:maxNote-3] + "..."
	}
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", safeName(t.Name), time.Now().UnixNano())},
		EventTime:           metav1.NowMicro(),
		ReportingController: FieldManager,
		ReportingInstance:   a.Instance,
		Action:              action,
		Reason:              rec.Action,
		Note:                note,
		Type:                corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{
			APIVersion: t.Resource.GroupVersion().String(), Kind: t.Resource.Kind,
			Namespace: t.Namespace, Name: t.Name, UID: t.UID,
		},
	}
	if !rec.Verified {
		ev.Type = corev1.EventTypeWarning
	}
	ns := t.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	ev.Namespace = ns
	err := a.createEvent(ctx, ev)
	if err != nil && ns != metav1.NamespaceDefault && (apierrors.IsForbidden(err) || apierrors.IsNotFound(err)) {
		// "unable to create new content in namespace X because it is being terminated"
		ev.Namespace = metav1.NamespaceDefault
		err = a.createEvent(ctx, ev)
	}
	if err != nil {
		return "", fmt.Errorf("recording an Event about the removal of %s: %w", t.String(), err)
	}
	return ev.Namespace + "/" + ev.Name, nil
}

// createEvent creates ev, again after a server error: the name is the same each time,
// so an attempt that was stored without an answer shows as AlreadyExists, and counts.
func (a *Auditor) createEvent(ctx context.Context, ev *eventsv1.Event) error {
	unanswered := false
	return retry.OnError(client.ServerErrorBackoff, func(err error) bool {
		unanswered = serverError(err)
		return unanswered
	}, func() error {
		_, err := a.Kube.EventsV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && unanswered {
			return nil
		}
		return err
	})
}

// serverError is an error the API server may not repeat: 500, 503, 504. An admission
// webhook that failed is not one: admission runs before anything is stored, so nothing
// was written, and the webhook answers the same way until someone mends it.
func serverError(err error) bool {
	if err == nil || isWebhookError(err) {
		return false
	}
	return apierrors.IsInternalError(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsUnexpectedServerError(err)
}

func isWebhookError(err error) bool {
	return strings.Contains(err.Error(), "failed calling webhook") || strings.Contains(err.Error(), "admission webhook")
}

// safeName turns an object name into the start of an Event name.
func safeName(name string) string {
	name = strings.ToLower(name)
	if len(name) > 200 {
		name = name[:200]
	}
	return strings.Trim(name, ".-")
}
