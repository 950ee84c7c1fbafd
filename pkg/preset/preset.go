// Package preset knows where well-known operators keep the identity of the external
// resource behind their finalizers, and which settings mean that resource is meant to
// outlive the object. A policy rule selects a preset by name; its identity values become
// {identity.NAME} in templates and the identity of an exec provider's request, and its
// retain and hold signals are read before any provider is asked. The doctor uses them to
// name what to look up.
package preset

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
)

// Preset is what one operator does with its finalizers.
type Preset struct {
	Name string
	// Operator names the project, for people.
	Operator string
	// Finalizers are the finalizers it handles, names or globs.
	Finalizers []string
	// Identity are the values that name the external resource.
	Identity []Identity
	// Retain are the settings that make the external resource outlive the object.
	Retain []Signal
	// Hold are the settings that forbid acting for the operator: it is paused, or the
	// resource is read-only to it.
	Hold []Signal
	// Warnings are what a person must know before trusting a verification.
	Warnings []string
	// NeedsNamespace: a signal reads the annotations of the object's namespace.
	NeedsNamespace bool
	// Shared, if set, says which finalizers stand for a resource shared by every object
	// that carries them (an ingress group's load balancer): it is gone only when no live
	// object carries the finalizer any more.
	Shared func(finalizer string) bool
	// Managers are the field managers the operator's clients write as (names or globs,
	// pkg/glob), each from the operator's source: an identity value is the operator's
	// only when every manager that owns its field is one of them. A rule may name others
	// (operatorManagers) where a deployment's differ.
	Managers []string
	// Families, when set, are the kinds of operator the preset covers, told apart by the
	// API group of the object, each naming its external resource its own way: the
	// identity of an object is its family's, and an object of no family the preset knows
	// has none (IdentityUnusable says why), whatever its annotations hold.
	Families []Family

	finalizers glob.Set
	managers   *Managers
}

// Family is one kind of operator among those a preset covers: the API groups of its
// objects, and where it takes the identity of the external resource from.
type Family struct {
	Name string
	// Groups are the API groups of its objects, names or globs.
	Groups []string
	// Identity are the values its operator names the external resource by.
	Identity []Identity
	// Except are API groups that Groups match and that are not of the family.
	Except []string
	// Unknown, if set, says why the preset cannot tell where this family's operator takes
	// the identity from: its objects are never verified through the preset.
	Unknown string
	// Uses says, for people, where the operator takes the identity from.
	Uses string
	// Scope, if set, reads where the operator puts the external resource beyond its
	// identity, which a rule cannot see (provider-kubernetes: the cluster its
	// ProviderConfig applies to). A Gone counts only when a control of the same scope
	// answered Present: a rule that asks one cluster vouches for no other (ScopeOf).
	Scope func(o *unstructured.Unstructured) string
	// ScopeRecord, if set, is where the operator records the scope it last acted in.
	// Scope reads the spec, which people write: changed after the operator stopped, it
	// names a scope the operator never put the resource in. The scope counts only when
	// the operator's record holds it too (RecordedScope).
	ScopeRecord *ScopeRecord
	// Instance, if set, is the field of status where the operator records the UID of the
	// object it last observed as the resource (provider-kubernetes:
	// status.atProvider.manifest.metadata.uid). A live control vouches for its scope only
	// when the provider found that very object (InstanceOf): a namesake that happens to
	// exist where the rule asks shows nothing about where the operator put it.
	Instance []string

	groups glob.Set
}

// ScopeRecord is an object in which an operator records the scope it last acted in for
// one of its objects (crossplane-runtime's ProviderConfigUsage: the ProviderConfig a
// managed resource was last connected through, named by its UID).
type ScopeRecord struct {
	// Kind names the record, for people.
	Kind string
	// Resource is the record's type, as resource.group, for an object of API group group.
	Resource func(group string) string
	// Fields are the record's fields whose writer is checked.
	Fields [][]string
	// Unmoved: the record is made once and changed only when the object moves (its
	// generation is 1 until then); a moved object's scope is not used.
	Unmoved bool
	// Reported, if set, is when the operator last reported on the resource after acting
	// on it in a scope (Crossplane: the Ready condition's last transition, to Available,
	// Unavailable or Deleting, which only an observe that found the resource sets), and
	// ReportedField the field it is read from, whose writer is checked. A record made
	// after that report was made again since (a usage the provider deletes when its owner
	// reference is gone, and makes anew at the next connect, perhaps of another scope),
	// and what the operator recorded of the resource may be from another scope.
	Reported      func(o *unstructured.Unstructured) (at time.Time, why string)
	ReportedField []string
	// read reads the scope the record holds, in Scope's words, or says why it holds none
	// for o.
	read func(rec, o *unstructured.Unstructured) (string, string)
}

// RecordRef names the object that records an object's scope.
type RecordRef struct {
	// Kind names it, for people; Resource is its type, as resource.group.
	Kind, Resource  string
	Namespace, Name string
}

// String names the record for people: "ProviderConfigUsage team-a/1234-...".
func (r RecordRef) String() string {
	if r.Namespace != "" {
		return r.Kind + " " + r.Namespace + "/" + r.Name
	}
	return r.Kind + " " + r.Name
}

// ScopeRecordOf is where o's operator records the scope it last acted in for o (a
// ProviderConfigUsage named by o's UID, in o's namespace); false when o's family keeps
// no such record.
func (p *Preset) ScopeRecordOf(o *unstructured.Unstructured) (RecordRef, bool) {
	f := p.familyOf(o)
	if f == nil || f.Scope == nil || f.ScopeRecord == nil {
		return RecordRef{}, false
	}
	return RecordRef{Kind: f.ScopeRecord.Kind, Resource: f.ScopeRecord.Resource(o.GroupVersionKind().Group), Namespace: o.GetNamespace(), Name: string(o.GetUID())}, true
}

// ScopeRecordType is the type, as resource.group, of the records that objects of API
// group group keep their scope in (ScopeRecordOf), and their kind; false when they keep
// none.
func (p *Preset) ScopeRecordType(group string) (resource, kind string, ok bool) {
	for i := range p.Families {
		f := &p.Families[i]
		if f.groups.Match(group) && !slices.Contains(f.Except, group) {
			if f.Scope == nil || f.ScopeRecord == nil {
				return "", "", false
			}
			return f.ScopeRecord.Resource(group), f.ScopeRecord.Kind, true
		}
	}
	return "", "", false
}

// RecordedScope is where o's operator last put its resource (ScopeOf's words), read from
// its record rec (ScopeRecordOf; nil when there is none), and why it cannot be used: there
// is no record (the operator never acted on o, or the record was deleted with its
// owner's dependents), the record is not o's, its writer is not the operator (unless
// anyWriter), or the spec names another scope (changed after the operator last acted:
// the resource it made is where the record says, and its restart would act on the
// other). Without a ScopeRecord the spec's scope is returned.
func (p *Preset) RecordedScope(o, rec *unstructured.Unstructured, operator *Managers, anyWriter bool) (string, string) {
	f := p.familyOf(o)
	if f == nil || f.Scope == nil {
		return "", ""
	}
	spec := f.Scope(o)
	if f.ScopeRecord == nil {
		return spec, ""
	}
	ref, _ := p.ScopeRecordOf(o)
	if rec == nil {
		return "", fmt.Sprintf("its operator has not recorded where it put the resource (no %s): it may never have acted on this object, so the spec's %s is not known to be where the resource is",
			ref, spec)
	}
	if c := metav1.GetControllerOfNoCopy(rec); c == nil || c.UID != o.GetUID() {
		return "", fmt.Sprintf("%s is not this object's record: its controller is not uid %s", ref, o.GetUID())
	}
	// The operator records the scope before it acts there, and the resource it observed
	// only when it finds one: a record changed since it was made says the object was
	// moved, and what the operator recorded of its resource may have been observed in the
	// scope it was moved from (the API server counts each change of the record's content
	// in its generation).
	if f.ScopeRecord.Unmoved && rec.GetGeneration() != 1 {
		return "", fmt.Sprintf("%s changed since it was made (generation %d): the object was moved between scopes, and what its operator recorded of the resource may be from the one it left",
			ref, rec.GetGeneration())
	}
	if f.ScopeRecord.Reported != nil {
		at, why := f.ScopeRecord.Reported(o)
		if why == "" && !anyWriter {
			why = p.writtenByOperator(o.GetManagedFields(), f.ScopeRecord.ReportedField, strings.Join(f.ScopeRecord.ReportedField, "."), operator)
		}
		made := rec.GetCreationTimestamp()
		switch {
		case why != "":
			return "", fmt.Sprintf("%s cannot be dated against its operator's last report on the resource: %s", ref, why)
		case made.After(at):
			// No allowance for the two clocks (the API server's, the operator's): a
			// successful reconcile is no proof that the report came after the record
			// (under managementPolicies [Observe, Delete] one that found nothing
			// succeeds), and a record made again in the second after a report would pass.
			// A never-moved object whose operator's clock lags across a second boundary
			// is Unknown until its Ready next changes.
			return "", fmt.Sprintf("%s was made at %s, after its operator last reported on the resource (%s, %s): it was made again since, perhaps of another scope, and what its operator recorded of the resource may be from the one before",
				ref, made.UTC().Format(time.RFC3339), strings.Join(f.ScopeRecord.ReportedField, "."), at.UTC().Format(time.RFC3339))
		}
	}
	if !anyWriter {
		for _, field := range f.ScopeRecord.Fields {
			if why := p.writtenByOperator(rec.GetManagedFields(), field, strings.Join(field, ".")+" of "+ref.String(), operator); why != "" {
				return "", why
			}
		}
	}
	recorded, why := f.ScopeRecord.read(rec, o)
	switch {
	case why != "":
		return "", fmt.Sprintf("%s: %s", ref, why)
	case recorded != spec:
		return "", fmt.Sprintf("the spec names %s, but its operator last acted through %s (%s): the spec changed since, so the resource it made is where %s puts it, and a restarted operator would act through %s",
			spec, recorded, ref, recorded, spec)
	}
	return recorded, ""
}

// writtenByOperator says why field of an object whose managedFields are managed, shown
// as what, is not the operator's alone, or "".
func (p *Preset) writtenByOperator(managed []metav1.ManagedFieldsEntry, field []string, what string, operator *Managers) string {
	if operator == nil {
		operator = p.managers
	}
	writers := fieldWriters(managed, field)
	switch {
	case len(writers) == 0:
		return "no managedFields entry says who wrote " + what + ", so it is not known to be the operator's"
	case operator == nil || len(operator.Patterns) == 0:
		return fmt.Sprintf("%s was last written by %s, and the field managers of the operator of preset %s are not known: name them in the rule's operatorManagers",
			what, strings.Join(writers, ", "), p.Name)
	}
	for _, w := range writers {
		if !operator.Match(w) {
			return fmt.Sprintf("%s was last written by %s, not by the operator, whose field managers are %s (as %s names them)", what, w, operator, operator.By)
		}
	}
	return ""
}

// InstanceOf is the UID of the object o's operator last observed as its resource, from
// its record (Family.Instance), and why it cannot be used ("" when it can): there is
// none, or its writer is not the operator (unless anyWriter).
func (p *Preset) InstanceOf(o *unstructured.Unstructured, operator *Managers, anyWriter bool) (string, string) {
	f := p.familyOf(o)
	if f == nil || len(f.Instance) == 0 {
		return "", "its operator records no UID of the object it acted on"
	}
	from := strings.Join(f.Instance, ".")
	uid, _, _ := unstructured.NestedString(o.Object, f.Instance...)
	if uid == "" {
		return "", from + " is not set: its operator has not recorded the object it acted on"
	}
	if anyWriter {
		return uid, ""
	}
	if why := p.writtenByOperator(o.GetManagedFields(), f.Instance, from, operator); why != "" {
		return "", why
	}
	return uid, ""
}

// ScopeOf is where o's operator puts its external resource beyond its identity, for its
// family's Scope; false when the family has none.
func (p *Preset) ScopeOf(o *unstructured.Unstructured) (string, bool) {
	if f := p.familyOf(o); f != nil && f.Scope != nil {
		return f.Scope(o), true
	}
	return "", false
}

// familyOf is the family of the object's API group, or nil.
func (p *Preset) familyOf(o *unstructured.Unstructured) *Family {
	group := o.GroupVersionKind().Group
	for i := range p.Families {
		if p.Families[i].groups.Match(group) && !slices.Contains(p.Families[i].Except, group) {
			return &p.Families[i]
		}
	}
	return nil
}

// identityFor are the identity values that name the external resource of o: its
// family's, or the preset's when it has no families; nil for an object of no family.
func (p *Preset) identityFor(o *unstructured.Unstructured) []Identity {
	if len(p.Families) == 0 {
		return p.Identity
	}
	if f := p.familyOf(o); f != nil && f.Unknown == "" {
		return f.Identity
	}
	return nil
}

// IdentityUnusable says why the identity values used (nil: every one) cannot name the
// external resource of o, or "": o is of no family the preset knows, of a family whose
// identity it does not know, or the values used are not the ones its operator names the
// resource by (provider-kubernetes names it by its manifest's object, not by the
// external-name annotation the runtime sets to the object's own name).
func (p *Preset) IdentityUnusable(o *unstructured.Unstructured, used func(name string) bool) string {
	if len(p.Families) == 0 {
		return ""
	}
	group := o.GroupVersionKind().Group
	f := p.familyOf(o)
	switch {
	case f == nil:
		var known []string
		for _, k := range p.Families {
			if k.Unknown == "" {
				known = append(known, fmt.Sprintf("%s (%s): %s", k.Name, strings.Join(k.Groups, ", "), k.Uses))
			}
		}
		return fmt.Sprintf("preset %s does not know where the operator of API group %s takes the identity of its external resource (it knows %s); "+
			"an identity read where that operator does not read it would name another resource", p.Name, group, strings.Join(known, "; "))
	case f.Unknown != "":
		return fmt.Sprintf("preset %s does not verify %s objects (API group %s): %s", p.Name, f.Name, group, f.Unknown)
	}
	if used == nil {
		return "" // the provider is sent the family's identity, whatever it holds
	}
	var foreign []string
	for _, name := range p.IdentityNames() {
		if !used(name) {
			continue
		}
		if !slices.ContainsFunc(f.Identity, func(id Identity) bool { return id.Name == name }) && p.usedSomewhere(name) {
			foreign = append(foreign, "{identity."+name+"}")
		}
	}
	var own []string
	for _, id := range f.Identity {
		own = append(own, "{identity."+id.Name+"}")
	}
	if len(foreign) > 0 {
		return fmt.Sprintf("%s does not name the external resource of objects of %s (API group %s): %s takes it from %s (%s)",
			strings.Join(foreign, ", "), f.Name, group, f.Name, f.Uses, strings.Join(own, ", "))
	}
	// A rule that asks by none of the family's values asks by something its operator
	// does not name the resource by (the object's name, an annotation read around the
	// identity): a guess, however often it coincides.
	if !slices.ContainsFunc(f.Identity, func(id Identity) bool { return used(id.Name) }) {
		return fmt.Sprintf("the rule asks about objects of %s (API group %s) by none of the values their operator names the resource by: %s takes it from %s (%s)",
			f.Name, group, f.Name, f.Uses, strings.Join(own, ", "))
	}
	return ""
}

// usedSomewhere reports whether name is an identity value of the preset or of one of
// its families.
func (p *Preset) usedSomewhere(name string) bool {
	return slices.Contains(p.IdentityNames(), name)
}

// Managers are an operator's field managers, names or globs, and who named them.
type Managers struct {
	Patterns []string
	// By names who named them, for people: "preset ack", "rule rds's operatorManagers".
	By  string
	set glob.Set
}

// NewManagers compiles an operator's field managers; each must pass CheckManager.
func NewManagers(patterns []string, by string) (*Managers, error) {
	for _, p := range patterns {
		if err := CheckManager(p); err != nil {
			return nil, fmt.Errorf("field manager %q: %w", p, err)
		}
	}
	set, err := glob.CompileSet(patterns)
	if err != nil {
		return nil, err
	}
	return &Managers{Patterns: slices.Clone(patterns), By: by, set: set}, nil
}

// Match reports whether manager is one of the operator's: one of its names, and never a
// generic client (owner.IsGenericManager), whatever a glob of those names matches: a
// rule's "*-agent" for an operator that runs as db-agent must not take fleet-agent,
// Rancher Fleet's applier of manifests, for the operator.
func (m *Managers) Match(manager string) bool {
	return m != nil && len(m.set) > 0 && m.set.Match(manager) && !owner.IsGenericManager(manager)
}

// String lists the names, for people: "provider, crossplane-*-provider or ...".
func (m *Managers) String() string {
	switch n := len(m.Patterns); n {
	case 0:
		return ""
	case 1:
		return m.Patterns[0]
	default:
		return strings.Join(m.Patterns[:n-1], ", ") + " or " + m.Patterns[n-1]
	}
}

// genericClients are names of clients that apply what people and pipelines write: an
// operator's field managers may match none of them, or whoever edits the object with
// kubectl would pass for the operator.
var genericClients = []string{"kubectl", "kubectl-client-side-apply", "kubectl-edit", "kubectl-patch", "kubectl-annotate", "kubectl-label",
	"kubectl-create", "kubectl-replace", "kubectl-finalize", "helm", "argocd-controller", "kustomize-controller", "Go-http-client", "curl"}

// CheckManager says why pattern cannot name an operator's field manager: it is not a
// name or glob, or it names a generic client (kubectl and its subcommands, helm, a
// GitOps applier, a Go client that did not name itself, curl).
func CheckManager(pattern string) error {
	g, err := glob.Compile(pattern)
	switch {
	case strings.TrimSpace(pattern) == "":
		return errors.New("must not be empty")
	case err != nil:
		return err
	case owner.IsGenericManager(pattern):
		return errors.New("is a generic client, which writes what people and pipelines apply: not an operator")
	}
	for _, c := range append(slices.Clone(genericClients), owner.GenericManagerExamples()...) {
		if g.Match(c) {
			return fmt.Errorf("matches %s, a generic client, which writes what people and pipelines apply: not an operator", c)
		}
	}
	return nil
}

// Identity is one value that names the external resource.
type Identity struct {
	Name string
	// From says where it is read, for people.
	From string
	// Field is the field it is read from, as managedFields track it ("metadata",
	// "annotations", KEY); empty when it is not read from a field (the object's name,
	// the finalizer). Fields in a list end at the list: its owner owns every item.
	Field []string
	// Names: the value is a name of the resource (an external name, a manifest's name),
	// which a control may have as its own name (not a namespace, a region, a kind).
	Names bool
	// Recorded, if set, is the field of status where the operator records the value it
	// last acted on (provider-kubernetes: status.atProvider.manifest, the object it last
	// observed). The value is used only when the operator's record holds it: a spec
	// changed since, or never acted on, names a resource the operator may never have
	// made, while the one it made remains (UnrecordedIdentity). Its writer is checked
	// in place of Field's.
	Recorded []string
	get      func(o *unstructured.Unstructured, finalizer string) string
	// recorded reads Recorded, and whether the record is there at all.
	recorded func(o *unstructured.Unstructured) (string, bool)
}

// WriterChecked reports whether the identity is trusted only when the operator wrote
// it (docs/presets.md, "Who wrote the identity"): a value in metadata (an annotation,
// a label) or status. Anyone who may edit the object can rewrite an annotation or a
// label, and a stuck object is still editable: a wrong value turns into a 404, which
// reads as Gone. Status is the operator's, written through the status subresource, so
// the check costs it nothing and catches a hand-made status patch. Spec is the
// declared state: people and pipelines write it by design, so its writer says nothing
// about whether it is right, and it is not checked.
func (id *Identity) WriterChecked() bool {
	return len(id.Field) > 0 && id.Field[0] != "spec"
}

// Signal is a setting read on the object (and its namespace).
type Signal struct {
	// Description says which setting, for people.
	Description string
	// check returns the evidence when the signal is set.
	check func(o *unstructured.Unstructured, ns *corev1.Namespace, finalizer string) (string, bool)
}

// Matches reports whether the preset handles finalizer.
func (p *Preset) Matches(finalizer string) bool {
	return len(p.finalizers) > 0 && p.finalizers.Match(finalizer)
}

// IdentityOf reads the identity of the external resource behind finalizer of o: every
// value that is set.
func (p *Preset) IdentityOf(o *unstructured.Unstructured, finalizer string) map[string]string {
	out := map[string]string{}
	for _, id := range p.identityFor(o) {
		if v := id.get(o, finalizer); v != "" {
			out[id.Name] = v
		}
	}
	return out
}

// UntrustedIdentity says, for each identity value of o that is set, that used selects
// (nil selects every one) and whose writer is checked, why it is not the operator's. The
// operator is known by name: operator, else the preset's Managers. A value is the
// operator's when at least one manager owns its field (managedFields) and every manager
// that owns it is one of those names. Any other writer (curl through kubectl proxy, a
// Python client, kubectl with --field-manager, a GitOps applier, a script that wrote
// status through the status subresource, a person) is not, whatever it wrote, and
// neither is any writer when the operator's names are not known. Empty when every such
// value is the operator's.
func (p *Preset) UntrustedIdentity(o *unstructured.Unstructured, finalizer string, used func(name string) bool, operator *Managers) []string {
	if operator == nil {
		operator = p.managers
	}
	var out []string
	var managed []metav1.ManagedFieldsEntry
	read := false
	identity := p.identityFor(o)
	for i := range identity {
		id := &identity[i]
		checked, field, from := id.WriterChecked(), id.Field, id.From
		set := id.get(o, finalizer) != ""
		selected := used == nil || used(id.Name)
		if id.recorded != nil {
			// The operator's record is what makes the value trusted: its writer is checked,
			// for every value it holds, whichever a template reads (a kubernetes rule's
			// resource stands for the kind and apiVersion no template names).
			checked, field, from = true, id.Recorded, strings.Join(id.Recorded, ".")
			rec, _ := id.recorded(o)
			set, selected = rec != "", true
		}
		if !checked || !selected || !set {
			continue
		}
		if !read {
			managed, read = o.GetManagedFields(), true
		}
		writers := fieldWriters(managed, field)
		var others []string
		for _, w := range writers {
			if !operator.Match(w) {
				others = append(others, w)
			}
		}
		switch {
		case len(writers) == 0:
			out = append(out, fmt.Sprintf("no managedFields entry says who wrote %s (identity %s), so it is not known to be the operator's", from, id.Name))
		case operator == nil || len(operator.Patterns) == 0:
			out = append(out, fmt.Sprintf("%s was last written by %s, and the field managers of the operator of preset %s are not known: name them in the rule's operatorManagers (identity %s)",
				from, strings.Join(writers, ", "), p.Name, id.Name))
		case len(others) > 0:
			out = append(out, fmt.Sprintf("%s was last written by %s, not by the operator, whose field managers are %s (as %s names them; identity %s)",
				from, strings.Join(others, ", "), operator, operator.By, id.Name))
		}
	}
	return out
}

// WriterCheckedFields say, for people, where the identity values whose writer is
// checked are read.
func (p *Preset) WriterCheckedFields() []string {
	var out []string
	for _, id := range p.AllIdentity() {
		from := id.From
		switch {
		case len(id.Recorded) > 0:
			// The operator's record is the field whose writer is checked.
			from = strings.Join(id.Recorded, ".")
		case !id.WriterChecked():
			continue
		}
		if !slices.Contains(out, from) {
			out = append(out, from)
		}
	}
	// Where a family's operator records the object it acted on, and the scope it acted in.
	for _, f := range p.Families {
		if len(f.Instance) > 0 && !slices.Contains(out, strings.Join(f.Instance, ".")) {
			out = append(out, strings.Join(f.Instance, "."))
		}
		if f.ScopeRecord != nil {
			for _, field := range f.ScopeRecord.Fields {
				if from := strings.Join(field, ".") + " of the " + f.ScopeRecord.Kind; !slices.Contains(out, from) {
					out = append(out, from)
				}
			}
		}
	}
	return out
}

// AllIdentity are the identity values of the preset and of its families.
func (p *Preset) AllIdentity() []Identity {
	out := slices.Clone(p.Identity)
	for _, f := range p.Families {
		for _, id := range f.Identity {
			if !slices.ContainsFunc(out, func(o Identity) bool { return o.Name == id.Name }) {
				out = append(out, id)
			}
		}
	}
	return out
}

// UnrecordedIdentity says, for each identity value of o that its operator records
// (Identity.Recorded), why the operator's record does not hold it: there is no record
// (the operator never observed the resource), or the record names another (the object's
// spec changed after the operator last acted on it; the resource it made is the recorded
// one, and may remain). Every recorded value counts, whichever a rule's templates read:
// a request also depends on values no template names (a kubernetes rule's resource is
// the manifest's kind). Empty when every such value is the recorded one.
func (p *Preset) UnrecordedIdentity(o *unstructured.Unstructured, finalizer string) []string {
	var out, unrecorded []string
	for _, id := range p.identityFor(o) {
		if id.recorded == nil {
			continue
		}
		v := id.get(o, finalizer)
		rec, ok := id.recorded(o)
		switch {
		case !ok:
			unrecorded = append(unrecorded, fmt.Sprintf("%s (%s)", id.Name, strings.Join(id.Recorded, ".")))
		case rec != v:
			out = append(out, fmt.Sprintf("%s is %q, but the operator last acted on %q (%s): the object changed after the operator last saw it, and the resource it made may remain (identity %s)",
				id.From, v, rec, strings.Join(id.Recorded, "."), id.Name))
		}
	}
	if len(unrecorded) > 0 {
		out = append(out, fmt.Sprintf("the operator has not recorded the resource it acted on (identity %s): it never observed one, so it may never have made it, or made it under another name",
			strings.Join(unrecorded, ", ")))
	}
	return out
}

// fieldWriters are the field managers whose managed fields hold field, or a field
// inside it, in managedFields order.
func fieldWriters(managed []metav1.ManagedFieldsEntry, field []string) []string {
	var writers []string
	for i := range managed {
		e := &managed[i]
		if e.FieldsV1 == nil || e.Manager == "" || slices.Contains(writers, e.Manager) {
			continue
		}
		if holdsField(e.FieldsV1.GetRawBytes(), field) {
			writers = append(writers, e.Manager)
		}
	}
	return writers
}

// holdsField walks a fieldsV1 set along field and reports whether it reaches the end.
func holdsField(raw []byte, field []string) bool {
	for _, name := range field {
		var node map[string]json.RawMessage
		if err := json.Unmarshal(raw, &node); err != nil {
			return false
		}
		next, ok := node["f:"+name]
		if !ok {
			return false
		}
		raw = next
	}
	return true
}

// IdentityAt names the identity value whose writer is checked (WriterChecked), or that
// its operator records (Recorded), that a template reading field path may read: path is
// that identity's field (or its record's), lies within it, or holds it (a parent such as
// metadata.annotations, which a wildcard, a filter or a recursive descent after it
// reaches into; path is where the template's plain fields end). A rule with the preset
// reads such a field only as that identity, whose writer (or record) is checked, never
// around it.
func (p *Preset) IdentityAt(path []string) (*Identity, bool) {
	all := p.AllIdentity()
	for i := range all {
		id := &all[i]
		var fields [][]string
		if id.WriterChecked() {
			fields = append(fields, id.Field)
		}
		if len(id.Recorded) > 0 {
			// Read as it is, either field goes around the check that the two agree.
			fields = append(fields, id.Field, id.Recorded)
		}
		for _, f := range fields {
			n := min(len(path), len(f))
			if len(f) > 0 && slices.Equal(path[:n], f[:n]) {
				return id, true
			}
		}
	}
	return nil, false
}

// IdentityNames are the names of the identity values, the families' included.
func (p *Preset) IdentityNames() []string {
	all := p.AllIdentity()
	names := make([]string, 0, len(all))
	for _, id := range all {
		names = append(names, id.Name)
	}
	return names
}

// Retained says whether the external resource is meant to outlive the object, and which
// setting says so.
func (p *Preset) Retained(o *unstructured.Unstructured, ns *corev1.Namespace, finalizer string) (string, bool) {
	return firstSet(p.Retain, o, ns, finalizer)
}

// Held says whether the operator must not be bypassed for the object: paused, read-only.
func (p *Preset) Held(o *unstructured.Unstructured, ns *corev1.Namespace, finalizer string) (string, bool) {
	return firstSet(p.Hold, o, ns, finalizer)
}

func firstSet(signals []Signal, o *unstructured.Unstructured, ns *corev1.Namespace, finalizer string) (string, bool) {
	for _, s := range signals {
		if ev, ok := s.check(o, ns, finalizer); ok {
			return ev, true
		}
	}
	return "", false
}

// Lookup returns the preset named name.
func Lookup(name string) (*Preset, bool) {
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// ForFinalizer returns the preset that handles finalizer, if any.
func ForFinalizer(finalizer string) (*Preset, bool) {
	for _, p := range All() {
		if p.Matches(finalizer) {
			return p, true
		}
	}
	return nil, false
}

// Names are the names of every preset, sorted.
func Names() []string {
	var out []string
	for _, p := range All() {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// All are the built-in presets.
func All() []*Preset { return builtin }

// field reads a string at path of the object.
func field(path ...string) func(*unstructured.Unstructured, string) string {
	return func(o *unstructured.Unstructured, _ string) string {
		v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
		switch t := v.(type) {
		case string:
			return t
		case nil:
			return ""
		case map[string]any, []any:
			return ""
		default:
			return fmt.Sprint(t)
		}
	}
}

// path is a field path, as Identity.Field holds it.
func path(names ...string) []string { return names }

// annotationField is the field of an annotation, as Identity.Field holds it.
func annotationField(key string) []string { return []string{"metadata", "annotations", key} }

// annotation reads an annotation of the object.
func annotation(key string) func(*unstructured.Unstructured, string) string {
	return func(o *unstructured.Unstructured, _ string) string { return o.GetAnnotations()[key] }
}

// annotationIs is set when the object's annotation has one of values (case-insensitive).
func annotationIs(key string, values ...string) func(*unstructured.Unstructured, *corev1.Namespace, string) (string, bool) {
	return func(o *unstructured.Unstructured, _ *corev1.Namespace, _ string) (string, bool) {
		v, ok := o.GetAnnotations()[key]
		if ok && slices.Contains(values, strings.ToLower(v)) {
			return fmt.Sprintf("annotation %s: %s", key, v), true
		}
		return "", false
	}
}

// fieldIs is set when the object's field at path has one of values.
func fieldIs(values []string, path ...string) func(*unstructured.Unstructured, *corev1.Namespace, string) (string, bool) {
	return func(o *unstructured.Unstructured, _ *corev1.Namespace, f string) (string, bool) {
		v := field(path...)(o, f)
		if v != "" && slices.Contains(values, v) {
			return fmt.Sprintf("%s: %s", strings.Join(path, "."), v), true
		}
		return "", false
	}
}

func init() {
	for _, p := range builtin {
		set, err := glob.CompileSet(p.Finalizers)
		if err != nil {
			panic(fmt.Sprintf("preset %s: %v", p.Name, err))
		}
		p.finalizers = set
		for i := range p.Families {
			if p.Families[i].groups, err = glob.CompileSet(p.Families[i].Groups); err != nil {
				panic(fmt.Sprintf("preset %s family %s: %v", p.Name, p.Families[i].Name, err))
			}
		}
		if p.managers, err = NewManagers(p.Managers, "preset "+p.Name); err != nil {
			panic(fmt.Sprintf("preset %s: %v", p.Name, err))
		}
	}
}
