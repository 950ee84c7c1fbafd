package policy

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/preset"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
)

// Defaults of a policy.
const (
	defaultMaxRemovals = 20
	// defaultMaxForceDeletions is lower: a wrongful force deletion leaves two writers.
	defaultMaxForceDeletions = 5
	defaultMinAge            = 15 * time.Minute
	defaultControls          = 3
	defaultQPS               = 50
	defaultBurst             = 100
	maxControls              = 20
	maxRuleNameLength        = 63
)

// Policy is a validated policy, ready to match objects.
type Policy struct {
	Spec *finalizev1alpha1.Policy
	// File is where it was read from, if it was.
	File        string
	Rules       []*Rule
	MaxRemovals int
	// MaxForceDeletions is the most force deletions of pods a pass may make.
	MaxForceDeletions int
	MinAge            time.Duration
	// Warnings are what is allowed but worth knowing.
	Warnings []string

	exclude struct {
		namespaces, resources glob.Set
		selectors             []labels.Selector
	}
}

// Rule is a validated rule.
type Rule struct {
	Spec *finalizev1alpha1.Rule
	Name string
	// Index is the rule's position in the policy.
	Index       int
	MinAge      time.Duration
	Controls    int
	RequireLive bool
	QPS         float32
	Burst       int

	// Preset, if set, is the rule's preset.
	Preset *preset.Preset
	// OperatorManagers, if set, are the field managers of the preset's operator the rule
	// names in place of the preset's.
	OperatorManagers *preset.Managers

	finalizers, resources, namespaces glob.Set
	selector                          labels.Selector
}

// Compile validates spec and compiles it. Every problem is reported, each with its rule
// and field path; warnings say what is allowed but costly or risky.
func Compile(spec *finalizev1alpha1.Policy) (*Policy, field.ErrorList, []string) {
	c := &compiler{p: &Policy{Spec: spec, MaxRemovals: defaultMaxRemovals, MaxForceDeletions: defaultMaxForceDeletions, MinAge: defaultMinAge}}
	c.policy(spec)
	return c.p, c.errs, c.warnings
}

type compiler struct {
	p        *Policy
	errs     field.ErrorList
	warnings []string
	// preset is the preset of the rule being compiled: its identity values are what
	// templates may use.
	preset *preset.Preset
	// node: the rule being compiled sets waitsForNode; its templates render over the
	// Node object, with the identity values nodeIdentity.
	node bool
	// anyWriter: the rule being compiled sets trustIdentityFromAnyWriter.
	anyWriter bool
}

// The compiler checks each provider's specification for its kind (provider.Spec.Check).
var _ provider.Checks = (*compiler)(nil)

// Add records an error (provider.Checks).
func (c *compiler) Add(err *field.Error) { c.errs = append(c.errs, err) }

// Warn records what is allowed but worth knowing (provider.Checks).
func (c *compiler) Warn(warning string) { c.warnings = append(c.warnings, warning) }

func (c *compiler) policy(spec *finalizev1alpha1.Policy) {
	if spec.MaxRemovals != nil {
		if *spec.MaxRemovals < 1 {
			c.Add(field.Invalid(field.NewPath("maxRemovals"), *spec.MaxRemovals, "must be at least 1; a pass that may remove nothing is a --dry-run"))
		}
		c.p.MaxRemovals = int(*spec.MaxRemovals)
	}
	if spec.MaxForceDeletions != nil {
		if *spec.MaxForceDeletions < 1 {
			c.Add(field.Invalid(field.NewPath("maxForceDeletions"), *spec.MaxForceDeletions, "must be at least 1; to force-delete no pod, give no waitsForNode rule"))
		}
		c.p.MaxForceDeletions = int(*spec.MaxForceDeletions)
	}
	if spec.MinAge != nil {
		c.p.MinAge = c.duration(field.NewPath("minAge"), spec.MinAge.Duration)
	}
	if ex := spec.Exclude; ex != nil {
		path := field.NewPath("exclude")
		c.p.exclude.namespaces = c.globs(path.Child("namespaces"), ex.Namespaces)
		c.namesThatExist(path.Child("namespaces"), ex.Namespaces, namespaceNames, "so it excludes nothing")
		c.p.exclude.resources = c.globs(path.Child("resources"), ex.Resources)
		for i, s := range ex.Selectors {
			if sel := c.excludeSelector(path.Child("selectors").Index(i), s, spec.Rules); sel != nil {
				c.p.exclude.selectors = append(c.p.exclude.selectors, sel)
			}
		}
	}
	rules := field.NewPath("rules")
	if len(spec.Rules) == 0 {
		c.Add(field.Required(rules, "a policy needs at least one rule"))
	}
	names := map[string]int{}
	for i := range spec.Rules {
		r := c.rule(rules.Index(i), &spec.Rules[i], i)
		if first, dup := names[r.Name]; dup && r.Name != "" {
			c.Add(field.Duplicate(rules.Index(i).Child("name"), fmt.Sprintf("%s (also rules[%d])", r.Name, first)))
		}
		names[r.Name] = i
		c.p.Rules = append(c.p.Rules, r)
	}
	c.shadowed()
}

var ruleNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)

func (c *compiler) rule(path *field.Path, spec *finalizev1alpha1.Rule, index int) *Rule {
	r := &Rule{Spec: spec, Name: spec.Name, Index: index, MinAge: c.p.MinAge, Controls: defaultControls, RequireLive: true, QPS: defaultQPS, Burst: defaultBurst}
	// Errors of a rule say which rule, by name, before the field path.
	before := len(c.errs)
	defer func() {
		if spec.Name == "" {
			return
		}
		for _, e := range c.errs[before:] {
			e.Detail = strings.TrimSpace(fmt.Sprintf("%s (rule %s)", e.Detail, spec.Name))
		}
	}()
	switch {
	case spec.Name == "":
		c.Add(field.Required(path.Child("name"), "every rule has a name, for reports, Events and audit lines"))
	case len(spec.Name) > maxRuleNameLength || !ruleNameRE.MatchString(spec.Name):
		c.Add(field.Invalid(path.Child("name"), spec.Name, "must be lower-case letters, digits, '-' and '.', at most 63 characters, starting and ending with a letter or digit"))
	}
	finalizers := spec.Finalizers
	if spec.Preset != "" {
		p, ok := preset.Lookup(spec.Preset)
		if !ok {
			c.Add(field.NotSupported(path.Child("preset"), spec.Preset, preset.Names()))
		} else {
			r.Preset = p
			if len(finalizers) == 0 {
				finalizers = p.Finalizers
			}
		}
	}
	if len(finalizers) == 0 && spec.Preset == "" && !spec.WaitsForNode {
		c.Add(field.Required(path.Child("finalizers"), "name the finalizers the rule removes, exactly or with globs, a preset, or waitsForNode: true for pods whose node is gone"))
	}
	r.finalizers = c.globs(path.Child("finalizers"), finalizers)
	// A rule that removes a preset's finalizers without naming it reads the identity
	// wherever its templates say, whoever wrote it, and none of the preset's checks
	// apply (the operator's record, its retain and hold settings, where it put the
	// resource).
	if spec.Preset == "" && len(finalizers) > 0 {
		for _, p := range preset.All() {
			// A finalizer of the preset's, each of its globs written out ("*" as "x"),
			// that the rule's names or globs match.
			if slices.ContainsFunc(p.Finalizers, func(f string) bool { return r.finalizers.Match(strings.ReplaceAll(f, "*", "x")) }) {
				c.Warn(fmt.Sprintf("rule %s removes finalizers of %s without preset: %s: none of the preset's checks apply (whose the identity is, what the operator recorded, its retain and hold settings); name the preset unless the rule is for another operator's finalizer of the same name",
					spec.Name, p.Operator, p.Name))
				break
			}
		}
	}
	c.namesThatExist(path.Child("finalizers"), spec.Finalizers, finalizerNames, "")
	if w := systemOnly(spec, finalizers); w != "" {
		c.Warn(w)
	}
	r.resources = c.globs(path.Child("resources"), spec.Resources)
	r.namespaces = c.globs(path.Child("namespaces"), spec.Namespaces)
	c.namesThatExist(path.Child("namespaces"), spec.Namespaces, namespaceNames, "")
	if spec.Selector != "" {
		r.selector = c.selector(path.Child("selector"), spec.Selector)
		if r.selector != nil {
			if why := contradiction(r.selector); why != "" {
				c.Add(field.Invalid(path.Child("selector"), spec.Selector, "can never match: "+why))
			}
		}
	}
	if spec.WaitsForNode {
		c.waitsForNode(path, spec, r)
	} else if len(spec.Resources) == 0 {
		c.Warn(fmt.Sprintf("rule %s names no resources: a pass lists every type of the cluster to match it, secrets included, and needs RBAC to list them all", spec.Name))
	}
	if spec.MinAge != nil {
		r.MinAge = c.duration(path.Child("minAge"), spec.MinAge.Duration)
	}
	if ctl := spec.Controls; ctl != nil {
		if ctl.Count != nil {
			r.Controls = int(*ctl.Count)
			if r.Controls < 0 || r.Controls > maxControls {
				c.Add(field.Invalid(path.Child("controls", "count"), *ctl.Count, fmt.Sprintf("must be between 0 and %d", maxControls)))
			}
			if r.Controls == 0 {
				c.Warn(fmt.Sprintf("rule %s sets controls.count 0: a broken provider (one that calls everything gone) would not be noticed", spec.Name))
			}
		}
		if ctl.RequireLive != nil {
			r.RequireLive = *ctl.RequireLive
		}
	}
	if rl := spec.RateLimit; rl != nil {
		if rl.QPS < 0 || rl.Burst < 0 {
			c.Add(field.Invalid(path.Child("rateLimit"), fmt.Sprintf("qps %v, burst %d", rl.QPS, rl.Burst), "must not be negative"))
		}
		if rl.QPS > 0 {
			r.QPS = rl.QPS
		}
		if rl.Burst > 0 {
			r.Burst = int(rl.Burst)
		}
	}
	if spec.TrustIdentityFromAnyWriter {
		switch {
		case spec.Preset == "":
			c.Add(field.Invalid(path.Child("trustIdentityFromAnyWriter"), true, "applies to the identity values of a preset, and the rule names none"))
		case r.Preset != nil:
			c.Warn(fmt.Sprintf("rule %s sets trustIdentityFromAnyWriter: its identity values (%s) are trusted whoever wrote them, "+
				"so anyone who may edit a stuck object can point its verification at a resource that does not exist "+
				"(`kubectl annotate` with a typo), and its finalizer is removed", spec.Name, strings.Join(r.Preset.WriterCheckedFields(), ", ")))
		}
	}
	if len(spec.OperatorManagers) > 0 {
		c.operatorManagers(path.Child("operatorManagers"), spec, r)
	}
	c.node, c.anyWriter = spec.WaitsForNode, spec.TrustIdentityFromAnyWriter
	c.verify(path.Child("verify"), &spec.Verify, r.Preset)
	c.node, c.anyWriter = false, false
	return r
}

// operatorManagers checks the field managers a rule names for its preset's operator.
func (c *compiler) operatorManagers(path *field.Path, spec *finalizev1alpha1.Rule, r *Rule) {
	switch {
	case spec.Preset == "":
		c.Add(field.Invalid(path, spec.OperatorManagers, "names the field managers of the operator of a preset, and the rule names none"))
		return
	case spec.TrustIdentityFromAnyWriter:
		c.Add(field.Forbidden(path, "has no effect with trustIdentityFromAnyWriter, which trusts any writer: set one or the other"))
		return
	}
	ok := true
	for i, m := range spec.OperatorManagers {
		if err := preset.CheckManager(m); err != nil {
			c.Add(field.Invalid(path.Index(i), m, err.Error()))
			ok = false
		}
	}
	if !ok {
		return
	}
	m, err := preset.NewManagers(spec.OperatorManagers, fmt.Sprintf("rule %s's operatorManagers", spec.Name))
	if err != nil {
		c.Add(field.Invalid(path, spec.OperatorManagers, err.Error()))
		return
	}
	r.OperatorManagers = m
}

// nodeIdentity are the identity values of a waitsForNode rule's templates.
var nodeIdentity = []string{"nodeName", "providerID"}

// nodeIdentity checks the identity values a waitsForNode rule's template uses.
func (c *compiler) nodeIdentity(path *field.Path, s string, t *provider.Template) {
	for _, name := range t.IdentityRefs() {
		if !slices.Contains(nodeIdentity, name) {
			c.Add(field.Invalid(path, s, fmt.Sprintf("a rule with waitsForNode has the identity values %s of the node, not %s", strings.Join(nodeIdentity, ", "), name)))
		}
	}
}

// waitsForNode checks a rule that force-deletes pods waiting for the kubelet of a node
// whose machine is gone: it matches pods only, and none of the finalizer fields apply.
func (c *compiler) waitsForNode(path *field.Path, spec *finalizev1alpha1.Rule, r *Rule) {
	const why = "does not apply to a rule with waitsForNode: it matches pods, not finalizers, and force-deletes them"
	if len(spec.Finalizers) > 0 {
		c.Add(field.Forbidden(path.Child("finalizers"), why+"; a pod's finalizers are removed by rules of their own"))
	}
	if spec.Preset != "" {
		c.Add(field.Forbidden(path.Child("preset"), why))
	}
	if spec.AllowSystem {
		c.Add(field.Forbidden(path.Child("allowSystem"), why))
	}
	if spec.AllowRetained {
		c.Add(field.Forbidden(path.Child("allowRetained"), why))
	}
	if spec.TrustIdentityFromAnyWriter {
		c.Add(field.Forbidden(path.Child("trustIdentityFromAnyWriter"), why))
	}
	if len(spec.OperatorManagers) > 0 {
		c.Add(field.Forbidden(path.Child("operatorManagers"), why))
	}
	switch {
	case len(spec.Resources) == 0:
		// Written out, so that what lists the rule's types (a pass, the RBAC it needs)
		// reads pods, not every type.
		spec.Resources = []string{"pods"}
		r.resources = c.globs(path.Child("resources"), spec.Resources)
	case len(spec.Resources) != 1 || spec.Resources[0] != "pods":
		c.Add(field.Invalid(path.Child("resources"), spec.Resources, "a rule with waitsForNode matches pods only: leave resources out, or write [pods]"))
	}
}

func (c *compiler) verify(path *field.Path, v *finalizev1alpha1.Verify, p *preset.Preset) {
	c.preset = p
	named := provider.Named(v)
	kinds := make([]string, len(named))
	for i, spec := range named {
		kinds[i] = spec.Kind()
		spec.Check(c, path)
	}
	switch len(named) {
	case 0:
		if !c.node {
			c.Add(field.Required(path, "name one provider: "+provider.Names()))
		}
	case 1:
	default:
		c.Add(field.Invalid(path, strings.Join(kinds, ", "), "name exactly one provider"))
	}
}

// editableRE finds a template value read from an annotation or a label.
var editableRE = regexp.MustCompile(`\{\s*\.metadata\.(annotations|labels)\b`)

// editable warns about a template value read from an annotation or a label. The
// template is shown with what looks like a credential in its query redacted.
func (c *compiler) editable(path *field.Path, s string) {
	if m := editableRE.FindString(s); m != "" {
		if before, _, ok := strings.Cut(s, "?"); ok {
			s = before + "?..."
		}
		c.Warn(fmt.Sprintf("%s: %s reads %s, which anyone who may edit the object can change, and whose writer is not checked: "+
			"a wrong value there can make the provider answer Gone for the wrong resource; prefer a preset, whose identity is trusted only when the operator wrote it, "+
			"or a field only the operator writes (status)", path, s, strings.TrimSpace(strings.TrimPrefix(m, "{"))))
	}
}

// readsAroundIdentity refuses a template value that reads a field the rule's preset
// reads an identity from, around that identity: the field is read only as
// {identity.NAME}, whose writer is checked. Read around it, a value anyone wrote
// (kubectl annotate with a typo) would be asked about, and its 404 read as Gone.
func (c *compiler) readsAroundIdentity(path *field.Path, s string, t *provider.Template) {
	if c.preset == nil || c.node || c.anyWriter {
		return
	}
	paths := t.FieldPaths()
	for _, source := range slices.Sorted(maps.Keys(paths)) {
		id, ok := c.preset.IdentityAt(paths[source])
		switch {
		case ok && len(id.Recorded) > 0:
			c.Add(field.Invalid(path, s, fmt.Sprintf("%s reads where preset %s reads identity %s from (%s; its operator's record, %s), which it trusts only when the two agree and the record is its operator's: write {identity.%s}",
				source, c.preset.Name, id.Name, id.From, strings.Join(id.Recorded, "."), id.Name)))
		case ok:
			c.Add(field.Invalid(path, s, fmt.Sprintf("%s reads %s, which preset %s reads identity %s from and trusts only when its operator wrote it: write {identity.%s} "+
				"(or set trustIdentityFromAnyWriter to trust any writer)", source, id.From, c.preset.Name, id.Name, id.Name)))
		}
	}
}

// URL checks the template of an http provider's URL (provider.Checks).
func (c *compiler) URL(path *field.Path, s string, t *provider.Template) {
	c.editable(path, s)
	if c.node {
		c.nodeIdentity(path, s, t)
	}
	shown := s // what looks like a credential is in the query: left out
	if before, _, ok := strings.Cut(shown, "?"); ok {
		shown = before + "?..."
	}
	c.readsAroundIdentity(path, shown, t)
	c.identityRefs(path, shown, t)
}

// Template checks a templated value (provider.Checks).
func (c *compiler) Template(path *field.Path, s string) {
	t, err := provider.ParseTemplate(s)
	if err != nil {
		c.Add(field.Invalid(path, s, err.Error()))
		return
	}
	c.editable(path, s)
	if c.node {
		c.nodeIdentity(path, s, t)
	}
	c.readsAroundIdentity(path, s, t)
	c.identityRefs(path, s, t)
}

// identityRefs checks that every {identity.NAME} a template names is a value the rule's
// preset gives (a waitsForNode rule's are the node's, checked by nodeIdentity): in a URL
// as in a header or body, so that a name no preset gives fails at load, not as an
// Unknown at every request.
func (c *compiler) identityRefs(path *field.Path, s string, t *provider.Template) {
	for _, name := range t.IdentityRefs() {
		switch {
		case c.node:
		case c.preset == nil:
			c.Add(field.Invalid(path, s, fmt.Sprintf("{identity.%s} needs a preset: identity values come from one", name)))
		case !slices.Contains(c.preset.IdentityNames(), name):
			c.Add(field.Invalid(path, s, fmt.Sprintf("preset %s has no identity value %s; it has %s", c.preset.Name, name, strings.Join(c.preset.IdentityNames(), ", "))))
		}
	}
}

func (c *compiler) duration(path *field.Path, d time.Duration) time.Duration {
	if d < 0 {
		c.Add(field.Invalid(path, d.String(), "must not be negative"))
	}
	return d
}

func (c *compiler) globs(path *field.Path, patterns []string) glob.Set {
	for i, p := range patterns {
		if p == "" {
			c.Add(field.Invalid(path.Index(i), p, "must not be empty"))
		}
	}
	set, err := glob.CompileSet(slices.DeleteFunc(slices.Clone(patterns), func(p string) bool { return p == "" }))
	if err != nil {
		c.Add(field.Invalid(path, patterns, err.Error()))
	}
	return set
}

// names are the names the API server accepts for a kind of thing: valid says what is
// wrong with one, chars are every character one may hold.
type names struct {
	what  string
	valid func(string) []string
	chars string
}

var (
	namespaceNames = names{"a namespace's name is a DNS label", validation.IsDNS1123Label, "abcdefghijklmnopqrstuvwxyz0123456789-"}
	finalizerNames = names{"a finalizer is a qualified name", validation.IsQualifiedName,
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./"}
)

// namesThatExist refuses patterns that no name the API server accepts can match: a
// namespace in capitals or with an underscore, a finalizer whose domain is in capitals.
// Patterns are matched as they are written, so such a rule would match nothing, pass
// after pass, while the pass stayed green (an exclude would exclude nothing). A literal
// is checked whole, a glob by the characters it holds besides its wildcards.
func (c *compiler) namesThatExist(path *field.Path, patterns []string, n names, so string) {
	if so != "" {
		so = ", " + so
	}
	for i, p := range patterns {
		if p == "" {
			continue
		}
		if !strings.ContainsAny(p, "*?") {
			if errs := n.valid(p); len(errs) > 0 {
				c.Add(field.Invalid(path.Index(i), p, fmt.Sprintf("can never match%s: %s: %s", so, n.what, errs[0])))
			}
			continue
		}
		for _, r := range p {
			if r != '*' && r != '?' && !strings.ContainsRune(n.chars, r) {
				c.Add(field.Invalid(path.Index(i), p, fmt.Sprintf("can never match%s: %s, which never holds %q", so, n.what, r)))
				break
			}
		}
	}
}

func (c *compiler) selector(path *field.Path, s string) labels.Selector {
	sel, err := labels.Parse(s)
	if err != nil {
		c.Add(field.Invalid(path, s, err.Error()))
		return nil
	}
	return sel
}

// excludeSelector compiles an exclude selector. One that selects every object (empty, or
// only spaces) would keep every rule away from everything, and one that can never match
// excludes nothing: neither can be meant, and both are errors.
func (c *compiler) excludeSelector(path *field.Path, s string, rules []finalizev1alpha1.Rule) labels.Selector {
	sel := c.selector(path, s)
	switch {
	case sel == nil:
		return nil
	case sel.Empty():
		var names []string
		for _, r := range rules {
			names = append(names, r.Name)
		}
		c.Add(field.Invalid(path, s, fmt.Sprintf("selects every object, so no rule could ever match (%s): give the labels of the objects to exclude", strings.Join(names, ", "))))
		return nil
	}
	if why := contradiction(sel); why != "" {
		c.Add(field.Invalid(path, s, "can never match, so it excludes nothing: "+why))
		return nil
	}
	return sel
}

// shadowed reports rules that can never match: an earlier rule matches every finalizer
// of every object they would, and the first rule wins.
func (c *compiler) shadowed() {
	for j, later := range c.p.Rules {
		for _, earlier := range c.p.Rules[:j] {
			if covers(earlier, later) {
				c.Add(field.Invalid(field.NewPath("rules").Index(j), later.Name,
					fmt.Sprintf("can never match: rule %s before it matches every %s it would, and the first rule that matches wins", earlier.Name, shadowedWhat(later))))
				break
			}
		}
	}
	ex := &c.p.exclude
	for j, r := range c.p.Rules {
		path := field.NewPath("rules").Index(j)
		switch {
		case len(ex.namespaces) > 0 && len(r.namespaces) > 0 && coversSet(ex.namespaces, r.namespaces):
			c.Add(field.Invalid(path.Child("namespaces"), r.Spec.Namespaces, "can never match: exclude.namespaces excludes them all"))
		case everything(ex.namespaces) && r.Spec.WaitsForNode:
			// Pods are namespaced. A rule of other objects that names no namespaces may
			// still match cluster-scoped ones, which no namespace excludes.
			c.Add(field.Invalid(path, r.Name, "can never match: exclude.namespaces excludes every namespace, and the rule matches pods"))
		}
		switch {
		case len(ex.resources) > 0 && len(r.resources) > 0 && coversSet(ex.resources, r.resources):
			c.Add(field.Invalid(path.Child("resources"), r.Spec.Resources, "can never match: exclude.resources excludes them all"))
		case len(r.resources) == 0 && everything(ex.resources):
			c.Add(field.Invalid(path, r.Name, "can never match: exclude.resources excludes every type"))
		}
		if r.selector == nil {
			continue
		}
		for _, sel := range ex.selectors {
			if implies(r.selector, sel) {
				c.Add(field.Invalid(path.Child("selector"), r.Spec.Selector,
					fmt.Sprintf("can never match: the exclude selector %q excludes every object it selects", sel)))
				break
			}
		}
	}
}

// shadowedWhat names what a shadowed rule would have matched.
func shadowedWhat(r *Rule) string {
	if r.Spec.WaitsForNode {
		return "pod"
	}
	return "finalizer of every object"
}

// covers reports whether a matches everything b matches.
func covers(a, b *Rule) bool {
	if a.Spec.WaitsForNode || b.Spec.WaitsForNode {
		// Rules with waitsForNode match pods, never finalizers, and only each other.
		return a.Spec.WaitsForNode && b.Spec.WaitsForNode && coversOptional(a.namespaces, b.namespaces) &&
			(a.Spec.Selector == "" || a.Spec.Selector == b.Spec.Selector)
	}
	if len(a.finalizers) == 0 || len(b.finalizers) == 0 {
		return false
	}
	return coversSet(a.finalizers, b.finalizers) && coversOptional(a.resources, b.resources) &&
		coversOptional(a.namespaces, b.namespaces) && (a.Spec.Selector == "" || a.Spec.Selector == b.Spec.Selector)
}

// coversOptional: an empty set matches everything.
func coversOptional(a, b glob.Set) bool {
	if len(a) == 0 {
		return true
	}
	return len(b) > 0 && coversSet(a, b)
}

// coversSet reports whether a matches every pattern of b: each literal of b matches a
// pattern of a, and each glob of b is a pattern of a or falls under a "*".
func coversSet(a, b glob.Set) bool {
	for _, pb := range b {
		ok := false
		for _, pa := range a {
			if pa.String() == pb.String() || pa.String() == "*" || (pb.Literal() && pa.Match(pb.String())) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
