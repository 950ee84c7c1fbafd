package policy

import (
	"fmt"
	"maps"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"

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
	maxProviderTimeout       = 5 * time.Minute
	maxRuleNameLength        = 63
	credentialHeaderHint     = "credentials come from valueFrom (an environment variable or a file), never from the policy text"
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

func (c *compiler) add(errs ...*field.Error) { c.errs = append(c.errs, errs...) }

func (c *compiler) policy(spec *finalizev1alpha1.Policy) {
	if spec.MaxRemovals != nil {
		if *spec.MaxRemovals < 1 {
			c.add(field.Invalid(field.NewPath("maxRemovals"), *spec.MaxRemovals, "must be at least 1; a pass that may remove nothing is a --dry-run"))
		}
		c.p.MaxRemovals = int(*spec.MaxRemovals)
	}
	if spec.MaxForceDeletions != nil {
		if *spec.MaxForceDeletions < 1 {
			c.add(field.Invalid(field.NewPath("maxForceDeletions"), *spec.MaxForceDeletions, "must be at least 1; to force-delete no pod, give no waitsForNode rule"))
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
		c.add(field.Required(rules, "a policy needs at least one rule"))
	}
	names := map[string]int{}
	for i := range spec.Rules {
		r := c.rule(rules.Index(i), &spec.Rules[i], i)
		if first, dup := names[r.Name]; dup && r.Name != "" {
			c.add(field.Duplicate(rules.Index(i).Child("name"), fmt.Sprintf("%s (also rules[%d])", r.Name, first)))
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
		c.add(field.Required(path.Child("name"), "every rule has a name, for reports, Events and audit lines"))
	case len(spec.Name) > maxRuleNameLength || !ruleNameRE.MatchString(spec.Name):
		c.add(field.Invalid(path.Child("name"), spec.Name, "must be lower-case letters, digits, '-' and '.', at most 63 characters, starting and ending with a letter or digit"))
	}
	finalizers := spec.Finalizers
	if spec.Preset != "" {
		p, ok := preset.Lookup(spec.Preset)
		if !ok {
			c.add(field.NotSupported(path.Child("preset"), spec.Preset, preset.Names()))
		} else {
			r.Preset = p
			if len(finalizers) == 0 {
				finalizers = p.Finalizers
			}
		}
	}
	if len(finalizers) == 0 && spec.Preset == "" && !spec.WaitsForNode {
		c.add(field.Required(path.Child("finalizers"), "name the finalizers the rule removes, exactly or with globs, a preset, or waitsForNode: true for pods whose node is gone"))
	}
	r.finalizers = c.globs(path.Child("finalizers"), finalizers)
	c.namesThatExist(path.Child("finalizers"), spec.Finalizers, finalizerNames, "")
	if w := systemOnly(spec, finalizers); w != "" {
		c.warnings = append(c.warnings, w)
	}
	r.resources = c.globs(path.Child("resources"), spec.Resources)
	r.namespaces = c.globs(path.Child("namespaces"), spec.Namespaces)
	c.namesThatExist(path.Child("namespaces"), spec.Namespaces, namespaceNames, "")
	if spec.Selector != "" {
		r.selector = c.selector(path.Child("selector"), spec.Selector)
		if r.selector != nil {
			if why := contradiction(r.selector); why != "" {
				c.add(field.Invalid(path.Child("selector"), spec.Selector, "can never match: "+why))
			}
		}
	}
	if spec.WaitsForNode {
		c.waitsForNode(path, spec, r)
	} else if len(spec.Resources) == 0 {
		c.warnings = append(c.warnings, fmt.Sprintf("rule %s names no resources: a pass lists every type of the cluster to match it, secrets included, and needs RBAC to list them all", spec.Name))
	}
	if spec.MinAge != nil {
		r.MinAge = c.duration(path.Child("minAge"), spec.MinAge.Duration)
	}
	if ctl := spec.Controls; ctl != nil {
		if ctl.Count != nil {
			r.Controls = int(*ctl.Count)
			if r.Controls < 0 || r.Controls > maxControls {
				c.add(field.Invalid(path.Child("controls", "count"), *ctl.Count, fmt.Sprintf("must be between 0 and %d", maxControls)))
			}
			if r.Controls == 0 {
				c.warnings = append(c.warnings, fmt.Sprintf("rule %s sets controls.count 0: a broken provider (one that calls everything gone) would not be noticed", spec.Name))
			}
		}
		if ctl.RequireLive != nil {
			r.RequireLive = *ctl.RequireLive
		}
	}
	if rl := spec.RateLimit; rl != nil {
		if rl.QPS < 0 || rl.Burst < 0 {
			c.add(field.Invalid(path.Child("rateLimit"), fmt.Sprintf("qps %v, burst %d", rl.QPS, rl.Burst), "must not be negative"))
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
			c.add(field.Invalid(path.Child("trustIdentityFromAnyWriter"), true, "applies to the identity values of a preset, and the rule names none"))
		case r.Preset != nil:
			c.warnings = append(c.warnings, fmt.Sprintf("rule %s sets trustIdentityFromAnyWriter: its identity values (%s) are trusted whoever wrote them, "+
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
		c.add(field.Invalid(path, spec.OperatorManagers, "names the field managers of the operator of a preset, and the rule names none"))
		return
	case spec.TrustIdentityFromAnyWriter:
		c.add(field.Forbidden(path, "has no effect with trustIdentityFromAnyWriter, which trusts any writer: set one or the other"))
		return
	}
	ok := true
	for i, m := range spec.OperatorManagers {
		if err := preset.CheckManager(m); err != nil {
			c.add(field.Invalid(path.Index(i), m, err.Error()))
			ok = false
		}
	}
	if !ok {
		return
	}
	m, err := preset.NewManagers(spec.OperatorManagers, fmt.Sprintf("rule %s's operatorManagers", spec.Name))
	if err != nil {
		c.add(field.Invalid(path, spec.OperatorManagers, err.Error()))
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
			c.add(field.Invalid(path, s, fmt.Sprintf("a rule with waitsForNode has the identity values %s of the node, not %s", strings.Join(nodeIdentity, ", "), name)))
		}
	}
}

// waitsForNode checks a rule that force-deletes pods waiting for the kubelet of a node
// whose machine is gone: it matches pods only, and none of the finalizer fields apply.
func (c *compiler) waitsForNode(path *field.Path, spec *finalizev1alpha1.Rule, r *Rule) {
	const why = "does not apply to a rule with waitsForNode: it matches pods, not finalizers, and force-deletes them"
	if len(spec.Finalizers) > 0 {
		c.add(field.Forbidden(path.Child("finalizers"), why+"; a pod's finalizers are removed by rules of their own"))
	}
	if spec.Preset != "" {
		c.add(field.Forbidden(path.Child("preset"), why))
	}
	if spec.AllowSystem {
		c.add(field.Forbidden(path.Child("allowSystem"), why))
	}
	if spec.AllowRetained {
		c.add(field.Forbidden(path.Child("allowRetained"), why))
	}
	if spec.TrustIdentityFromAnyWriter {
		c.add(field.Forbidden(path.Child("trustIdentityFromAnyWriter"), why))
	}
	if len(spec.OperatorManagers) > 0 {
		c.add(field.Forbidden(path.Child("operatorManagers"), why))
	}
	switch {
	case len(spec.Resources) == 0:
		// Written out, so that what lists the rule's types (a pass, the RBAC it needs)
		// reads pods, not every type.
		spec.Resources = []string{"pods"}
		r.resources = c.globs(path.Child("resources"), spec.Resources)
	case len(spec.Resources) != 1 || spec.Resources[0] != "pods":
		c.add(field.Invalid(path.Child("resources"), spec.Resources, "a rule with waitsForNode matches pods only: leave resources out, or write [pods]"))
	}
}

func (c *compiler) verify(path *field.Path, v *finalizev1alpha1.Verify, p *preset.Preset) {
	c.preset = p
	var kinds []string
	if v.HTTP != nil {
		kinds = append(kinds, "http")
		c.http(path.Child("http"), v.HTTP)
	}
	if v.Exec != nil {
		kinds = append(kinds, "exec")
		c.exec(path.Child("exec"), v.Exec)
	}
	if v.Kubernetes != nil {
		kinds = append(kinds, "kubernetes")
		c.kubernetes(path.Child("kubernetes"), v.Kubernetes)
	}
	switch len(kinds) {
	case 0:
		if !c.node {
			c.add(field.Required(path, "name one provider: http, exec or kubernetes"))
		}
	case 1:
	default:
		c.add(field.Invalid(path, strings.Join(kinds, ", "), "name exactly one provider"))
	}
}

var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func (c *compiler) http(path *field.Path, h *finalizev1alpha1.HTTPProvider) {
	if h.URL == "" {
		c.add(field.Required(path.Child("url"), ""))
	} else if u, err := provider.ParseURLTemplate(h.URL); err != nil {
		c.add(field.Invalid(path.Child("url"), provider.RedactURL(h.URL), err.Error()))
	} else {
		c.editable(path.Child("url"), h.URL)
		if t, err := provider.ParseTemplate(h.URL); err == nil {
			if c.node {
				c.nodeIdentity(path.Child("url"), h.URL, t)
			}
			shown := h.URL // what looks like a credential is in the query: left out
			if before, _, ok := strings.Cut(shown, "?"); ok {
				shown = before + "?..."
			}
			c.readsAroundIdentity(path.Child("url"), shown, t)
		}
		if strings.HasPrefix(u.String(), "http://") {
			c.warnings = append(c.warnings, fmt.Sprintf("%s: %s is plain http: its answers and headers travel unencrypted", path.Child("url"), provider.RedactURL(h.URL)))
		}
		for i, e := range h.PathValues {
			if err := u.DeclarePaths([]string{e}); err != nil {
				c.add(field.Invalid(path.Child("pathValues").Index(i), e, err.Error()+": pathValues name expressions of the url's path, as written there"))
			}
		}
		for _, name := range u.QueryNames() {
			if provider.CredentialQueryParameter(name) {
				// The URL is shown in evidence, reports, Events and audit lines: the value
				// is left out of the error too.
				c.add(field.Forbidden(path.Child("url"), fmt.Sprintf("query parameter %s carries credentials, and a URL is shown in evidence, reports, Events and audit lines: "+
					"remove it from the url and add it under query with valueFrom (an environment variable or a file), which is sent but shown as %s=REDACTED", name, name)))
			}
		}
	}
	for i, q := range h.Query {
		qp := path.Child("query").Index(i)
		switch {
		case q.Name == "":
			c.add(field.Required(qp.Child("name"), "the parameter's name"))
		case strings.ContainsAny(q.Name, "&=#") || strings.TrimSpace(q.Name) != q.Name:
			c.add(field.Invalid(qp.Child("name"), q.Name, "a query parameter's name holds no '&', '=', '#' or surrounding spaces"))
		}
		c.secretOrValue(qp, "query parameter", q.Name, q.Value, q.ValueFrom, provider.CredentialQueryParameter(q.Name))
	}
	switch h.Redirects {
	case "", finalizev1alpha1.RedirectsRefuse, finalizev1alpha1.RedirectsSameHost:
	default:
		c.add(field.NotSupported(path.Child("redirects"), h.Redirects, []finalizev1alpha1.HTTPRedirects{finalizev1alpha1.RedirectsRefuse, finalizev1alpha1.RedirectsSameHost}))
	}
	switch strings.ToUpper(h.Method) {
	case "", http.MethodGet, http.MethodHead, http.MethodPost:
	default:
		c.add(field.NotSupported(path.Child("method"), h.Method, []string{http.MethodGet, http.MethodHead, http.MethodPost}))
	}
	if h.Body != "" {
		c.template(path.Child("body"), h.Body)
		if m := strings.ToUpper(h.Method); m != http.MethodPost {
			c.add(field.Invalid(path.Child("body"), field.OmitValueType{}, "a body is sent with method POST only"))
		}
	}
	for i, hd := range h.Headers {
		hp := path.Child("headers").Index(i)
		if !headerNameRE.MatchString(hd.Name) {
			c.add(field.Invalid(hp.Child("name"), hd.Name, "not an HTTP header name"))
		}
		c.secretOrValue(hp, "header", hd.Name, hd.Value, hd.ValueFrom, provider.CredentialHeader(hd.Name))
	}
	c.statuses(path.Child("gone"), h.Gone)
	c.statuses(path.Child("present"), h.Present)
	for _, s := range h.Gone {
		if slices.Contains(h.Present, s) {
			c.add(field.Invalid(path.Child("present"), s, "a status cannot mean both gone and present"))
		}
	}
	if r := h.Response; r != nil {
		rp := path.Child("response")
		if r.JSONPath == "" {
			c.add(field.Required(rp.Child("jsonPath"), "the JSONPath of the value to read, like {.status}"))
		} else if err := jsonpath.New("response").Parse(r.JSONPath); err != nil {
			c.add(field.Invalid(rp.Child("jsonPath"), r.JSONPath, err.Error()))
		}
		if len(r.Gone) == 0 {
			c.add(field.Required(rp.Child("gone"), "the values that mean the resource is gone"))
		}
	}
	if g := h.GoneResponse; g != nil {
		gp := path.Child("goneResponse")
		if g.MediaType == "" && !g.EmptyBody {
			c.add(field.Required(gp, "say what the API's Gone answers look like: mediaType, emptyBody: true, or both"))
		}
		if g.MediaType != "" {
			if mt, params, err := mime.ParseMediaType(g.MediaType); err != nil || len(params) > 0 || !strings.Contains(mt, "/") {
				c.add(field.Invalid(gp.Child("mediaType"), g.MediaType, "a media type without parameters, like text/plain or application/problem+json"))
			}
		}
	}
	if t := h.TLS; t != nil && (t.CertFile == "") != (t.KeyFile == "") {
		c.add(field.Invalid(path.Child("tls"), field.OmitValueType{}, "a client certificate needs both certFile and keyFile"))
	}
	c.timeout(path.Child("timeout"), h.Timeout)
}

func (c *compiler) valueFrom(path *field.Path, src *finalizev1alpha1.ValueSource) {
	if (src.Env == "") == (src.File == "") {
		c.add(field.Invalid(path, field.OmitValueType{}, "set exactly one of env and file"))
	}
}

// secretOrValue checks a header's or a query parameter's value: exactly one of a
// templated value and valueFrom, and never a value in the policy text for a name that
// carries credentials.
func (c *compiler) secretOrValue(path *field.Path, what, name, value string, from *finalizev1alpha1.ValueSource, credential bool) {
	switch {
	case value != "" && from != nil:
		c.add(field.Invalid(path, name, "set value or valueFrom, not both"))
	case from != nil:
		c.valueFrom(path.Child("valueFrom"), from)
	case value == "":
		c.add(field.Required(path.Child("value"), "set value or valueFrom"))
	case credential:
		c.add(field.Forbidden(path.Child("value"), fmt.Sprintf("%s %s carries credentials: %s", what, name, credentialHeaderHint)))
	default:
		c.template(path.Child("value"), value)
	}
}

func (c *compiler) statuses(path *field.Path, codes []int32) {
	for i, s := range codes {
		if s < 100 || s > 599 {
			c.add(field.Invalid(path.Index(i), s, "not an HTTP status"))
		}
		if s >= 300 && s < 400 {
			c.add(field.Invalid(path.Index(i), s, "a 3xx is a redirect, which is never a verdict: it is Unknown (redirects: SameHost follows those on the same host)"))
		}
		if s == http.StatusTooManyRequests || s >= 500 {
			c.add(field.Invalid(path.Index(i), s, "429 and 5xx are retried, then mean Unknown"))
		}
	}
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (c *compiler) exec(path *field.Path, e *finalizev1alpha1.ExecProvider) {
	if len(e.Command) == 0 || e.Command[0] == "" {
		c.add(field.Required(path.Child("command"), "the program to run, then its arguments"))
	} else if strings.Contains(e.Command[0], "{") {
		c.add(field.Invalid(path.Child("command").Index(0), e.Command[0], "the program is fixed: only its arguments may be templated"))
	}
	for i := 1; i < len(e.Command); i++ {
		c.template(path.Child("command").Index(i), e.Command[i])
	}
	for i, v := range e.Env {
		ep := path.Child("env").Index(i)
		if !envNameRE.MatchString(v.Name) {
			c.add(field.Invalid(ep.Child("name"), v.Name, "not an environment variable name"))
		}
		// A value is not templated, and may be empty (a variable set to nothing); one
		// whose name says it holds a credential is refused, as a header's is: the policy
		// is read by whoever may read the CronJob.
		switch {
		case v.ValueFrom != nil && v.Value != "":
			c.add(field.Invalid(ep, v.Name, "set value or valueFrom, not both"))
		case v.ValueFrom != nil:
			c.valueFrom(ep.Child("valueFrom"), v.ValueFrom)
		case v.Value != "" && provider.CredentialEnv(v.Name):
			c.add(field.Forbidden(ep.Child("value"), fmt.Sprintf("environment variable %s carries credentials: %s", v.Name, credentialHeaderHint)))
		}
	}
	if e.SecretData {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: secretData is true: the program reads the values of every Secret the rule matches", path.Child("secretData")))
	}
	if e.AllowLeadingDash {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: allowLeadingDash is true: a value an object holds (\"--rm\") can become an option of the program; "+
			"prefer the option and the value in one argument (\"--id={.status.id}\")", path.Child("allowLeadingDash")))
	}
	c.timeout(path.Child("timeout"), e.Timeout)
}

func (c *compiler) kubernetes(path *field.Path, k *finalizev1alpha1.KubernetesProvider) {
	if k.Resource == "" {
		c.add(field.Required(path.Child("resource"), "the type of the objects to look for, like instances.compute.example.com"))
	}
	switch {
	case (k.Name == "") == (k.Selector == ""):
		c.add(field.Invalid(path, field.OmitValueType{}, "set exactly one of name and selector"))
	case k.Name != "":
		c.template(path.Child("name"), k.Name)
	default:
		c.template(path.Child("selector"), k.Selector)
		if _, err := labels.Parse(valuesRE.ReplaceAllString(k.Selector, "x")); err != nil {
			c.add(field.Invalid(path.Child("selector"), k.Selector, err.Error()))
		}
	}
	if k.Namespace != "" {
		c.template(path.Child("namespace"), k.Namespace)
	}
	c.timeout(path.Child("timeout"), k.Timeout)
}

// valuesRE finds the values of a simple template, to check what surrounds them.
var valuesRE = regexp.MustCompile(`\{[^}]*\}`)

// editableRE finds a template value read from an annotation or a label.
var editableRE = regexp.MustCompile(`\{\s*\.metadata\.(annotations|labels)\b`)

// editable warns about a template value read from an annotation or a label. The
// template is shown with what looks like a credential in its query redacted.
func (c *compiler) editable(path *field.Path, s string) {
	if m := editableRE.FindString(s); m != "" {
		if before, _, ok := strings.Cut(s, "?"); ok {
			s = before + "?..."
		}
		c.warnings = append(c.warnings, fmt.Sprintf("%s: %s reads %s, which anyone who may edit the object can change, and whose writer is not checked: "+
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
		if id, ok := c.preset.IdentityAt(paths[source]); ok {
			c.add(field.Invalid(path, s, fmt.Sprintf("%s reads %s, which preset %s reads identity %s from and trusts only when its operator wrote it: write {identity.%s} "+
				"(or set trustIdentityFromAnyWriter to trust any writer)", source, id.From, c.preset.Name, id.Name, id.Name)))
		}
	}
}

func (c *compiler) template(path *field.Path, s string) {
	t, err := provider.ParseTemplate(s)
	if err != nil {
		c.add(field.Invalid(path, s, err.Error()))
		return
	}
	c.editable(path, s)
	if c.node {
		c.nodeIdentity(path, s, t)
	}
	c.readsAroundIdentity(path, s, t)
	for _, name := range t.IdentityRefs() {
		switch {
		case c.node:
		case c.preset == nil:
			c.add(field.Invalid(path, s, fmt.Sprintf("{identity.%s} needs a preset: identity values come from one", name)))
		case !slices.Contains(c.preset.IdentityNames(), name):
			c.add(field.Invalid(path, s, fmt.Sprintf("preset %s has no identity value %s; it has %s", c.preset.Name, name, strings.Join(c.preset.IdentityNames(), ", "))))
		}
	}
}

func (c *compiler) timeout(path *field.Path, d *metav1.Duration) {
	if d == nil {
		return
	}
	if d.Duration <= 0 || d.Duration > maxProviderTimeout {
		c.add(field.Invalid(path, d.Duration.String(), fmt.Sprintf("must be more than 0 and at most %s", maxProviderTimeout)))
	}
}

func (c *compiler) duration(path *field.Path, d time.Duration) time.Duration {
	if d < 0 {
		c.add(field.Invalid(path, d.String(), "must not be negative"))
	}
	return d
}

func (c *compiler) globs(path *field.Path, patterns []string) glob.Set {
	for i, p := range patterns {
		if p == "" {
			c.add(field.Invalid(path.Index(i), p, "must not be empty"))
		}
	}
	set, err := glob.CompileSet(slices.DeleteFunc(slices.Clone(patterns), func(p string) bool { return p == "" }))
	if err != nil {
		c.add(field.Invalid(path, patterns, err.Error()))
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
				c.add(field.Invalid(path.Index(i), p, fmt.Sprintf("can never match%s: %s: %s", so, n.what, errs[0])))
			}
			continue
		}
		for _, r := range p {
			if r != '*' && r != '?' && !strings.ContainsRune(n.chars, r) {
				c.add(field.Invalid(path.Index(i), p, fmt.Sprintf("can never match%s: %s, which never holds %q", so, n.what, r)))
				break
			}
		}
	}
}

func (c *compiler) selector(path *field.Path, s string) labels.Selector {
	sel, err := labels.Parse(s)
	if err != nil {
		c.add(field.Invalid(path, s, err.Error()))
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
		c.add(field.Invalid(path, s, fmt.Sprintf("selects every object, so no rule could ever match (%s): give the labels of the objects to exclude", strings.Join(names, ", "))))
		return nil
	}
	if why := contradiction(sel); why != "" {
		c.add(field.Invalid(path, s, "can never match, so it excludes nothing: "+why))
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
				c.add(field.Invalid(field.NewPath("rules").Index(j), later.Name,
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
			c.add(field.Invalid(path.Child("namespaces"), r.Spec.Namespaces, "can never match: exclude.namespaces excludes them all"))
		case everything(ex.namespaces) && r.Spec.WaitsForNode:
			// Pods are namespaced. A rule of other objects that names no namespaces may
			// still match cluster-scoped ones, which no namespace excludes.
			c.add(field.Invalid(path, r.Name, "can never match: exclude.namespaces excludes every namespace, and the rule matches pods"))
		}
		switch {
		case len(ex.resources) > 0 && len(r.resources) > 0 && coversSet(ex.resources, r.resources):
			c.add(field.Invalid(path.Child("resources"), r.Spec.Resources, "can never match: exclude.resources excludes them all"))
		case len(r.resources) == 0 && everything(ex.resources):
			c.add(field.Invalid(path, r.Name, "can never match: exclude.resources excludes every type"))
		}
		if r.selector == nil {
			continue
		}
		for _, sel := range ex.selectors {
			if implies(r.selector, sel) {
				c.add(field.Invalid(path.Child("selector"), r.Spec.Selector,
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
