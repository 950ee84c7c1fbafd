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
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/printer"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/reconcile"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/write"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

const long = `Remove named finalizers from objects stuck in Terminating: break-glass cleanup.

A finalizer stands for cleanup that has not happened: a cloud database still to delete, a
volume still attached. Removing it by hand skips that cleanup. So remove:

  * removes only the finalizers you name (--finalizer, repeatable), or every one of them
    one by one (--all-finalizers), never the whole list at once;
  * shows what will change (object, finalizer, owner, diagnosed cause, verification) and
    asks "Remove N finalizers from M objects? [y/N]" on a terminal; --yes confirms in
    scripts; without a terminal and without --yes it refuses;
  * with --policy, asks the provider of the first rule that matches each finalizer
    whether the external resource it guards is gone: Gone removes it, pinned to the
    version of the object the provider verified; Present or Unknown refuses it with the
    provider's evidence;
  * refuses removals nobody verified, unless --force-unverified and --reason say why (the
    audit then records the provider's verdict next to the reason);
  * refuses system finalizers unless --allow-system: by name, whether or not they are
    known, those with no domain (kubernetes, orphan, foregroundDeletion) and those in a
    domain Kubernetes reserves (kubernetes.io, k8s.io and their subdomains:
    kubernetes.io/pvc-protection, ...); and refuses the kubernetes finalizer of a
    namespace that may still hold objects unless --allow-stranding: those objects would
    stay in etcd;
  * guards every write: a JSON patch that tests the object's uid and the finalizer's
    position before removing it, or the namespace /finalize subresource with the
    resourceVersion just read; if the object changed, it is read and decided again, and a
    re-created namesake is refused;
  * re-reads the object afterwards and says whether it is gone or what still holds it;
  * records each removal: an Event on the object (reason FinalizerRemoved or
    FinalizerForceRemoved) and JSON audit lines on stderr or --audit-log (its intent,
    synced before the write, then its record; no write starts without the intent), and
    with --backup-dir saves the whole object first.

A pod whose deletion waits for the kubelet of its node (its grace period over by more
than --pod-grace-margin, and no kubelet confirms) is force-deleted when no finalizer is
named: DELETE with gracePeriodSeconds 0, preconditioned on its uid and resourceVersion,
one pod per write. With --policy, a rule with waitsForNode must verify that the node's
machine is gone (the Node object is gone, or its provider says so); without one,
--force-unverified --reason says why. A pod of a Ready node is never force-deleted. The
Event's reason is PodForceDeleted or PodForceDeletedUnverified.

An object the API server cannot read (its bytes in etcd cannot be decoded or decrypted:
kubectl finalize doctor shows it as Unreadable) is deleted without reading it with
--unsafe-delete, break-glass, after restoring it proved impossible: DELETE with
ignoreStoreReadErrorWithClusterBreakingPotential, which removes its key from etcd and runs
none of its finalizers. One object per run; only when a GET made now fails with the
"corrupt object" error the API server gives with the AllowUnsafeMalformedObjectDeletion
feature gate on; only when you may delete it and unsafe-delete-ignore-read-errors it
(asked by name); only with --force-unverified --reason; and only after you type the
object's name (--yes does not replace it; without a terminal, the name is read from
stdin). Its dry run sends nothing: the API server refuses dryRun with the option. The
Event's reason is UnreadableObjectDeletedUnverified. reconcile never makes one.

Nothing is removed when any requested removal is refused.`

const example = `  # Remove the finalizer of a database once the policy's provider verified it is gone
  kubectl finalize remove databases.db.example.com/orders -n team-a \
    --finalizer db.example.com/finalizer --policy policy.yaml

  # Preview, then remove after confirming, the finalizer of a database whose operator is gone
  kubectl finalize remove databases.db.example.com/orders -n team-a \
    --finalizer db.example.com/finalizer \
    --force-unverified --reason "operator uninstalled; RDS instance deleted by hand (INC-1234)"

  # Force-delete a pod whose node's machine is gone, verified by the policy's waitsForNode rule
  kubectl finalize remove pod/web-0 -n team-a --policy policy.yaml

  # What would be sent, checked by the API server and its admission webhooks
  kubectl finalize remove configmap/cfg --finalizer example.com/x --dry-run=server \
    --force-unverified --reason test

  # Delete an object the API server cannot read, once restoring it proved impossible
  kubectl finalize remove configmap/cfg -n team-a --unsafe-delete \
    --force-unverified --reason "encryption key lost with the old control plane (INC-77)"

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
	flagPolicy          = "policy"
	flagPodGraceMargin  = "pod-grace-margin"
	flagUnsafeDelete    = "unsafe-delete"
)

// unlockedBy names the flags that allow each kind of refused removal; a refusal without
// one cannot be forced.
var unlockedBy = map[finalizev1alpha1.RefusalKind]string{
	finalizev1alpha1.RefusalUnverified: "--" + flagForceUnverified + " --" + flagReason + " TEXT",
	finalizev1alpha1.RefusalTooYoung:   "--" + flagForceUnverified + " --" + flagReason + " TEXT",
	finalizev1alpha1.RefusalSystem:     "--" + flagAllowSystem,
	finalizev1alpha1.RefusalStranding:  "--" + flagAllowStranding,
	// NotOverdue, NodeReady and KubeletAlive: nothing allows a force deletion of a pod
	// whose kubelet may still stop it. MachinePresent: nor against a rule whose provider
	// said the machine runs, or whose Gone cannot be trusted; --force-unverified covers
	// only no rule, or a provider that could not tell.
}

// Options are the options of the remove command.
type Options struct {
	PrintFlags      *util.PrintFlags
	ListFlags       util.ListFlags
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
	PolicyFile      string
	PodGraceMargin  time.Duration
	UnsafeDelete    bool

	clients *client.Clients
	policy  *policy.Policy
	mapper  meta.RESTMapper
	targets []plan.Target
	dryRun  write.DryRun
	// isTerminal tells whether stdin is a terminal a person answers at.
	isTerminal func() bool

	genericiooptions.IOStreams
}

// NewOptions returns the options with their defaults.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	o := &Options{
		PrintFlags: util.NewResultPrintFlags("Output format. One of: (%s). Prints the plan with the result of each removal."), ListFlags: util.NewListFlags(),
		DryRun: string(write.DryRunNone), PodGraceMargin: plan.DefaultPodGraceMargin, IOStreams: streams,
	}
	o.isTerminal = func() bool {
		file, ok := o.In.(*os.File)
		return ok && term.IsTerminal(int(file.Fd())) //nolint:gosec // a file descriptor fits an int
	}
	return o
}

// NewCmdRemove returns the remove command.
func NewCmdRemove(f util.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := util.NewCommand(f, NewOptions(streams), &cobra.Command{
		Use:               "remove (TYPE/NAME ... | TYPE NAME ...) (--finalizer NAME ... | --all-finalizers) [flags]",
		Short:             "Remove named finalizers from stuck objects: guarded, previewed, audited",
		Long:              long,
		Example:           example,
		ValidArgsFunction: util.TerminatingCompletion(f),
	})
	_ = cmd.RegisterFlagCompletionFunc("finalizer", util.FinalizerCompletion(f))
	return cmd
}

// AddFlags binds the flags to cmd.
func (o *Options) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringSliceVar(&o.Finalizers, flagFinalizer, o.Finalizers, "Name of a finalizer to remove. Repeatable.")
	fs.BoolVar(&o.AllFinalizers, flagAllFinalizers, o.AllFinalizers, "If true, remove every finalizer of the objects, one at a time.")
	fs.BoolVar(&o.Yes, flagYes, o.Yes, "If true, do not ask for confirmation. Required when stdin is not a terminal.")
	fs.BoolVar(&o.ForceUnverified, flagForceUnverified, o.ForceUnverified, "If true, remove finalizers that no provider verified. Requires --reason.")
	fs.StringVar(&o.Reason, flagReason, o.Reason, "Why the unverified removal is safe, for the audit (Event and audit line).")
	fs.BoolVar(&o.AllowSystem, flagAllowSystem, o.AllowSystem, "If true, allow removing system finalizers: those with no domain (kubernetes, orphan, foregroundDeletion, ...) or in a domain Kubernetes reserves (kubernetes.io, k8s.io and their subdomains).")
	fs.BoolVar(&o.AllowStranding, flagAllowStranding, o.AllowStranding, "If true, allow removing a namespace's kubernetes finalizer while it may still hold objects; they stay in etcd.")
	fs.StringVar(&o.DryRun, flagDryRun, o.DryRun, `Must be "none", "server", or "client". If client strategy, only print what would be removed, without sending it. If server strategy, submit server-side request without persisting the resource.`)
	fs.Lookup(flagDryRun).NoOptDefVal = "unchanged"
	fs.StringVar(&o.BackupDir, flagBackupDir, o.BackupDir, "If set, save each object as YAML in this folder before removing anything from it.")
	fs.StringVar(&o.AuditLog, flagAuditLog, o.AuditLog, "Append the JSON audit lines to this file instead of stderr.")
	fs.StringVar(&o.PolicyFile, flagPolicy, o.PolicyFile, "A policy whose rules verify removals: a finalizer its matching rule's provider verified gone is removed without --force-unverified.")
	fs.BoolVar(&o.UnsafeDelete, flagUnsafeDelete, o.UnsafeDelete, "If true, delete the object, which the API server cannot read, without reading it (ignoreStoreReadErrorWithClusterBreakingPotential): its finalizers do not run. One object; requires --force-unverified --reason and typing its name.")
	fs.DurationVar(&o.PodGraceMargin, flagPodGraceMargin, o.PodGraceMargin, "Force-delete a pod only when its deletion still waits for its kubelet this long after its grace period ended.")
	o.PrintFlags.AddFlags(cmd)
	o.ListFlags.AddFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc(flagDryRun, cobra.FixedCompletions([]string{"none", "server", "client"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagDirname(flagBackupDir)
	_ = cmd.MarkFlagFilename(flagPolicy, "yaml", "yml", "json")
}

// Complete resolves the clients and the objects.
func (o *Options) Complete(f util.Factory, _ *cobra.Command, args []string) error {
	namespace, _, err := f.Namespace()
	if err != nil {
		return err
	}
	switch o.DryRun {
	case "none", "client", "server":
		o.dryRun = write.DryRun(o.DryRun)
	case "unchanged":
		return util.UsageErrorf(nil, `--dry-run flag without a value was specified. A value must be set: "none", "server", or "client".`)
	default:
		return util.UsageErrorf(nil, `Invalid dry-run value (%v). Must be "none", "server", or "client".`, o.DryRun)
	}
	if o.UnsafeDelete && o.PolicyFile != "" {
		return util.UsageErrorf(nil, "--%s cannot go with --%s: no provider can verify what an object nobody can read guarded", flagUnsafeDelete, flagPolicy)
	}
	objs, err := util.ParseObjectArgs(args)
	if err != nil {
		return err
	}
	if o.clients, err = f.Clients(); err != nil {
		return err
	}
	mapper, err := f.RESTMapper()
	if err != nil {
		return err
	}
	o.mapper = mapper
	if o.PolicyFile != "" {
		if o.policy, err = policy.Load(o.PolicyFile); err != nil {
			return util.UsageError(err)
		}
		util.PrintWarnings(o.ErrOut, o.policy.Warnings)
		// The rules match by the types their resources name, resolved as a pass and
		// `kubectl finalize rbac` resolve them, against this run's discovery.
		l, err := reconcile.ListedTypes(o.policy, func() ([]scan.Type, []finalizev1alpha1.IncompleteResource, error) {
			return scan.DiscoverTypes(o.clients.Discovery)
		})
		var unresolved *reconcile.UnresolvedError
		switch {
		case errors.As(err, &unresolved):
			return util.UsageError(fmt.Errorf("%s: %w", o.PolicyFile, err))
		case err != nil:
			return err
		}
		util.PrintWarnings(o.ErrOut, append(l.Resolved, l.Unserved...))
		o.policy = l.Policy
	}
	resolved, err := util.ResolveObjects(mapper, namespace, objs)
	if err != nil {
		return err
	}
	for _, obj := range resolved {
		o.targets = append(o.targets, plan.Target{Ref: obj})
	}
	return nil
}

// Validate rejects bad flag combinations.
func (o *Options) Validate() error {
	if o.UnsafeDelete {
		if err := o.validateUnsafe(); err != nil {
			return err
		}
	}
	switch {
	case len(o.Finalizers) == 0 && !o.AllFinalizers && !o.forceDelete() && !o.UnsafeDelete:
		return util.UsageErrorf(nil, "name the finalizers to remove with --%s, or give --%s", flagFinalizer, flagAllFinalizers)
	case o.PodGraceMargin <= 0:
		return util.UsageErrorf(nil, "--%s must be positive, got %s", flagPodGraceMargin, o.PodGraceMargin)
	case len(o.Finalizers) > 0 && o.AllFinalizers:
		return util.UsageErrorf(nil, "--%s and --%s cannot be used together", flagFinalizer, flagAllFinalizers)
	case o.ForceUnverified && strings.TrimSpace(o.Reason) == "":
		what := "removing unverified finalizers"
		if o.forceDelete() {
			what = "force-deleting the pods unverified"
		}
		return util.UsageErrorf(nil, "--%s requires --%s: say why %s is safe, for the audit", flagForceUnverified, flagReason, what)
	case o.Reason != "" && !o.ForceUnverified:
		return util.UsageErrorf(nil, "--%s only applies with --%s", flagReason, flagForceUnverified)
	}
	for _, f := range o.Finalizers {
		if f == "" {
			return util.UsageErrorf(nil, "--%s must not be empty", flagFinalizer)
		}
	}
	if err := o.PrintFlags.Validate(); err != nil {
		return err
	}
	return o.ListFlags.Validate()
}

// validateUnsafe rejects what --unsafe-delete cannot go with.
func (o *Options) validateUnsafe() error {
	switch {
	case len(o.Finalizers) > 0 || o.AllFinalizers:
		return util.UsageErrorf(nil, "--%s deletes the whole object, which nobody can read, so no finalizer of it can be named: drop --%s and --%s", flagUnsafeDelete, flagFinalizer, flagAllFinalizers)
	case len(o.targets) != 1:
		return util.UsageErrorf(nil, "--%s deletes one object per run, got %d: name one (TYPE/NAME)", flagUnsafeDelete, len(o.targets))
	case !o.ForceUnverified || strings.TrimSpace(o.Reason) == "":
		return util.UsageErrorf(nil, "--%s requires --%s and --%s: say why deleting the object without its finalizers, after restoring it proved impossible, is safe, for the audit", flagUnsafeDelete, flagForceUnverified, flagReason)
	}
	return nil
}

// forceDelete reports whether the request is the force deletion of pods: no finalizer
// named, and every object a pod.
func (o *Options) forceDelete() bool {
	if len(o.Finalizers) > 0 || o.AllFinalizers || len(o.targets) == 0 {
		return false
	}
	for _, t := range o.targets {
		if !t.Resource.IsPods() {
			return false
		}
	}
	return true
}

// Run plans, previews, confirms and removes.
func (o *Options) Run(ctx context.Context) error {
	opts, done := o.ListFlags.ScanOptions(o.ErrOut)
	if o.forceDelete() && o.PodGraceMargin < plan.MinPodGraceMargin {
		o.warn(fmt.Errorf("--%s %s is below %s: a pod is force-deleted %s after its grace period, when a kubelet that still reports may not have stopped its containers yet",
			flagPodGraceMargin, o.PodGraceMargin, plan.MinPodGraceMargin, o.PodGraceMargin))
	}
	audit := &write.Audit{Path: o.AuditLog, Stderr: o.ErrOut, Warn: o.warn}
	defer audit.Close()
	out, err := remove.Run(ctx, o.clients, remove.Config{
		Targets: o.targets, Finalizers: o.Finalizers, All: o.AllFinalizers, ForceDelete: o.forceDelete(), UnsafeDelete: o.UnsafeDelete,
		Policy: o.policy, Mapper: o.mapper, Scan: opts, ScanDone: done,
		Options: plan.Options{ForceUnverified: o.ForceUnverified, Reason: o.Reason, AllowSystem: o.AllowSystem, AllowStranding: o.AllowStranding,
			PodGraceMargin: o.PodGraceMargin, UnsafeDelete: o.UnsafeDelete},
		DryRun: o.dryRun, Audit: audit, BackupDir: o.BackupDir, Confirm: o.previewAndConfirm, OnRecord: o.report, Warn: o.warn,
	})
	var targets *remove.TargetsError
	switch {
	case errors.As(err, &targets):
		fmt.Fprintln(o.ErrOut, "Nothing was removed.")
		return err
	case out == nil:
		return err
	case out.Stopped == remove.Refused:
		return o.refused(out.Plan)
	case out.Stopped == remove.Declined && o.UnsafeDelete:
		// A script that goes on after it must not take it for a deletion.
		fmt.Fprintln(o.ErrOut, "Nothing was removed.")
		return fmt.Errorf("the unsafe deletion was not confirmed: nothing was deleted")
	case out.Stopped == remove.Declined:
		fmt.Fprintln(o.ErrOut, "Nothing was removed.")
		return nil
	}
	return errors.Join(err, o.printPlan(out.Plan))
}

func (o *Options) warn(err error) { fmt.Fprintf(o.ErrOut, "Warning: %v\n", err) }

// refused says which requested removals were refused, and which flag would allow each.
func (o *Options) refused(api *finalizev1alpha1.RemovalPlan) error {
	var lines []string
	needsFlag := true
	for _, r := range api.Refusals {
		line := fmt.Sprintf("  %s: finalizer %s: %s", r.Target, r.Finalizer, r.Message)
		switch r.Action {
		case finalizev1alpha1.ActionForceDelete:
			line = fmt.Sprintf("  %s: force deletion: %s", r.Target, r.Message)
		case finalizev1alpha1.ActionUnsafeDelete:
			line = fmt.Sprintf("  %s: unsafe deletion: %s", r.Target, r.Message)
		}
		if flag := unlockedBy[r.Kind]; flag != "" {
			line += "; to remove it anyway: " + flag
		} else {
			needsFlag = false
		}
		lines = append(lines, line)
	}
	fmt.Fprintln(o.ErrOut, "Nothing was removed.")
	if err := o.printPlan(api); err != nil {
		return err
	}
	err := fmt.Errorf("refusing %d of %d requested removals:\n%s", len(api.Refusals), len(api.Refusals)+len(api.Actions), strings.Join(lines, "\n"))
	if needsFlag {
		return util.UsageError(err)
	}
	return err
}

// previewAndConfirm shows what will be removed, then asks unless this is a dry run or
// --yes confirmed already.
func (o *Options) previewAndConfirm(api *finalizev1alpha1.RemovalPlan) (bool, error) {
	if err := o.preview(api); err != nil {
		return false, err
	}
	if o.dryRun != write.DryRunNone {
		return true, nil
	}
	for _, a := range api.Actions {
		if a.Action == finalizev1alpha1.ActionUnsafeDelete {
			// --yes is not enough: the name, typed.
			return o.confirmByName(a)
		}
	}
	if o.Yes {
		return true, nil
	}
	return o.confirm(api)
}

func (o *Options) preview(api *finalizev1alpha1.RemovalPlan) error {
	suffix := ""
	switch o.dryRun {
	case write.DryRunClient:
		suffix = " (dry run)"
	case write.DryRunServer:
		suffix = " (server dry run)"
	}
	fmt.Fprintf(o.ErrOut, "About to %s%s:\n", what(api), suffix)
	return printer.Removals(o.ErrOut, api.Actions, printer.RemovalTableOptions{})
}

// what says what the plan does: "remove 2 finalizers from 1 object", "force-delete 1
// pod", or both.
func what(api *finalizev1alpha1.RemovalPlan) string {
	pods, finalizers, unsafe := 0, 0, 0
	objects := map[string]bool{}
	for _, a := range api.Actions {
		switch a.Action {
		case finalizev1alpha1.ActionForceDelete:
			pods++
			continue
		case finalizev1alpha1.ActionUnsafeDelete:
			unsafe++
			continue
		}
		finalizers++
		objects[string(a.Target.UID)] = true
	}
	var parts []string
	if pods > 0 {
		parts = append(parts, "force-delete "+words.Count(pods, "pod"))
	}
	if unsafe > 0 {
		parts = append(parts, "delete "+words.Count(unsafe, "object")+" the API server cannot read, without reading it")
	}
	if finalizers > 0 || pods == 0 && unsafe == 0 {
		parts = append(parts, fmt.Sprintf("remove %s from %s", words.Count(finalizers, "finalizer"), words.Count(len(objects), "object")))
	}
	return strings.Join(parts, " and ")
}

// confirm asks on a terminal; default No. Without a terminal it refuses.
func (o *Options) confirm(api *finalizev1alpha1.RemovalPlan) (bool, error) {
	if !o.isTerminal() {
		act := "remove finalizers"
		if !strings.Contains(what(api), "finalizer") {
			act = "force-delete pods"
		}
		return false, util.UsageError(fmt.Errorf("refusing to %s without confirmation: stdin is not a terminal; pass --yes to confirm", act))
	}
	w := what(api)
	fmt.Fprintf(o.ErrOut, "%s%s? [y/N]: ", strings.ToUpper(w[:1]), w[1:])
	answer, err := bufio.NewReader(o.In).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	answer = strings.ToLower(strings.TrimSpace(answer))
	return answer == "y" || answer == "yes", nil
}

// confirmByName asks for the name of the object an unsafe deletion deletes, typed: on a
// terminal, or read from stdin without one. Anything else keeps it.
func (o *Options) confirmByName(a finalizev1alpha1.Removal) (bool, error) {
	fmt.Fprintf(o.ErrOut, "This deletes %s without reading it: none of its finalizers run, and what they guard stays as it is. It cannot be undone.\n", a.Target)
	fmt.Fprintf(o.ErrOut, "Type the object's name (%s) to delete it: ", a.Target.Name)
	answer, err := bufio.NewReader(o.In).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	if strings.TrimSpace(answer) != a.Target.Name {
		fmt.Fprintf(o.ErrOut, "The name typed is not %q.\n", a.Target.Name)
		return false, nil
	}
	return true, nil
}

// report prints what one removal did, unless the output is the plan.
func (o *Options) report(rec *write.Record) {
	if rec.Error != "" || !o.PrintFlags.Default() {
		return
	}
	name := rec.Target.String()
	if rec.Action == plan.ReasonUnreadableObjectDeletedUnverified || rec.Action == plan.ReasonUnreadableObjectDeleted {
		o.reportUnsafe(rec)
		return
	}
	if rec.Node != "" || rec.Finalizer == "" {
		o.reportForce(rec)
		return
	}
	if o.dryRun != write.DryRunNone {
		fmt.Fprintf(o.Out, "%s: finalizer %s %s (%s dry run)\n", name, rec.Finalizer, describe(rec.Result), o.dryRun)
		return
	}
	state := "the object is gone"
	if !rec.Deleted {
		state = "still held by: " + strings.Join(rec.Remaining, ", ")
		if len(rec.Remaining) == 0 {
			state = "no finalizers left"
		}
	}
	fmt.Fprintf(o.Out, "%s: finalizer %s %s; %s\n", name, rec.Finalizer, describe(rec.Result), state)
}

// reportUnsafe prints what one unsafe deletion did.
func (o *Options) reportUnsafe(rec *write.Record) {
	name := rec.Target.String()
	switch rec.Result {
	case write.WouldRemove:
		sent := "nothing was sent"
		if o.dryRun == write.DryRunServer {
			sent = "nothing was sent: the API server refuses dryRun with ignoreStoreReadErrorWithClusterBreakingPotential, so this is what a GET made now proved, not what the DELETE would answer"
		}
		fmt.Fprintf(o.Out, "%s: would be deleted without reading it (%s dry run: %s)\n", name, o.dryRun, sent)
		return
	case write.ObjectGone:
		fmt.Fprintf(o.Out, "%s: was gone already\n", name)
		return
	}
	state := "the object is gone"
	if !rec.Deleted {
		state = "it could not be read after the deletion: kubectl get it"
	}
	fmt.Fprintf(o.Out, "%s: deleted without reading it; %s\n", name, state)
}

// reportForce prints what one force deletion did.
func (o *Options) reportForce(rec *write.Record) {
	name := rec.Target.String()
	what := "force-deleted"
	switch rec.Result {
	case write.WouldRemove:
		fmt.Fprintf(o.Out, "%s: would be force-deleted (%s dry run)\n", name, o.dryRun)
		return
	case write.ObjectGone:
		what = "was gone already"
	}
	state := "the pod is gone"
	switch {
	case rec.Deleted:
	case len(rec.Remaining) > 0:
		state = "still held by its finalizers: " + strings.Join(rec.Remaining, ", ")
	default:
		state = "its state is unknown: it could not be read after the deletion (kubectl get it)"
	}
	fmt.Fprintf(o.Out, "%s: %s; %s\n", name, what, state)
}

// printPlan prints the plan with -o json|yaml, with the result of each removal.
func (o *Options) printPlan(api *finalizev1alpha1.RemovalPlan) error {
	if o.PrintFlags.Default() {
		return nil
	}
	return o.PrintFlags.PrintObject(api, o.Out)
}

func describe(r write.Result) string {
	switch r {
	case write.Removed:
		return "removed"
	case write.WouldRemove:
		return "would be removed"
	case write.AlreadyRemoved:
		return "was already removed by someone else"
	case write.ObjectGone:
		return "is gone with its object"
	}
	return string(r)
}
