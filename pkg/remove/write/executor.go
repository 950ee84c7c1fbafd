package write

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/dynamic"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"
)

// Executor carries out the actions of a plan, each the same way: an intent line in the
// audit log, a backup of the object, the guarded removal, what is left of the object, an
// Event on the object and the audit record. It is the only path by which
// kubectl-finalize removes a finalizer, and no removal starts once an audit line could
// not be written.
type Executor struct {
	Remover *Remover
	// Auditor records each removal; it is required unless DryRun is client or server.
	Auditor *Auditor
	// DryRun none writes; client only reads; server sends each write with dryRun=All.
	DryRun DryRun
	// BackupDir, if set, receives each object before anything is removed from it, read
	// through Dynamic. A failed backup fails the removal.
	BackupDir string
	Dynamic   dynamic.Interface
	// Verifier verifies a pinned action again when its object changed after it was
	// verified; without one, such an action fails and nothing is written.
	Verifier plan.Verifier
	// Workers bounds how many objects are written at once; 0 or 1 writes one at a time.
	// The actions on one object always run one after another, in plan order.
	Workers int
	// Continue, if set, is asked before each action; false stops the execution there,
	// after the actions in hand (a SIGTERM), and the rest are not attempted.
	Continue func() bool
	// OnRecord, if set, is called after each action with its record, one call at a time.
	OnRecord func(*Record)
	// Warn, if set, receives what went wrong after a removal succeeded: the re-read of
	// the object, the Event.
	Warn func(error)
}

// Why an action was not attempted, in its row.
const (
	notAttemptedStopped   = "not attempted: the pass was stopped before it"
	notAttemptedUnaudited = "not attempted: an audit line could not be written, so no further removal was started"
)

// Execute carries out actions, object by object in plan order, and returns one record
// per action, nil for an action not attempted. An action that fails does not stop the
// others, with one exception: once an audit line cannot be written, no further removal
// starts (the error then matches ErrAuditLog). The error joins every failure.
//
// rows, if given, are the actions' rows as the plan shows them (rows[i] is actions[i]'s):
// each gets its action's outcome, or why it was not attempted. The audit lines of an
// action are made from the row the action itself gives (plan.Action.API), never from
// rows, which a confirmation was shown and could have changed: they name what is written.
func (e *Executor) Execute(ctx context.Context, actions []plan.Action, rows []*finalizev1alpha1.Removal) ([]*Record, error) {
	if rows == nil {
		rows = make([]*finalizev1alpha1.Removal, len(actions))
		for i := range actions {
			row := actions[i].API()
			rows[i] = &row
		}
	}
	if len(rows) != len(actions) {
		return nil, fmt.Errorf("refusing to remove finalizers: %d rows for %d actions", len(rows), len(actions))
	}
	records, err := e.execute(ctx, actions, rows)
	if records == nil && err != nil {
		// Refused before any action (no auditor): every row says why.
		for _, row := range rows {
			row.Result, row.Error = finalizev1alpha1.ResultFailed, err.Error()
		}
		return nil, err
	}
	why := notAttemptedStopped
	if errors.Is(err, ErrAuditLog) {
		why = notAttemptedUnaudited
	}
	skipped := 0
	for i, rec := range records {
		if rec == nil {
			skipped++
			rows[i].Result, rows[i].Message = finalizev1alpha1.ResultKept, why
		}
	}
	if skipped > 0 && errors.Is(err, ErrAuditLog) {
		err = utilerrors.Flatten(utilerrors.NewAggregate([]error{err, fmt.Errorf("%s %s", words.Count(skipped, "removal"), why)}))
	}
	return records, err
}

// execute is Execute once each action has its row.
func (e *Executor) execute(ctx context.Context, actions []plan.Action, rows []*finalizev1alpha1.Removal) ([]*Record, error) {
	if e.DryRun == "" {
		e.DryRun = DryRunNone
	}
	if e.DryRun == DryRunNone && e.Auditor == nil {
		return nil, errors.New("refusing to remove finalizers without an auditor")
	}
	remover := *e.Remover
	if remover.Reverify == nil && e.Verifier != nil {
		remover.Reverify = e.reverify
	}
	// The Lease of the node of every force deletion is watched before its DELETE: each
	// node's once, all at once, so that the pods of several nodes wait for one watch.
	leases, stop := remover.startLeaseWatches(ctx, actions)
	defer stop()
	remover.leases = leases
	records := make([]*Record, len(actions))
	var (
		mu     sync.Mutex
		failed []error
	)
	unaudited := func() bool { return e.DryRun == DryRunNone && e.Auditor.Failed() != nil }
	proceed := func() bool { return !unaudited() && (e.Continue == nil || e.Continue()) }
	object := func(group []int) {
		for k, i := range group {
			if unaudited() || k > 0 && !proceed() {
				return
			}
			rec, err := e.one(ctx, &remover, &actions[i], rows[i])
			mu.Lock()
			if rec != nil {
				records[i] = rec
				if e.OnRecord != nil {
					e.OnRecord(rec)
				}
			}
			if err != nil {
				failed = append(failed, err)
			}
			mu.Unlock()
		}
	}
	var g errgroup.Group
	g.SetLimit(max(e.Workers, 1))
	for _, group := range byObject(actions) {
		// Go waits for a free worker, which asks whether to go on before it takes the
		// object; the next object waits for that answer, so a stop is seen in plan order
		// and before the next object.
		started := make(chan bool, 1)
		g.Go(func() error {
			ok := proceed()
			started <- ok
			if ok {
				object(group)
			}
			return nil
		})
		if !<-started {
			break
		}
	}
	_ = g.Wait() // failures are collected in failed, one per action
	return records, utilerrors.NewAggregate(failed)
}

// byObject groups the indexes of actions by the object they act on, in plan order.
func byObject(actions []plan.Action) [][]int {
	var groups [][]int
	at := map[types.UID]int{}
	for i := range actions {
		uid := actions[i].UID
		if g, ok := at[uid]; ok && uid != "" {
			groups[g] = append(groups[g], i)
			continue
		}
		at[uid] = len(groups)
		groups = append(groups, []int{i})
	}
	return groups
}

func (e *Executor) warn(err error) {
	if e.Warn != nil && err != nil {
		e.Warn(err)
	}
}

// one carries out one action. Unless this is a dry run, an intent line is written and
// synced before anything else, and the record is written to the audit log after,
// whatever happened. An intent that cannot be written fails the action, and nothing is
// written; if an earlier line failed, the action is not attempted: nil, and the error.
func (e *Executor) one(ctx context.Context, remover *Remover, a *plan.Action, row *finalizev1alpha1.Removal) (*Record, error) {
	rec, err := e.attempt(ctx, remover, a)
	if rec != nil {
		rec.outcome(row)
	}
	return rec, err
}

// attempt is one's work: the record of action a.
func (e *Executor) attempt(ctx context.Context, remover *Remover, a *plan.Action) (*Record, error) {
	own := a.API()
	rec := &Record{Entry: entryOf(&own, a.WriteKind().Reason(a.Verified), a.Verified)}
	first := a.Verification.Record()
	// The remover of this action records each verification made again on it, before the
	// write made on that verification.
	r := *remover
	r.Reverified = func(v *plan.Verification) error {
		again := v.Record()
		rec.verification(again)
		rec.Verifications++
		rec.FirstVerification = nil
		if !sameAnswer(first, again) {
			rec.FirstVerification = first
		}
		if e.DryRun != DryRunNone {
			return nil
		}
		intent := &Intent{Entry: rec.Entry, ResourceVersion: v.ResourceVersion}
		intent.Time = metav1.Now().UTC()
		if err := e.Auditor.Intent(intent); err != nil {
			return fmt.Errorf("%s: not removed: it changed and was verified again, and the intent of the write made on that verification could not be recorded: %w; "+
				"free the disk of the audit log, or choose another --audit-log, and run again", a.String(), err)
		}
		return nil
	}
	if e.DryRun != DryRunNone {
		out, err := r.Remove(ctx, a.Target, e.DryRun)
		rec.Time, rec.Result, rec.Remaining = metav1.Now().UTC(), out.Result, out.Remaining
		if err != nil {
			rec.Error = err.Error()
		}
		return rec, err
	}
	rec.User = e.Auditor.User
	intent := &Intent{Entry: rec.Entry, ResourceVersion: a.ResourceVersion}
	intent.Time = metav1.Now().UTC()
	if err := e.Auditor.Intent(intent); err != nil {
		if errors.Is(err, errAuditStopped) {
			return nil, nil
		}
		rec.Time = metav1.Now().UTC()
		err = fmt.Errorf("%s: not removed: its intent could not be recorded: %w; free the disk of the audit log, or choose another --audit-log, and run again", a.String(), err)
		rec.Error = err.Error()
		return rec, err
	}
	rec.ID = intent.ID
	finish := func(err error) error {
		rec.Time = metav1.Now().UTC()
		if err != nil {
			rec.Error = err.Error()
		}
		if lerr := e.Auditor.Line(rec); lerr != nil {
			what := "was not removed, and"
			if rec.Result == Removed {
				what = "was removed, but"
			}
			lerr = fmt.Errorf("%s %s its audit record could not be written: %w; its intent line (id %s) is the only record on disk", a.String(), what, lerr, rec.ID)
			if rec.Error != "" {
				rec.Error += "; "
			}
			rec.Error += lerr.Error()
			return errors.Join(err, lerr)
		}
		return err
	}
	if e.BackupDir != "" && a.WriteKind() == plan.UnsafeDelete {
		// Nothing can be read to save: its bytes are only in etcd.
		e.warn(fmt.Errorf("%s: no backup in %s: the API server cannot read it; its bytes are in etcd under %s (etcdctl get)", a.String(), e.BackupDir, orUnknown(a.Key)))
	} else if e.BackupDir != "" {
		path, err := Backup(ctx, e.Dynamic, e.BackupDir, a.Target)
		if err != nil {
			return rec, finish(fmt.Errorf("%s: not removed, the backup failed: %w", a.String(), err))
		}
		rec.Backup = path
	}
	out, err := r.Remove(ctx, a.Target, DryRunNone)
	// Pinned is empty for a forced removal of a finalizer, which no verification pinned.
	rec.Result, rec.Attempts, rec.Reverified, rec.ResourceVersion = out.Result, out.Attempts, out.Reverified, out.Pinned
	if err != nil {
		return rec, finish(err)
	}
	if out.Result == Removed {
		if out.Observed {
			rec.Deleted, rec.Remaining = out.Deleted, out.Remaining
		} else {
			var oerr error
			if rec.Deleted, rec.Remaining, oerr = r.Observe(ctx, a.Target); oerr != nil {
				e.warn(fmt.Errorf("could not read %s after the removal: %w", a.Ref.API(), oerr))
			}
		}
		var everr error
		if rec.Event, everr = e.Auditor.Event(ctx, a.Target, rec); everr != nil {
			e.warn(everr)
		}
	} else {
		rec.Deleted, rec.Remaining = out.Deleted, out.Remaining
	}
	return rec, finish(nil)
}

// reverify verifies a pinned target again, from the object as it is now.
func (e *Executor) reverify(ctx context.Context, t plan.Target) (plan.Verification, error) {
	obj, err := e.Remover.Read(ctx, t)
	if err != nil {
		return plan.Verification{}, err
	}
	if obj.Meta.UID != t.UID {
		return plan.Verification{}, ErrUIDChanged
	}
	if obj.Meta.DeletionTimestamp == nil {
		return plan.Verification{}, errors.New("it is no longer being deleted")
	}
	v := e.Verifier.Verify(ctx, plan.VerifyRequest{Object: obj, Finalizer: finalizev1alpha1.Finalizer{Name: t.Finalizer, Field: t.Field}, Fresh: true})
	if v.VerifiedAt.IsZero() {
		v.VerifiedAt = time.Now() // asked afresh: answered by now
	}
	if !v.Gone() {
		why := fmt.Sprintf("%s: %s", v.Verdict, v.Evidence)
		switch {
		case v.Rule == "":
			why = "no rule matches it any more"
		case v.Distrusted():
			why = v.Detail
		}
		return plan.Verification{}, errors.New(why)
	}
	// The write is made on this verification, so its rule's permissions are the ones that
	// count: a system finalizer its first rule allowed stays unless this one allows it.
	if t.SystemByRule && !v.AllowSystem {
		return plan.Verification{}, fmt.Errorf("it is a system finalizer, and rule %s, which verified it again after it changed, does not set allowSystem",
			v.Rule)
	}
	return v, nil
}

// Read returns the object a target names, as it is now.
func (r *Remover) Read(ctx context.Context, t plan.Target) (*kube.Object, error) {
	if t.Resource.IsNamespaces() {
		ns, err := r.Kube.CoreV1().Namespaces().Get(ctx, t.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return kube.NewObject(t.Resource, &ns.ObjectMeta, ns), nil
	}
	pm, err := r.metadataResource(&t).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return kube.NewObject(t.Resource, &pm.ObjectMeta, nil), nil
}

// orUnknown is s, or "a key the API server did not name" when it is empty.
func orUnknown(s string) string {
	if s == "" {
		return "a key the API server did not name"
	}
	return s
}
