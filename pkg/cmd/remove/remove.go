// Package remove is the `kubectl finalize remove` command.
package remove

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/doctor"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/printer"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/version"
)

const long = `Remove named finalizers from objects stuck in Terminating: break-glass cleanup.

A finalizer stands for cleanup that has not happened: a cloud database still to delete, a
volume still attached. Removing it by hand skips that cleanup. So remove:

  * removes only the finalizers you name (--finalizer, repeatable), or every one of them
    one by one (--all-finalizers), never the whole list at once;
  * shows what will change (object, finalizer, owner, diagnosed cause, verification) and
    asks "Remove N finalizers from M objects? [y/N]" on a terminal; --yes confirms in
    scripts; without a terminal and without --yes it refuses;
  * refuses removals nobody verified, unless --force-unverified and --reason say why
    (verification by providers comes with policies);
  * refuses finalizers of Kubernetes itself (kubernetes, orphan, foregroundDeletion,
    kubernetes.io/pvc-protection, ...) unless --allow-system, and refuses the kubernetes
    finalizer of a namespace that may still hold objects unless --allow-stranding: those
    objects would stay in etcd;
  * guards every write: a JSON patch that tests the object's uid and the finalizer's
    position before removing it, or the namespace /finalize subresource with the
    resourceVersion just read; if the object changed, it is read and decided again, and a
    re-created namesake is refused;
  * re-reads the object afterwards and says whether it is gone or what still holds it;
  * records each removal: an Event on the object (reason FinalizerRemoved or
    FinalizerForceRemoved) and a JSON audit line on stderr or --audit-log, and with
    --backup-dir saves the whole object first.

Nothing is removed when any requested removal is refused.`

const example = `  # Preview, then remove after confirming, the finalizer of a database whose operator is gone
  kubectl finalize remove databases.db.example.com/orders -n team-a \
    --finalizer db.example.com/finalizer \
    --force-unverified --reason "operator uninstalled; RDS instance deleted by hand (INC-1234)"

  # What would be sent, checked by the API server and its admission webhooks
  kubectl finalize remove configmap/cfg --finalizer example.com/x --dry-run=server \
    --force-unverified --reason test

  # In a script: no question, a backup of each object, the audit in a file
  kubectl finalize remove widget/a widget/b --all-finalizers --yes \
    --force-unverified --reason "CHG-42" --backup-dir ./backups --audit-log audit.jsonl`

// Flag names.
const (
	flagFinalizer       = "finalizer"
	flagAllFinalizers   = "all-finalizers"
	flagYes             = "yes"
	flagForceUnverified = "force-unverified"
	flagReason          = "reason"
	flagAllowSystem     = "allow-system"
	flagAllowStranding  = "allow-stranding"
	flagDryRun          = "dry-run"
	flagBackupDir       = "backup-dir"
	flagAuditLog        = "audit-log"
)

// Options are the options of the remove command.
type Options struct {
	Finalizers      []string
	AllFinalizers   bool
	Yes             bool
	ForceUnverified bool
	Reason          string
	AllowSystem     bool
	AllowStranding  bool
	DryRun          string
	BackupDir       string
	AuditLog        string

	factory   *util.Factory
	namespace string
	targets   []target
	dryRun    remove.DryRun
	// isTerminal tells whether stdin is a terminal a person answers at.
	isTerminal func() bool

	genericiooptions.IOStreams
}

// target is one object named on the command line.
type target struct {
	resource  scan.Resource
	namespace string
	name      string
}

func (t target) String() string {
	ref := finalizev1alpha1.ObjectReference{APIVersion: t.resource.GroupVersion().String(), Resource: t.resource.Resource, Namespace: t.namespace, Name: t.name}
	return printer.ObjectName(ref)
}

// NewOptions returns the options with their defaults.
func NewOptions(f *util.Factory, streams genericiooptions.IOStreams) *Options {
	o := &Options{DryRun: string(remove.DryRunNone), factory: f, IOStreams: streams}
	o.isTerminal = func() bool {
		file, ok := o.In.(*os.File)
		return ok && term.IsTerminal(int(file.Fd())) //nolint:gosec // a file descriptor fits an int
	}
	return o
}

// NewCmdRemove returns the remove command.
func NewCmdRemove(f *util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(f, streams)
	cmd := &cobra.Command{
		Use:                   "remove (TYPE/NAME ... | TYPE NAME ...) (--finalizer NAME ... | --all-finalizers) [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Remove named finalizers from stuck objects: guarded, previewed, audited",
		Long:                  long,
		Example:               example,
		ValidArgsFunction:     util.ResourceTypeCompletion(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(cmd); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&o.Finalizers, flagFinalizer, o.Finalizers, "Name of a finalizer to remove. Repeatable.")
	fs.BoolVar(&o.AllFinalizers, flagAllFinalizers, o.AllFinalizers, "If true, remove every finalizer of the objects, one at a time.")
	fs.BoolVar(&o.Yes, flagYes, o.Yes, "If true, do not ask for confirmation. Required when stdin is not a terminal.")
	fs.BoolVar(&o.ForceUnverified, flagForceUnverified, o.ForceUnverified, "If true, remove finalizers that no provider verified. Requires --reason.")
	fs.StringVar(&o.Reason, flagReason, o.Reason, "Why the unverified removal is safe, for the audit (Event and audit line).")
	fs.BoolVar(&o.AllowSystem, flagAllowSystem, o.AllowSystem, "If true, allow removing finalizers that belong to Kubernetes itself (kubernetes, orphan, foregroundDeletion, kubernetes.io/pvc-protection, ...).")
	fs.BoolVar(&o.AllowStranding, flagAllowStranding, o.AllowStranding, "If true, allow removing a namespace's kubernetes finalizer while it may still hold objects; they stay in etcd.")
	fs.StringVar(&o.DryRun, flagDryRun, o.DryRun, `Must be "none", "server", or "client". If client strategy, only print what would be removed, without sending it. If server strategy, submit server-side request without persisting the resource.`)
	fs.Lookup(flagDryRun).NoOptDefVal = "unchanged"
	fs.StringVar(&o.BackupDir, flagBackupDir, o.BackupDir, "If set, save each object as YAML in this folder before removing anything from it.")
	fs.StringVar(&o.AuditLog, flagAuditLog, o.AuditLog, "Append the JSON audit lines to this file instead of stderr.")
	_ = cmd.RegisterFlagCompletionFunc(flagDryRun, cobra.FixedCompletions([]string{"none", "server", "client"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagDirname(flagBackupDir)
	return cmd
}

// Complete resolves the objects.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	var err error
	if o.namespace, _, err = o.factory.Namespace(); err != nil {
		return err
	}
	switch o.DryRun {
	case "none", "client", "server":
		o.dryRun = remove.DryRun(o.DryRun)
	case "unchanged":
		return util.UsageErrorf(cmd, `--dry-run flag without a value was specified. A value must be set: "none", "server", or "client".`)
	default:
		return util.UsageErrorf(cmd, `Invalid dry-run value (%v). Must be "none", "server", or "client".`, o.DryRun)
	}
	if len(args) == 0 {
		return util.UsageErrorf(cmd, "you must name at least one object: TYPE/NAME or TYPE NAME")
	}
	mapper, err := o.factory.RESTMapper()
	if err != nil {
		return err
	}
	type pair struct{ typ, name string }
	var pairs []pair
	if strings.Contains(args[0], "/") {
		for _, a := range args {
			typ, name, ok := strings.Cut(a, "/")
			if !ok || typ == "" || name == "" {
				return util.UsageErrorf(cmd, "%q is not TYPE/NAME: name every object as TYPE/NAME, or give TYPE NAME...", a)
			}
			pairs = append(pairs, pair{typ, name})
		}
	} else {
		if len(args) < 2 {
			return util.UsageErrorf(cmd, "you must name at least one %s", args[0])
		}
		for _, name := range args[1:] {
			if strings.Contains(name, "/") {
				return util.UsageErrorf(cmd, "there is no need to give a type in %q when the type is already %q", name, args[0])
			}
			pairs = append(pairs, pair{args[0], name})
		}
	}
	for _, p := range pairs {
		r, err := util.ResolveResource(mapper, p.typ)
		if err != nil {
			return util.UsageError(err)
		}
		t := target{resource: r, name: p.name}
		if r.Namespaced {
			t.namespace = o.namespace
		}
		o.targets = append(o.targets, t)
	}
	return nil
}

// Validate rejects bad flag combinations.
func (o *Options) Validate(cmd *cobra.Command) error {
	switch {
	case len(o.Finalizers) == 0 && !o.AllFinalizers:
		return util.UsageErrorf(cmd, "name the finalizers to remove with --%s, or give --%s", flagFinalizer, flagAllFinalizers)
	case len(o.Finalizers) > 0 && o.AllFinalizers:
		return util.UsageErrorf(cmd, "--%s and --%s cannot be used together", flagFinalizer, flagAllFinalizers)
	case o.ForceUnverified && strings.TrimSpace(o.Reason) == "":
		return util.UsageErrorf(cmd, "--%s requires --%s: say why removing unverified finalizers is safe, for the audit", flagForceUnverified, flagReason)
	case o.Reason != "" && !o.ForceUnverified:
		return util.UsageErrorf(cmd, "--%s only applies with --%s", flagReason, flagForceUnverified)
	}
	for _, f := range o.Finalizers {
		if f == "" {
			return util.UsageErrorf(cmd, "--%s must not be empty", flagFinalizer)
		}
	}
	return nil
}

// Run plans, previews, confirms and removes.
func (o *Options) Run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	rep, err := util.Diagnose(ctx, o.factory, o.ErrOut, scan.Options{Namespace: o.scope()})
	if err != nil {
		return err
	}
	var reqs []remove.Request
	var missing []error
	for _, t := range o.targets {
		obj, err := o.find(ctx, rep, t)
		if err != nil {
			missing = append(missing, err)
			continue
		}
		reqs = append(reqs, remove.Request{Object: obj, Finalizers: o.Finalizers, All: o.AllFinalizers})
	}
	if len(missing) > 0 {
		fmt.Fprintln(o.ErrOut, "Nothing was removed.")
		return utilerrors.NewAggregate(missing)
	}
	plan := remove.NewPlan(reqs, rep.Result, rep.Cause, owner.Builtin(), remove.Options{
		ForceUnverified: o.ForceUnverified, Reason: o.Reason, AllowSystem: o.AllowSystem, AllowStranding: o.AllowStranding,
	})
	if len(plan.Refusals) > 0 {
		return o.refused(plan)
	}
	if err := o.preview(plan); err != nil {
		return err
	}
	if o.dryRun == remove.DryRunNone && !o.Yes {
		ok, err := o.confirm(plan)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(o.ErrOut, "Nothing was removed.")
			return nil
		}
	}
	return o.act(ctx, plan)
}

// scope is the namespace a diagnosis covering every target can be limited to, or "" for
// the whole cluster.
func (o *Options) scope() string {
	ns := ""
	for i, t := range o.targets {
		tns := t.namespace
		if t.resource.IsNamespaces() {
			tns = t.name
		}
		if tns == "" || (i > 0 && tns != ns) {
			return ""
		}
		ns = tns
	}
	return ns
}

// find returns the stuck object a target names, or says why it cannot be worked on.
func (o *Options) find(ctx context.Context, rep *doctor.Report, t target) (*scan.Object, error) {
	for _, obj := range rep.Result.Objects {
		if obj.Resource.GroupResource() == t.resource.GroupResource() && obj.Meta.Namespace == t.namespace && obj.Meta.Name == t.name {
			return obj, nil
		}
	}
	// Not found stuck: read it, to say why (or to find one the scan could not list).
	var m *metav1.ObjectMeta
	var ns *corev1.Namespace
	if t.resource.IsNamespaces() {
		kube, err := o.factory.KubeClient()
		if err != nil {
			return nil, err
		}
		if ns, err = kube.CoreV1().Namespaces().Get(ctx, t.name, metav1.GetOptions{}); err != nil {
			return nil, err
		}
		m = &ns.ObjectMeta
	} else {
		mc, err := o.factory.MetadataClient()
		if err != nil {
			return nil, err
		}
		r := mc.Resource(t.resource.GroupVersionResource)
		var pm *metav1.PartialObjectMetadata
		if t.namespace != "" {
			pm, err = r.Namespace(t.namespace).Get(ctx, t.name, metav1.GetOptions{})
		} else {
			pm, err = r.Get(ctx, t.name, metav1.GetOptions{})
		}
		if err != nil {
			return nil, err
		}
		m = &pm.ObjectMeta
	}
	switch {
	case m.DeletionTimestamp == nil:
		return nil, fmt.Errorf("%s is not being deleted: removing a finalizer now would let its deletion skip the cleanup later; delete it first", t)
	case len(m.Finalizers) == 0 && (ns == nil || len(ns.Spec.Finalizers) == 0):
		return nil, fmt.Errorf("%s is being deleted and has no finalizers left", t)
	}
	obj := scan.NewObject(t.resource, m, ns)
	owner.NewResolver(owner.Builtin(), rep.Result.Groups).Annotate([]*scan.Object{obj})
	return obj, nil
}

func (o *Options) refused(plan *remove.Plan) error {
	var lines []string
	needsFlag := true
	for _, r := range plan.Refusals {
		line := fmt.Sprintf("  %s: finalizer %s: %s", r.Object, r.Finalizer, r.Why)
		if r.Flag != "" {
			line += "; to remove it anyway: " + r.Flag
		} else {
			needsFlag = false
		}
		lines = append(lines, line)
	}
	fmt.Fprintln(o.ErrOut, "Nothing was removed.")
	err := fmt.Errorf("refusing %d of %d requested removals:\n%s", len(plan.Refusals), len(plan.Refusals)+len(plan.Actions), strings.Join(lines, "\n"))
	if needsFlag {
		return util.UsageError(err)
	}
	return err
}

func (o *Options) preview(plan *remove.Plan) error {
	suffix := ""
	switch o.dryRun {
	case remove.DryRunClient:
		suffix = " (dry run)"
	case remove.DryRunServer:
		suffix = " (server dry run)"
	}
	fmt.Fprintf(o.ErrOut, "About to remove %s from %s%s:\n", printer.Plural(len(plan.Actions), "finalizer"), printer.Plural(plan.Objects(), "object"), suffix)
	rows := make([][]string, 0, len(plan.Actions))
	for _, a := range plan.Actions {
		cause := "<not diagnosed>"
		if a.Cause != nil {
			cause = a.Cause.Reason
		}
		own := a.Finalizer.Owner
		if own == "" {
			own = "<unknown>"
		}
		verification := "verified: " + a.Evidence
		if !a.Verified {
			verification = "UNVERIFIED, forced: " + o.Reason
		}
		rows = append(rows, []string{printer.ObjectName(a.Ref()), a.Finalizer.Name, own, cause, verification})
	}
	return printer.Table(o.ErrOut, []string{"object", "finalizer", "owner", "cause", "verification"}, rows, false)
}

// confirm asks on a terminal; default No. Without a terminal it refuses.
func (o *Options) confirm(plan *remove.Plan) (bool, error) {
	if !o.isTerminal() {
		return false, util.UsageError(errors.New("refusing to remove finalizers without confirmation: stdin is not a terminal; pass --yes to confirm"))
	}
	fmt.Fprintf(o.ErrOut, "Remove %s from %s? [y/N]: ", printer.Plural(len(plan.Actions), "finalizer"), printer.Plural(plan.Objects(), "object"))
	answer, err := bufio.NewReader(o.In).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	answer = strings.ToLower(strings.TrimSpace(answer))
	return answer == "y" || answer == "yes", nil
}

// act makes the removals, one at a time, and reports each.
func (o *Options) act(ctx context.Context, plan *remove.Plan) error {
	kube, err := o.factory.KubeClient()
	if err != nil {
		return err
	}
	mc, err := o.factory.MetadataClient()
	if err != nil {
		return err
	}
	dyn, err := o.factory.DynamicClient()
	if err != nil {
		return err
	}
	remover := &remove.Remover{Metadata: mc, Kube: kube}
	var auditor *remove.Auditor
	if o.dryRun == remove.DryRunNone {
		if auditor, err = o.newAuditor(ctx); err != nil {
			return err
		}
		if f, ok := auditor.Log.(*os.File); ok && f != os.Stderr {
			defer f.Close()
		}
	}
	var failed []error
	for _, a := range plan.Actions {
		if err := o.actOne(ctx, remover, dyn, auditor, a); err != nil {
			failed = append(failed, err)
		}
	}
	return utilerrors.NewAggregate(failed)
}

func (o *Options) newAuditor(ctx context.Context) (*remove.Auditor, error) {
	kube, err := o.factory.KubeClient()
	if err != nil {
		return nil, err
	}
	user, err := remove.WhoAmI(ctx, kube)
	if err != nil {
		fmt.Fprintf(o.ErrOut, "Warning: %v; the audit names the user as <unknown>\n", err)
		user = "<unknown>"
	}
	host, _ := os.Hostname()
	a := &remove.Auditor{Kube: kube, User: user, Instance: fmt.Sprintf("kubectl-finalize-%s@%s", version.Get().Version, host), Log: o.ErrOut}
	if o.AuditLog != "" {
		f, err := os.OpenFile(o.AuditLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("opening the audit log: %w", err)
		}
		a.Log = f
	}
	return a, nil
}

func (o *Options) actOne(ctx context.Context, remover *remove.Remover, dyn dynamic.Interface, auditor *remove.Auditor, a remove.Action) error {
	name := printer.ObjectName(a.Ref())
	if o.dryRun != remove.DryRunNone {
		out, err := remover.Remove(ctx, a.Target, o.dryRun)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "%s: finalizer %s %s (%s dry run)\n", name, a.Finalizer.Name, describe(out.Result), o.dryRun)
		return nil
	}
	rec := &remove.Record{
		User: auditor.User, Action: remove.ReasonForceRemoved, Target: a.Ref(), Finalizer: a.Finalizer.Name, Field: a.Field,
		Verified: a.Verified, Rule: a.Rule, Evidence: a.Evidence, Reason: o.Reason,
	}
	if a.Verified {
		rec.Action = remove.ReasonRemoved
	}
	finish := func(err error) error {
		rec.Time = metav1.Now().UTC()
		if err != nil {
			rec.Error = err.Error()
		}
		if lerr := auditor.Line(rec); lerr != nil {
			return errors.Join(err, lerr)
		}
		return err
	}
	if o.BackupDir != "" {
		path, err := remove.Backup(ctx, dyn, o.BackupDir, a.Target)
		if err != nil {
			return finish(fmt.Errorf("%s: not removed, the backup failed: %w", a.String(), err))
		}
		rec.Backup = path
	}
	out, err := remover.Remove(ctx, a.Target, remove.DryRunNone)
	rec.Result = out.Result
	if err != nil {
		return finish(err)
	}
	if out.Result == remove.Removed {
		if rec.Deleted, rec.Remaining, err = remover.Observe(ctx, a.Target); err != nil {
			fmt.Fprintf(o.ErrOut, "Warning: could not read %s after the removal: %v\n", name, err)
		}
		if rec.Event, err = auditor.Event(ctx, a.Target, rec); err != nil {
			fmt.Fprintf(o.ErrOut, "Warning: %v\n", err)
		}
	} else {
		rec.Deleted, rec.Remaining = out.Deleted, out.Remaining
	}
	state := "the object is gone"
	if !rec.Deleted {
		state = "still held by: " + strings.Join(rec.Remaining, ", ")
		if len(rec.Remaining) == 0 {
			state = "no finalizers left"
		}
	}
	fmt.Fprintf(o.Out, "%s: finalizer %s %s; %s\n", name, a.Finalizer.Name, describe(out.Result), state)
	return finish(nil)
}

func describe(r remove.Result) string {
	switch r {
	case remove.Removed:
		return "removed"
	case remove.WouldRemove:
		return "would be removed"
	case remove.AlreadyRemoved:
		return "was already removed by someone else"
	case remove.ObjectGone:
		return "is gone with its object"
	}
	return string(r)
}
