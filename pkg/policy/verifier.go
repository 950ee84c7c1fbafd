package policy

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Verifier verifies removals with the rules of a policy and their providers. It
// implements remove.Verifier. One Verifier serves one pass: it caches answers by their
// rendered request, and checks each rule's provider against live objects once.
type Verifier struct {
	policy  *Policy
	dynamic dynamic.Interface
	now     func() time.Time
	// Controls are the live objects a pass saw, to check providers with.
	Controls *Controls

	providers map[string]provider.Provider
	errs      map[string]error
	limiters  map[string]flowcontrol.RateLimiter

	mu         sync.Mutex
	cache      map[string]*answer
	checks     map[string]*check
	namespaces map[string]*corev1.Namespace
}

// answer is one provider answer, shared by every call with the same key.
type answer struct {
	once sync.Once
	provider.Answer
}

// NewVerifier builds each rule's provider. A provider that cannot be built (a missing
// environment variable, an unreadable CA file) leaves its rule unable to verify: every
// answer under it is Unknown, with the reason.
func NewVerifier(p *Policy, dyn dynamic.Interface, opts provider.Options) *Verifier {
	v := &Verifier{
		policy: p, dynamic: dyn, now: time.Now, Controls: NewControls(p),
		providers: map[string]provider.Provider{}, errs: map[string]error{}, limiters: map[string]flowcontrol.RateLimiter{},
		cache: map[string]*answer{}, checks: map[string]*check{}, namespaces: map[string]*corev1.Namespace{},
	}
	for _, r := range p.Rules {
		prov, err := provider.New(&r.Spec.Verify, opts)
		if err != nil {
			v.errs[r.Name] = err
			continue
		}
		v.providers[r.Name] = prov
		v.limiters[r.Name] = flowcontrol.NewTokenBucketRateLimiter(r.QPS, r.Burst)
	}
	return v
}

// SetClock replaces the clock ages are measured with.
func (v *Verifier) SetClock(now func() time.Time) { v.now = now }

// ProviderErrors are the rules whose provider could not be built, and why.
func (v *Verifier) ProviderErrors() map[string]error { return v.errs }

// Verify implements remove.Verifier.
func (v *Verifier) Verify(ctx context.Context, req remove.VerifyRequest) remove.Verification {
	o := req.Object
	rule := v.policy.Match(SubjectOf(o.Resource, o.Meta.Namespace, o.Meta.Name, o.Meta.Labels), req.Finalizer.Name)
	if rule == nil {
		return remove.Verification{}
	}
	out := remove.Verification{Rule: rule.Name, AllowSystem: rule.Spec.AllowSystem, AllowRetained: rule.Spec.AllowRetained}
	unknown := func(format string, args ...any) remove.Verification {
		out.Verdict, out.Evidence = finalizev1alpha1.VerdictUnknown, fmt.Sprintf(format, args...)
		return out
	}
	if age := o.Terminating(v.now()); age < rule.MinAge {
		out.TooYoung = true
		out.Evidence = fmt.Sprintf("terminating for %s, the rule waits %s for its controller", duration.HumanDuration(age), duration.HumanDuration(rule.MinAge))
		return out
	}
	if err := v.errs[rule.Name]; err != nil {
		return unknown("the rule's provider cannot run: %v", err)
	}
	full, why, err := v.fetch(ctx, o.Resource, o.Meta.Namespace, o.Meta.Name)
	if err != nil {
		out.ReadError = why
		return unknown("%s", why)
	}
	if full == nil {
		return unknown("%s", why)
	}
	switch {
	case full.GetUID() != o.Meta.UID:
		return unknown("%s was replaced by a namesake (uid %s, not %s)", o.Ref(), full.GetUID(), o.Meta.UID)
	case full.GetDeletionTimestamp() == nil:
		return unknown("%s is not being deleted any more", o.Ref())
	case !hasFinalizer(full, req.Finalizer):
		return unknown("%s no longer has finalizer %s", o.Ref(), req.Finalizer.Name)
	}
	// The scan's labels may be older than the object's: match what will be verified.
	if again := v.policy.Match(SubjectOf(o.Resource, full.GetNamespace(), full.GetName(), full.GetLabels()), req.Finalizer.Name); again != rule {
		return unknown("%s changed and no longer matches rule %s", o.Ref(), rule.Name)
	}
	out.ResourceVersion, out.Finalizers = full.GetResourceVersion(), full.GetFinalizers()
	a := v.ask(ctx, rule, full, req.Finalizer.Name, req.Fresh)
	if a.Verdict == finalizev1alpha1.VerdictRetained && a.Evidence != "" && strings.HasPrefix(a.Evidence, retainedByDesign) {
		// The object itself says so; no provider was asked, so none needs trusting.
		out.Verdict, out.Evidence = a.Verdict, a.Evidence
		return out
	}
	out.Verdict, out.Evidence = a.Verdict, a.Evidence
	if a.Verdict == finalizev1alpha1.VerdictGone || a.Verdict == finalizev1alpha1.VerdictRetained {
		c := v.check(ctx, rule)
		out.Distrust = c.distrust
		if c.unread {
			out.ReadError = c.distrust
		}
	}
	return out
}

// fetch reads the full object a provider's request is built from. Only candidates are
// read this way, never during the scan.
// A vanished object is nil and says so; a failed read is an error, and says so.
func (v *Verifier) fetch(ctx context.Context, r scan.Resource, namespace, name string) (*unstructured.Unstructured, string, error) {
	var client dynamic.ResourceInterface = v.dynamic.Resource(r.GroupVersionResource)
	if namespace != "" {
		client = v.dynamic.Resource(r.GroupVersionResource).Namespace(namespace)
	}
	full, err := client.Get(ctx, name, metav1.GetOptions{})
	ref := r.Ref(namespace, name, "")
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Sprintf("%s is gone", ref), nil
	case err != nil:
		return nil, fmt.Sprintf("reading %s: %v", ref, err), err
	}
	return full, "", nil
}

func hasFinalizer(u *unstructured.Unstructured, fin finalizev1alpha1.Finalizer) bool {
	if fin.Field == finalizev1alpha1.FieldSpecFinalizers {
		spec, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "finalizers")
		return slices.Contains(spec, fin.Name)
	}
	return slices.Contains(u.GetFinalizers(), fin.Name)
}

// retainedByDesign starts the evidence of a resource a preset's setting retains.
const retainedByDesign = "retained by design: "

// ask asks the rule's provider about one object, once per rendered request unless fresh.
// A preset's settings are read first: a held resource is not verified, a retained one
// is Retained without asking.
func (v *Verifier) ask(ctx context.Context, rule *Rule, full *unstructured.Unstructured, finalizer string, fresh bool) provider.Answer {
	var identity map[string]string
	if p := rule.Preset; p != nil && p.Matches(finalizer) {
		var ns *corev1.Namespace
		if p.NeedsNamespace && full.GetNamespace() != "" {
			var err error
			if ns, err = v.namespace(ctx, full.GetNamespace()); err != nil {
				return provider.Unknown("reading namespace %s for preset %s: %v", full.GetNamespace(), p.Name, err)
			}
		}
		if why, held := p.Held(full, ns, finalizer); held {
			return provider.Unknown("not verified: %s; the operator of the resource must not be bypassed", why)
		}
		if why, retained := p.Retained(full, ns, finalizer); retained {
			return provider.Answer{Verdict: finalizev1alpha1.VerdictRetained, Evidence: retainedByDesign + why}
		}
		if p.Shared != nil && p.Shared(finalizer) {
			if n, names := v.Controls.liveHolders(finalizer); n > 0 {
				return provider.Answer{Verdict: finalizev1alpha1.VerdictPresent,
					Evidence: fmt.Sprintf("the resource behind %s is shared, and %d live objects still carry it (%s): it is not gone until all of them are", finalizer, n, strings.Join(names, ", "))}
			}
		}
		identity = p.IdentityOf(full, finalizer)
	}
	call, err := v.providers[rule.Name].Prepare(&provider.Request{Rule: rule.Name, Finalizer: finalizer, Object: full, Identity: identity})
	if err != nil {
		return provider.Unknown("the request cannot be made from this object: %v", err)
	}
	do := func() provider.Answer {
		if err := v.limiters[rule.Name].Wait(ctx); err != nil {
			return provider.Unknown("not asked: %v", err)
		}
		a := call.Do(ctx)
		klog.V(4).InfoS("Provider answered", "rule", rule.Name, "verdict", a.Verdict, "evidence", a.Evidence)
		return a
	}
	if fresh {
		return do()
	}
	key := rule.Name + "\x00" + call.Key()
	v.mu.Lock()
	a, ok := v.cache[key]
	if !ok {
		a = &answer{}
		v.cache[key] = a
	}
	v.mu.Unlock()
	a.once.Do(func() { a.Answer = do() })
	return a.Answer
}

// namespace reads a namespace, once per pass.
func (v *Verifier) namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	v.mu.Lock()
	ns, ok := v.namespaces[name]
	v.mu.Unlock()
	if ok {
		return ns, nil
	}
	u, err := v.dynamic.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	ns = &corev1.Namespace{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ns); err != nil {
		return nil, err
	}
	v.mu.Lock()
	v.namespaces[name] = ns
	v.mu.Unlock()
	return ns, nil
}

// check is what a rule's controls showed of its provider.
type check struct {
	once sync.Once
	// distrust says why the rule's Gone answers cannot be trusted, or is empty.
	distrust string
	// unread: the check failed because the cluster could not be read (distrust says so).
	unread bool
	// broken: the provider called a live object gone.
	broken  bool
	results []finalizev1alpha1.ControlResult
}

// check asks the rule's provider about live objects, once per pass: every one must be
// Present, or Unknown, and at least one Present.
func (v *Verifier) check(ctx context.Context, rule *Rule) *check {
	v.mu.Lock()
	c, ok := v.checks[rule.Name]
	if !ok {
		c = &check{}
		v.checks[rule.Name] = c
	}
	v.mu.Unlock()
	c.once.Do(func() { v.runCheck(ctx, rule, c) })
	return c
}

func (v *Verifier) runCheck(ctx context.Context, rule *Rule, c *check) {
	if rule.Controls == 0 {
		return
	}
	controls := v.Controls.For(rule)
	if len(controls) == 0 {
		if rule.RequireLive {
			c.distrust = "no live object carries a finalizer this rule matches, so its provider could not be checked against one that exists; " +
				"to act without that check, set controls.requireLive: false in the rule"
		}
		return
	}
	present := 0
	var unknown []string
	for _, ctl := range controls {
		full, why, err := v.fetch(ctx, ctl.resource, ctl.namespace, ctl.name)
		if err != nil {
			// Not a change of the object: the cluster could not be read, so the provider
			// cannot be checked, and the pass did not do its job.
			c.distrust, c.unread = "its live objects could not be read to check its provider: "+why, true
			return
		}
		if full == nil || full.GetDeletionTimestamp() != nil {
			continue // it changed since the scan: not a control any more
		}
		field := finalizev1alpha1.FieldMetadataFinalizers
		if ctl.resource.IsNamespaces() && !slices.Contains(full.GetFinalizers(), ctl.finalizer) {
			field = finalizev1alpha1.FieldSpecFinalizers
		}
		if !hasFinalizer(full, finalizev1alpha1.Finalizer{Name: ctl.finalizer, Field: field}) {
			continue // it changed since the scan: not a control any more
		}
		a := v.ask(ctx, rule, full, ctl.finalizer, false)
		ref := ctl.resource.Ref(ctl.namespace, ctl.name, full.GetUID())
		c.results = append(c.results, finalizev1alpha1.ControlResult{Target: ref, Verdict: a.Verdict, Evidence: a.Evidence})
		switch a.Verdict {
		case finalizev1alpha1.VerdictGone:
			c.broken = true
			c.distrust = fmt.Sprintf("the provider is broken: it called %s gone (%s), but that object is live and its finalizer %s still guards something", ref, a.Evidence, ctl.finalizer)
			return
		case finalizev1alpha1.VerdictPresent, finalizev1alpha1.VerdictRetained:
			present++
		default:
			unknown = append(unknown, fmt.Sprintf("%s: %s", ref, a.Evidence))
		}
	}
	switch {
	case present > 0:
	case len(unknown) > 0:
		c.distrust = fmt.Sprintf("the provider answered Present for no live object (%s), so it is not shown to tell present from gone", strings.Join(unknown, "; "))
	case rule.RequireLive:
		c.distrust = "the live objects this rule matches changed before they could be checked; its provider could not be checked"
	}
}

// RuleStatuses say, for each rule whose controls were checked in this pass, what they
// showed; a broken rule first.
func (v *Verifier) RuleStatuses() []finalizev1alpha1.RuleStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []finalizev1alpha1.RuleStatus
	for name, c := range v.checks {
		out = append(out, finalizev1alpha1.RuleStatus{Rule: name, Broken: c.broken, Distrust: c.distrust, Controls: c.results})
	}
	for name, err := range v.errs {
		out = append(out, finalizev1alpha1.RuleStatus{Rule: name, Distrust: "its provider cannot run: " + err.Error()})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Broken != out[j].Broken {
			return out[i].Broken
		}
		return out[i].Rule < out[j].Rule
	})
	return out
}

// Controls collects, while a scan lists, up to each rule's count of live objects that
// carry a finalizer the rule matches: the objects its provider is checked with.
type Controls struct {
	policy *Policy
	mu     sync.Mutex
	byRule map[string][]control
	// holders count the live objects that carry a shared finalizer, and name a few.
	holders map[string]*holders
}

type holders struct {
	count int
	names []string
}

type control struct {
	resource        scan.Resource
	namespace, name string
	finalizer       string
}

// NewControls collects controls for the rules of p.
func NewControls(p *Policy) *Controls {
	return &Controls{policy: p, byRule: map[string][]control{}, holders: map[string]*holders{}}
}

// Observe looks at one listed object; a scan calls it for every object, concurrently.
func (c *Controls) Observe(r scan.Resource, meta *metav1.ObjectMeta, ns *corev1.Namespace) {
	if meta.DeletionTimestamp != nil {
		return
	}
	finalizers := meta.Finalizers
	if ns != nil {
		finalizers = slices.Clone(finalizers)
		for _, f := range ns.Spec.Finalizers {
			finalizers = append(finalizers, string(f))
		}
	}
	s := SubjectOf(r, meta.Namespace, meta.Name, meta.Labels)
	for _, f := range finalizers {
		if !c.policy.MatchesFinalizer(f) {
			continue
		}
		rule := c.policy.Match(s, f)
		if rule == nil {
			continue
		}
		if rule.Preset != nil && rule.Preset.Shared != nil && rule.Preset.Shared(f) {
			c.hold(f, r.Ref(meta.Namespace, meta.Name, "").String())
		}
		if rule.Controls == 0 {
			continue
		}
		c.mu.Lock()
		if len(c.byRule[rule.Name]) < rule.Controls {
			c.byRule[rule.Name] = append(c.byRule[rule.Name], control{resource: r, namespace: meta.Namespace, name: meta.Name, finalizer: f})
		}
		c.mu.Unlock()
	}
}

func (c *Controls) hold(finalizer, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.holders[finalizer]
	if h == nil {
		h = &holders{}
		c.holders[finalizer] = h
	}
	h.count++
	if len(h.names) < 3 {
		h.names = append(h.names, name)
	}
}

// liveHolders counts the live objects that carry a shared finalizer, and names a few.
func (c *Controls) liveHolders(finalizer string) (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.holders[finalizer]; h != nil {
		return h.count, slices.Clone(h.names)
	}
	return 0, nil
}

// For returns the controls found for rule.
func (c *Controls) For(rule *Rule) []control {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.byRule[rule.Name])
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
