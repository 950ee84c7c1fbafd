package printer

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/sets"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// maxNamesPerLine bounds the objects named on one line of a root cause; -o json lists
// them all.
const maxNamesPerLine = 8

func age(seconds int64) string {
	return duration.HumanDuration(time.Duration(seconds) * time.Second)
}

// RootCauses prints a diagnosis grouped by root cause: each root cause said once, the
// objects it explains listed compactly by namespace, one example of what it does to
// them, and the next safe step.
func RootCauses(w io.Writer, d *finalizev1alpha1.Diagnosis) error {
	var b strings.Builder
	rootCauses(&b, d)
	if len(d.Items) > 0 {
		b.WriteString("\nThe whole chain behind one object: kubectl finalize doctor TYPE/NAME\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FleetRootCauses prints the diagnosis of several clusters: each cluster's root causes
// under its context, then the root causes found in more than one cluster, each once.
func FleetRootCauses(w io.Writer, d *finalizev1alpha1.Diagnosis, clusters []string) error {
	var b strings.Builder
	unread := map[string]string{}
	for _, in := range d.Incomplete {
		if in.Reason == finalizev1alpha1.ReasonClusterUnreachable {
			unread[in.Cluster] = in.Message
		}
	}
	for i, c := range clusters {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "== context %s ==\n", c)
		if msg, ok := unread[c]; ok {
			fmt.Fprintf(&b, "Not read: %s\n", msg)
			continue
		}
		sub := &finalizev1alpha1.Diagnosis{}
		for _, it := range d.Items {
			if it.Cluster == c {
				sub.Items = append(sub.Items, it)
			}
		}
		for _, rc := range d.RootCauses {
			if rc.Cluster == c {
				sub.RootCauses = append(sub.RootCauses, rc)
			}
		}
		if len(sub.Items) == 0 {
			b.WriteString("No stuck objects found.\n")
			continue
		}
		rootCauses(&b, sub)
	}
	if len(d.AcrossClusters) > 0 {
		fmt.Fprintf(&b, "\nAcross clusters: %s found in more than one cluster.\n", words.Count(len(d.AcrossClusters), "root cause"))
		for i := range d.AcrossClusters {
			r := &d.AcrossClusters[i]
			fmt.Fprintf(&b, "\n%d. %s: %s %s, in %s (%s), %s\n", i+1, r.Reason, r.Subject.Kind, subjectName(r.Subject),
				words.Count(len(r.Clusters), "cluster"), strings.Join(r.Clusters, ", "), words.Count(r.Objects, "object"))
			fmt.Fprintf(&b, "   Next: %s\n", r.NextStep)
		}
	}
	if len(d.Items) > 0 {
		b.WriteString("\nThe whole chain behind one object: kubectl finalize --context CONTEXT doctor TYPE/NAME\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// unreadableIn is the object the API server cannot read that root cause r explains (an
// object nobody can read is its own root cause), or nil.
func unreadableIn(d *finalizev1alpha1.Diagnosis, r *finalizev1alpha1.RootCause) *finalizev1alpha1.StuckObject {
	for i := range d.Items {
		if it := &d.Items[i]; it.Unreadable != nil && slices.Contains(r.Objects, it.Target) {
			return it
		}
	}
	return nil
}

// rootCauses writes a diagnosis grouped by root cause on b.
func rootCauses(b *strings.Builder, d *finalizev1alpha1.Diagnosis) {
	items := map[types.UID]*finalizev1alpha1.StuckObject{}
	namespaces := sets.New[string]()
	clusterScoped := 0
	for i := range d.Items {
		if d.Items[i].Unreadable == nil {
			items[d.Items[i].Target.UID] = &d.Items[i]
		}
		switch t := d.Items[i].Target; {
		case t.Namespace != "":
			namespaces.Insert(t.Namespace)
		case t.Resource == "namespaces" && t.APIVersion == "v1":
			namespaces.Insert(t.Name)
		default:
			clusterScoped++
		}
	}
	// Where they are: in namespaces, cluster-scoped, or both.
	var where string
	switch {
	case namespaces.Len() == 0:
		where = ", all cluster-scoped"
	case clusterScoped > 0:
		where = fmt.Sprintf(" in %s and %d cluster-scoped", words.Count(namespaces.Len(), "namespace"), clusterScoped)
	default:
		where = " in " + words.Count(namespaces.Len(), "namespace")
	}
	fmt.Fprintf(b, "%s%s, explained by %s.\n", words.Count(len(d.Items), "stuck object"), where, words.Count(len(d.RootCauses), "root cause"))
	for i := range d.RootCauses {
		r := &d.RootCauses[i]
		fmt.Fprintf(b, "\n%d. %s: %s %s\n", i+1, r.Reason, r.Subject.Kind, subjectName(r.Subject))
		fmt.Fprintf(b, "   %s\n", r.Message)
		if u := unreadableIn(d, r); u != nil {
			// The object is its own root cause; it has no uid, no age, no finalizers.
			if u.Cause != nil {
				fmt.Fprintf(b, "   %s\n", u.Cause.Message)
			}
			fmt.Fprintf(b, "   Next: %s\n", r.NextStep)
			continue
		}
		verb := "wait"
		if len(r.Objects) == 1 {
			verb = "waits"
		}
		var oldest int64
		var example *finalizev1alpha1.StuckObject
		for _, ref := range r.Objects {
			if o := items[ref.UID]; o != nil {
				oldest = max(oldest, o.TerminatingSeconds)
				if example == nil && o.Cause != nil && o.Cause.Reason == r.Reason {
					example = o
				}
			}
		}
		fmt.Fprintf(b, "   %s %s on it, the oldest terminating for %s:\n", words.Count(len(r.Objects), "object"), verb, age(oldest))
		for _, line := range ByNamespace(r.Objects) {
			fmt.Fprintf(b, "     %s\n", line)
		}
		if example != nil {
			fmt.Fprintf(b, "   For %s: %s\n", example.Target, example.Cause.Message)
		}
		fmt.Fprintf(b, "   Next: %s\n", r.NextStep)
	}
}

// ByNamespace lists objects one type and namespace a line, the way kubectl is typed
// ("databases.db.example.com -n team-a (3): orders, users, billing"), cluster-scoped
// types last, at most maxNamesPerLine names a line.
func ByNamespace(refs []finalizev1alpha1.ObjectReference) []string {
	type group struct{ namespace, resource string }
	names := map[group][]string{}
	var order []group
	for _, ref := range refs {
		g := group{ref.Namespace, ref.GroupResource().String()}
		if _, ok := names[g]; !ok {
			order = append(order, g)
		}
		names[g] = append(names[g], ref.Name)
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if (a.namespace == "") != (b.namespace == "") {
			return b.namespace == ""
		}
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		return a.resource < b.resource
	})
	lines := make([]string, 0, len(order))
	for _, g := range order {
		list := names[g]
		shown := list
		if len(shown) > maxNamesPerLine {
			shown = shown[:maxNamesPerLine]
		}
		where := g.resource
		if g.namespace != "" {
			where += " -n " + g.namespace
		}
		line := fmt.Sprintf("%s (%d): %s", where, len(list), strings.Join(shown, ", "))
		if more := len(list) - len(shown); more > 0 {
			line += fmt.Sprintf(", and %d more (-o json lists them all)", more)
		}
		lines = append(lines, line)
	}
	return lines
}

func subjectName(s finalizev1alpha1.Subject) string {
	if s.Namespace != "" {
		return s.Namespace + "/" + s.Name
	}
	return s.Name
}

// Tree prints why the target of a diagnosis is stuck: its finalizers, its cause and next
// step, and below it what it waits for, recursively.
func Tree(w io.Writer, d *finalizev1alpha1.Diagnosis) error {
	items := map[types.UID]*finalizev1alpha1.StuckObject{}
	for i := range d.Items {
		if d.Items[i].Unreadable == nil {
			items[d.Items[i].Target.UID] = &d.Items[i]
		}
	}
	if len(d.Items) == 0 {
		return nil
	}
	var b strings.Builder
	tree(&b, items, &d.Items[0], "", "", sets.New[types.UID]())
	if len(d.RootCauses) > 0 {
		b.WriteString("\nRoot causes:\n")
		for i := range d.RootCauses {
			r := &d.RootCauses[i]
			fmt.Fprintf(&b, "  %s: %s %s: %s\n    Next: %s\n", r.Reason, r.Subject.Kind, subjectName(r.Subject), r.Message, r.NextStep)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tree writes one object: first is the prefix of its own line, rest of the lines below.
func tree(b *strings.Builder, items map[types.UID]*finalizev1alpha1.StuckObject, o *finalizev1alpha1.StuckObject, first, rest string, seen sets.Set[types.UID]) {
	if o.Unreadable != nil {
		fmt.Fprintf(b, "%s%s  (the API server cannot read it: whether it is being deleted, and by which finalizers, is unknown)\n", first, o.Target)
		if o.Cause != nil {
			fmt.Fprintf(b, "%s  %s: %s\n", rest, o.Cause.Reason, o.Cause.Message)
			if o.Cause.NextStep != "" {
				fmt.Fprintf(b, "%s  next: %s\n", rest, o.Cause.NextStep)
			}
		}
		return
	}
	fmt.Fprintf(b, "%s%s  (terminating for %s)\n", first, o.Target, age(o.TerminatingSeconds))
	if seen.Has(o.Target.UID) {
		fmt.Fprintf(b, "%s  (shown above)\n", rest)
		return
	}
	seen.Insert(o.Target.UID)
	var fins []string
	for _, f := range o.Finalizers {
		desc := f.Name
		switch {
		case f.Owner != "":
			desc += " (owner: " + f.Owner
			if f.AddedBy != "" && f.AddedBy != f.Owner {
				desc += ", added by " + f.AddedBy
			}
			desc += ")"
		case f.AddedBy != "":
			desc += " (owner unknown, added by " + f.AddedBy + ")"
		}
		fins = append(fins, desc)
	}
	var children []finalizev1alpha1.Blocker
	if o.Cause != nil {
		children = o.Cause.Blockers
	}
	bar := "│ "
	if len(children) == 0 {
		bar = "  "
	}
	fmt.Fprintf(b, "%s%sfinalizers: %s\n", rest, bar, strings.Join(fins, ", "))
	if o.Cause != nil {
		fmt.Fprintf(b, "%s%s%s: %s\n", rest, bar, o.Cause.Reason, o.Cause.Message)
		if o.Cause.NextStep != "" {
			fmt.Fprintf(b, "%s%snext: %s\n", rest, bar, o.Cause.NextStep)
		}
	}
	for i, c := range children {
		last := i == len(children)-1
		branch, indent := "├── ", "│   "
		if last {
			branch, indent = "└── ", "    "
		}
		if child := items[c.Target.UID]; c.Stuck && child != nil {
			tree(b, items, child, rest+branch, rest+indent, seen)
			continue
		}
		line := c.Target.Kind + " " + subjectName(finalizev1alpha1.Subject{Namespace: c.Target.Namespace, Name: c.Target.Name})
		if c.Message != "" {
			line += ": " + c.Message
		}
		fmt.Fprintf(b, "%s%s%s\n", rest, branch, line)
	}
}
