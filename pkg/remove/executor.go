package remove

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/dynamic"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Executor carries out the actions of a plan, one at a time, each the same way: a backup
// of the object, the guarded removal, a re-read of what is left, an Event on the object
// and an audit line. It is the only path by which kubectl-finalize removes a finalizer.
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
	Verifier Verifier
	// Continue, if set, is asked before each action; false stops the execution there,
	// after the action in hand (a SIGTERM), and the rest are not attempted.
	Continue func() bool
	// OnRecord, if set, is called after each action with its record.
	OnRecord func(*Record)
	// Warn, if set, receives what went wrong after a removal succeeded: the re-read of
	// the object, the Event.
	Warn func(error)
}

// Execute carries out actions in order and returns one record per action attempted. An
// action that fails does not stop the others; the error joins every failure.
func (e *Executor) Execute(ctx context.Context, actions []Action) ([]*Record, error) {
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
	records := make([]*Record, 0, len(actions))
	var failed []error
	for i := range actions {
		if e.Continue != nil && !e.Continue() {
			break
		}
		rec, err := e.one(ctx, &remover, &actions[i])
		records = append(records, rec)
		if err != nil {
			failed = append(failed, err)
		}
		if e.OnRecord != nil {
			e.OnRecord(rec)
		}
	}
	return records, utilerrors.NewAggregate(failed)
}

func (e *Executor) warn(err error) {
	if e.Warn != nil && err != nil {
		e.Warn(err)
	}
}

// one carries out one action. Its record is written to the audit log whatever happens,
// unless this is a dry run.
func (e *Executor) one(ctx context.Context, remover *Remover, a *Action) (*Record, error) {
	rec := &Record{
		Action: ReasonForceRemoved, Target: a.Ref(), Finalizer: a.Finalizer.Name, Field: a.Field,
		Verified: a.Verified, Rule: a.Verification.Rule, Verdict: a.Verification.Verdict, Evidence: a.Verification.Evidence,
	}
	if a.Verified {
		rec.Action = ReasonRemoved
	} else {
		rec.Reason = a.Reason
	}
	if e.DryRun != DryRunNone {
		out, err := remover.Remove(ctx, a.Target, e.DryRun)
		rec.Time, rec.Result, rec.Remaining = metav1.Now().UTC(), out.Result, out.Remaining
		if err != nil {
			rec.Error = err.Error()
		}
		return rec, err
	}
	rec.User = e.Auditor.User
	finish := func(err error) error {
		rec.Time = metav1.Now().UTC()
		if err != nil {
			rec.Error = err.Error()
		}
		if lerr := e.Auditor.Line(rec); lerr != nil {
			return errors.Join(err, lerr)
		}
		return err
	}
	if e.BackupDir != "" {
		path, err := Backup(ctx, e.Dynamic, e.BackupDir, a.Target)
		if err != nil {
			return rec, finish(fmt.Errorf("%s: not removed, the backup failed: %w", a.String(), err))
		}
		rec.Backup = path
	}
	out, err := remover.Remove(ctx, a.Target, DryRunNone)
	rec.Result = out.Result
	if err != nil {
		return rec, finish(err)
	}
	if out.Result == Removed {
		var oerr error
		if rec.Deleted, rec.Remaining, oerr = remover.Observe(ctx, a.Target); oerr != nil {
			e.warn(fmt.Errorf("could not read %s after the removal: %w", a.Ref(), oerr))
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
func (e *Executor) reverify(ctx context.Context, t Target) (string, error) {
	obj, err := e.Remover.Read(ctx, t)
	if err != nil {
		return "", err
	}
	if obj.Meta.UID != t.UID {
		return "", ErrUIDChanged
	}
	if obj.Meta.DeletionTimestamp == nil {
		return "", errors.New("it is no longer being deleted")
	}
	v := e.Verifier.Verify(ctx, VerifyRequest{Object: obj, Finalizer: finalizev1alpha1.Finalizer{Name: t.Finalizer, Field: t.Field}, Fresh: true})
	if !v.Gone() {
		why := fmt.Sprintf("%s: %s", v.Verdict, v.Evidence)
		switch {
		case v.Rule == "":
			why = "no rule matches it any more"
		case v.Distrust != "":
			why = v.Distrust
		}
		return "", errors.New(why)
	}
	return v.ResourceVersion, nil
}

// Read returns the object a target names, as it is now.
func (r *Remover) Read(ctx context.Context, t Target) (*scan.Object, error) {
	if t.Resource.IsNamespaces() {
		ns, err := r.Kube.CoreV1().Namespaces().Get(ctx, t.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return scan.NewObject(t.Resource, &ns.ObjectMeta, ns), nil
	}
	pm, err := r.metadataResource(&t).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return scan.NewObject(t.Resource, &pm.ObjectMeta, nil), nil
}
