package printer

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// none is what kubectl prints for an absent value.
const none = "<none>"

// unknown and unreadable fill the columns of an object the API server cannot read.
const (
	unknown    = "<unknown>"
	unreadable = "<unreadable>"
)

// StuckTableOptions choose the columns of the stuck-object table.
type StuckTableOptions struct {
	Wide      bool
	NoHeaders bool
	// Cluster adds the CLUSTER column first: objects of several clusters.
	Cluster bool
}

// StuckTable prints NAMESPACE, RESOURCE, AGE (how long terminating), FINALIZERS and
// OWNER, and with Wide also DELETED, UID and CAUSE; with Cluster, CLUSTER first.
func StuckTable(w io.Writer, list *finalizev1alpha1.StuckObjectList, opts StuckTableOptions) error {
	headers := []string{"namespace", "resource", "age", "finalizers", "owner"}
	if opts.Cluster {
		headers = append([]string{"cluster"}, headers...)
	}
	if opts.Wide {
		headers = append(headers, "deleted", "uid", "cause")
	}
	rows := make([][]string, 0, len(list.Items))
	for i := range list.Items {
		o := &list.Items[i]
		row := []string{
			o.Target.Namespace,
			o.Target.ResourceName(),
			duration.HumanDuration(time.Duration(o.TerminatingSeconds) * time.Second),
			orNone(finalizerNames(o.Finalizers), none),
			waitedOn(o),
		}
		deleted := o.DeletionTimestamp.UTC().Format(time.RFC3339)
		if o.Unreadable != nil {
			// Its deletion and finalizers cannot be known: the API server cannot read it.
			row[2], row[3], row[4], deleted = unknown, unreadable, unknown, unknown
		}
		if opts.Cluster {
			row = append([]string{o.Cluster}, row...)
		}
		if opts.Wide {
			cause := none
			if o.Cause != nil {
				cause = o.Cause.Reason
			}
			row = append(row, deleted, orNone(string(o.Target.UID), unknown), cause)
		}
		rows = append(rows, row)
	}
	return Table(w, headers, rows, opts.NoHeaders)
}

// StuckNames prints one "kind.group/name" per object, exactly as kubectl's -o name does,
// so the list pipes into any kubectl command. An object found through a context of
// several is prefixed with that context and a tab (a context name may hold ':' and '/'):
// while IFS=$'\t' read -r ctx obj; do kubectl --context "$ctx" ...; done.
func StuckNames(w io.Writer, list *finalizev1alpha1.StuckObjectList) error {
	for i := range list.Items {
		o := &list.Items[i]
		line := o.Target.KindName()
		if o.Cluster != "" {
			line = o.Cluster + "\t" + line
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// waitedOn is the OWNER cell: who is expected to finish the deletion. A pod whose
// grace period is over waits first for the kubelet of its node, then for its
// finalizers' owners.
func waitedOn(o *finalizev1alpha1.StuckObject) string {
	if o.WaitsFor == nil {
		return owners(o.Finalizers)
	}
	if len(o.Finalizers) == 0 {
		return kubelet(o.WaitsFor.Node)
	}
	return kubelet(o.WaitsFor.Node) + "," + owners(o.Finalizers)
}

// kubelet names the kubelet a pod's deletion waits for.
func kubelet(node string) string {
	if node == "" {
		return "kubelet (pod not scheduled)"
	}
	return "kubelet on " + node
}

func finalizerNames(fs []finalizev1alpha1.Finalizer) string {
	names := make([]string, 0, len(fs))
	for _, f := range fs {
		names = append(names, f.Name)
	}
	return strings.Join(names, ",")
}

// owners lists the owner of each finalizer in the same order, each owner once.
func owners(fs []finalizev1alpha1.Finalizer) string {
	var out []string
	seen := map[string]bool{}
	for _, f := range fs {
		o := f.Owner
		switch {
		case o == "":
			o = "<unknown>"
		case f.OwnerSource == finalizev1alpha1.OwnerSourceAPIGroup:
			o += " (api group)"
		}
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return strings.Join(out, ",")
}
