package provider

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// A kind of provider is a field of a rule's verify: http, exec or kubernetes. Each kind
// registers itself from its own file with everything the rest of kubectl-finalize asks
// of a kind: how policy check validates its specification, which of its fields are
// templates, what it reads of the cluster being reconciled (the role kubectl finalize
// rbac writes grants it), and how it is built. Nothing else switches on the kind: adding
// one is its field in v1alpha1.Verify and one file here.

// kind is one kind of provider, over the type of its specification.
type kind[S any] struct {
	// name is the JSON name of verify's field that holds the specification.
	name string
	// spec is that field of v: nil where v does not name the kind.
	spec func(v *finalizev1alpha1.Verify) *S
	// check validates a specification at path (verify.http). Every template it checks,
	// it checks through c.Template or c.URL, in the order of the fields.
	check func(c Checks, path *field.Path, s *S)
	// templates are the specification's templated values, which name the identity
	// values the provider sends.
	templates func(s *S) []string
	// sendsAllIdentity: the provider sends every identity value, whatever its templates
	// name (exec, on stdin).
	sendsAllIdentity bool
	// reads are what a provider reads of the cluster being reconciled with the pass's
	// own credentials; nil where it reads nothing there.
	reads func(s *S) []Read
	// build builds a provider of a valid specification.
	build func(s *S, opts Options) (Provider, error)
}

// registered is a kind of any specification.
type registered interface {
	kindName() string
	of(v *finalizev1alpha1.Verify) Spec
}

// kinds are the registered kinds, in the order verify declares their fields: the order
// of every message that lists them.
var kinds []registered

// register adds a kind. A kind whose name is not a field of verify is a programming
// error, found when the package is loaded.
func register[S any](k *kind[S]) {
	if slices.ContainsFunc(kinds, func(r registered) bool { return r.kindName() == k.name }) {
		panic(fmt.Sprintf("provider kind %s registered twice", k.name))
	}
	verifyField(k.name)
	kinds = append(kinds, k)
	slices.SortFunc(kinds, func(a, b registered) int { return verifyField(a.kindName()) - verifyField(b.kindName()) })
}

// verifyField is the index of verify's field whose JSON name is name.
func verifyField(name string) int {
	t := reflect.TypeFor[finalizev1alpha1.Verify]()
	for i := range t.NumField() {
		if n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); n == name {
			return i
		}
	}
	panic(fmt.Sprintf("provider kind %s: verify has no field %s", name, name))
}

func (k *kind[S]) kindName() string { return k.name }

func (k *kind[S]) of(v *finalizev1alpha1.Verify) Spec {
	s := k.spec(v)
	if s == nil {
		return nil
	}
	return &spec[S]{k: k, s: s}
}

// Names are the kinds, for messages: "http, exec or kubernetes".
func Names() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.kindName()
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Of is the provider v names, or nil where it names none (a rule with waitsForNode may
// name none). Of a v that names several, which policy check refuses, it is the first.
func Of(v *finalizev1alpha1.Verify) Spec {
	for _, k := range kinds {
		if s := k.of(v); s != nil {
			return s
		}
	}
	return nil
}

// Named are every provider v names, in the order of verify's fields: policy check
// refuses all but one.
func Named(v *finalizev1alpha1.Verify) []Spec {
	var out []Spec
	for _, k := range kinds {
		if s := k.of(v); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// Spec is the provider a rule's verify names: its kind and its specification.
type Spec interface {
	// Kind is verify's field that names it: http, exec or kubernetes.
	Kind() string
	// Check validates the specification through c; path is verify's.
	Check(c Checks, path *field.Path)
	// IdentityUsed says which identity values the provider sends: those its templates
	// name, or every one where it is nil.
	IdentityUsed() func(name string) bool
	// Reads are what the provider reads of the cluster being reconciled with the pass's
	// own credentials, for the pass's role.
	Reads() []Read
	// New builds the provider. Its specification must have been validated; New fails on
	// what only shows at run time.
	New(opts Options) (Provider, error)
}

// Checks are the policy compiler's, as a kind's check calls them: the compiler knows the
// rule around the provider (its preset, whether it waits for a node), the kind its own
// fields.
type Checks interface {
	// Add records an error.
	Add(err *field.Error)
	// Warn records what is allowed but worth knowing.
	Warn(warning string)
	// Template checks a templated value: that it parses, and reads only what the rule
	// may read.
	Template(path *field.Path, s string)
	// URL checks the parsed template t of an http provider's URL, written s, as Template
	// checks a value: it is shown without its query, where credentials may be.
	URL(path *field.Path, s string, t *Template)
}

// Read is what a provider reads of the cluster being reconciled with the pass's own
// credentials: the role of the pass grants it (kubectl finalize rbac).
type Read struct {
	// Field is where the type is written, for errors: "verify.kubernetes.resource".
	Field string
	// Resource is the type as written (plural, singular, Kind or short name, with or
	// without its group), to be resolved as the provider resolves it.
	Resource string
	// Namespace is where it is read, as written: a name, a template, or "" for every
	// namespace.
	Namespace string
	// Verb is get or list.
	Verb string
	// Purpose says how it is read, for the role's purposes: "reads one by name".
	Purpose string
}

type spec[S any] struct {
	k *kind[S]
	s *S
}

func (s *spec[S]) Kind() string { return s.k.name }

func (s *spec[S]) Check(c Checks, path *field.Path) { s.k.check(c, path.Child(s.k.name), s.s) }

func (s *spec[S]) IdentityUsed() func(string) bool {
	if s.k.sendsAllIdentity {
		return nil
	}
	used := map[string]bool{}
	for _, text := range s.templateValues() {
		if text == "" {
			continue
		}
		t, err := ParseTemplate(text)
		if err != nil {
			return nil // validated already; if not, every value counts
		}
		for _, name := range t.IdentityRefs() {
			used[name] = true
		}
	}
	return func(name string) bool { return used[name] }
}

// templateValues are the specification's templated values.
func (s *spec[S]) templateValues() []string { return s.k.templates(s.s) }

func (s *spec[S]) Reads() []Read {
	if s.k.reads == nil {
		return nil
	}
	return s.k.reads(s.s)
}

func (s *spec[S]) New(opts Options) (Provider, error) { return s.k.build(s.s, opts) }

// maxTimeout bounds the timeout a rule gives its provider.
const maxTimeout = 5 * time.Minute

// checkTimeout checks the timeout a rule gives its provider, of any kind.
func checkTimeout(c Checks, path *field.Path, d *metav1.Duration) {
	if d == nil {
		return
	}
	if d.Duration <= 0 || d.Duration > maxTimeout {
		c.Add(field.Invalid(path, d.Duration.String(), fmt.Sprintf("must be more than 0 and at most %s", maxTimeout)))
	}
}
