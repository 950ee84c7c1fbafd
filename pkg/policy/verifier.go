package policy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/preset"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// Verifier verifies removals with the rules of a policy and their providers. It
// implements plan.Verifier. One Verifier serves one pass: it caches answers by their
// rendered request, and checks each rule's provider against live objects of each
// resource type once.
type Verifier struct {
	policy  *Policy
	dynamic dynamic.Interface
	// mapper resolves the types of the records a preset reads besides the object (a
	// ProviderConfigUsage); nil resolves none, and what needs one is Unknown.
	mapper apimeta.RESTMapper
	// Clock measures how long objects have been terminating (a rule's minAge): the API
	// server's clock (plan.ServerClock), which remove and every reconcile pass set; nil
	// means the local clock.
	Clock clock.PassiveClock
	// Controls are the live objects a pass saw, to check providers with.
	Controls *Controls

	providers map[string]provider.Provider
	errs      map[string]error
	limiters  map[string]flowcontrol.RateLimiter
	// identityUsed says which identity values a rule's provider uses; nil uses them all
	// (an exec provider reads every one on stdin).
	identityUsed map[string]func(name string) bool

	mu     sync.Mutex
	cache  map[string]*answer
	checks map[checkKey]*check
	// vouches are, by rule, type and scope, what the live controls showed of the scope;
	// controlAsks each control asked about, once.
	vouches     map[vouchKey]*vouch
	controlAsks map[string]*controlAsk
	// cannotRun holds, by rule, the first answer that said its provider cannot run.
	cannotRun  map[string]string
	namespaces map[string]*corev1.Namespace
}

// ForgetAnswers lets go of the provider answers kept so far, so that requests alike are
// asked once: a question asked after it goes to the provider again. A plan's answers are
// not read again: its writes verify each object afresh (plan.VerifyRequest.Fresh), the
// node answers of its force deletions are read only while it plans, and what a rule's
// controls showed is kept apart from them. Ten thousand answers are megabytes (#36).
func (v *Verifier) ForgetAnswers() {
	v.mu.Lock()
	defer v.mu.Unlock()
	clear(v.cache) // the map itself stays: an ask holds it (entry)
}

// answer is one provider answer, shared by every call with the same key.
type answer struct {
	once sync.Once
	provider.Answer
	// at is when the provider answered.
	at time.Time
}

// NewVerifier builds each rule's provider. A provider that cannot be built (a missing
// environment variable, an unreadable CA file) leaves its rule unable to verify: every
// answer under it is Unknown, with the reason, and its status says it cannot verify.
func NewVerifier(p *Policy, dyn dynamic.Interface, opts provider.Options) *Verifier {
	v := &Verifier{
		policy: p, dynamic: dyn, mapper: opts.Mapper, Controls: newControls(p),
		providers: map[string]provider.Provider{}, errs: map[string]error{}, limiters: map[string]flowcontrol.RateLimiter{},
		identityUsed: map[string]func(string) bool{},
		cache:        map[string]*answer{}, checks: map[checkKey]*check{}, cannotRun: map[string]string{}, namespaces: map[string]*corev1.Namespace{},
		vouches: map[vouchKey]*vouch{}, controlAsks: map[string]*controlAsk{},
	}
	for _, r := range p.Rules {
		spec := provider.Of(&r.Spec.Verify)
		if spec == nil && r.Spec.WaitsForNode {
			continue // only the Node object's absence verifies under it
		}
		if spec != nil {
			v.identityUsed[r.Name] = spec.IdentityUsed()
		}
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

func (v *Verifier) now() time.Time {
	if v.Clock == nil {
		return time.Now()
	}
	return v.Clock.Now()
}

// ProviderErrors are the rules whose provider could not be built, and why.
func (v *Verifier) ProviderErrors() map[string]error { return v.errs }

// Verify implements plan.Verifier.
func (v *Verifier) Verify(ctx context.Context, req plan.VerifyRequest) plan.Verification {
	o := req.Object
	rule := v.policy.Match(SubjectOf(o.Resource, o.Meta.Namespace, o.Meta.Name, o.Meta.Labels), req.Finalizer.Name)
	if rule == nil {
		return plan.Verification{}
	}
	out := plan.Verification{Rule: rule.Name, AllowSystem: rule.Spec.AllowSystem, AllowRetained: rule.Spec.AllowRetained}
	unknown := func(format string, args ...any) plan.Verification {
		out.Verdict, out.Evidence = finalizev1alpha1.VerdictUnknown, fmt.Sprintf(format, args...)
		return out
	}
	if age := o.Terminating(v.now()); age < rule.MinAge {
		out.Status = plan.TooYoung
		out.Evidence = fmt.Sprintf("terminating for %s, the rule waits %s for its controller", duration.HumanDuration(age), duration.HumanDuration(rule.MinAge))
		return out
	}
	if err := v.errs[rule.Name]; err != nil {
		return unknown("the rule's provider cannot run: %v", err)
	}
	full, why, err := v.fetch(ctx, o.Resource, o.Meta.Namespace, o.Meta.Name)
	if err != nil {
		out.Status, out.Detail = plan.Unread, why
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
	out.Verdict, out.Evidence = a.Verdict, a.Evidence
	out.VerifiedAt = a.answeredAt()
	if a.readError {
		// Verifying needed a read that failed (the namespace a preset reads): not a
		// verdict of the object, and the pass did not do its job.
		out.Status, out.Detail = plan.Unread, a.Evidence
		return out
	}
	if a.byObject {
		// The object decided (retained, held, shared, an identity that is not the
		// operator's): no provider was asked, so none needs trusting. An Unknown it
		// decided (an identity that is not the operator's, a request that cannot be made
		// from it) still counts among the stuck objects of its type: when no control of
		// the type answered either, nothing shows that the rule can ever verify one (an
		// operatorManagers or a template field that nothing matches), and the pass fails
		// rather than keep everything, green, pass after pass. A held object is left out:
		// a person paused its operator.
		if a.Verdict == finalizev1alpha1.VerdictUnknown && !a.held {
			own := v.check(ctx, rule, o.Resource)
			v.mu.Lock()
			own.targets++
			own.decidedTargets++
			own.unknownTargets = append(own.unknownTargets, fmt.Sprintf("%s: %s", o.Ref(), a.Evidence))
			v.mu.Unlock()
		}
		return out
	}
	if a.CannotRun {
		v.mu.Lock()
		if v.cannotRun[rule.Name] == "" {
			v.cannotRun[rule.Name] = a.Evidence
		}
		v.mu.Unlock()
	}
	// The controls are checked whatever the answer: a rule whose provider answers
	// Unknown for everything fails the pass rather than keep it green.
	distrust, unread, own := v.trust(ctx, rule, o.Resource)
	// A Gone counts only in the shape of the API's own answers, which the controls'
	// Present answers of this type established.
	if why := notTheAPIsOwn(a.Answer, own); why != "" {
		a.Verdict, a.Evidence = finalizev1alpha1.VerdictUnknown, why
		out.Verdict, out.Evidence = a.Verdict, a.Evidence
	}
	// Whether the answer would have been acted on, were it trusted and vouched for.
	actionable := a.Verdict == finalizev1alpha1.VerdictGone || (a.Verdict == finalizev1alpha1.VerdictRetained && rule.Spec.AllowRetained)
	if why := v.notVouchedFor(ctx, rule, o.Resource, a); why != "" {
		a.Verdict, a.Evidence = finalizev1alpha1.VerdictUnknown, why
		out.Verdict, out.Evidence = a.Verdict, a.Evidence
		// Held back for want of a control of its scope: under requireLive the rule
		// cannot verify it, and the pass says so rather than keep it, green, pass after
		// pass. A type with no control at all is the check's own case, below.
		if rule.RequireLive && own != nil && !own.unchecked && distrust == "" {
			v.mu.Lock()
			if own.scopeHeldBack == nil {
				own.scopeHeldBack = map[string]map[string]bool{}
			}
			if own.scopeHeldBack[a.scope] == nil {
				own.scopeHeldBack[a.scope] = map[string]bool{}
			}
			own.scopeHeldBack[a.scope][o.Ref().String()] = true
			v.mu.Unlock()
		}
	}
	if distrust != "" && (a.Verdict == finalizev1alpha1.VerdictGone || a.Verdict == finalizev1alpha1.VerdictRetained) {
		out.Status, out.Detail = plan.Distrusted, distrust
		if unread {
			out.Status = plan.ControlsUnread
		}
	}
	// A Gone that would have been acted on, held back only because no control of its
	// type could be asked (requireLive): the rule verifies nothing of that type, pass
	// after pass, so the pass fails rather than stay green while removing nothing. An
	// answer that was not acted on anyway held nothing back.
	if actionable && own != nil && own.unchecked && distrust == own.distrust && !unread {
		v.mu.Lock()
		if own.heldBack == nil {
			own.heldBack = map[string]bool{}
		}
		own.heldBack[o.Ref().String()] = true
		v.mu.Unlock()
	}
	if own != nil {
		v.mu.Lock()
		own.targets++
		if a.Verdict == finalizev1alpha1.VerdictUnknown {
			own.unknownTargets = append(own.unknownTargets, fmt.Sprintf("%s: %s", o.Ref(), a.Evidence))
		}
		v.mu.Unlock()
	}
	return out
}

// fetch reads the full object a provider's request is built from. Only candidates are
// read this way, never during the scan.
// A vanished object is nil and says so; a failed read is an error, and says so.
func (v *Verifier) fetch(ctx context.Context, r kube.Resource, namespace, name string) (*unstructured.Unstructured, string, error) {
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

// reply is what ask found out about one object.
type reply struct {
	provider.Answer
	// byObject: the object decided the verdict alone (a retain or hold setting, the live
	// holders of a shared finalizer, an identity that is not the operator's, a request
	// that cannot be made from it), and the rule's provider was not asked. Such a
	// verdict says nothing about the provider: it never counts as a control.
	byObject bool
	// readError: a read of the cluster the verdict needs failed (the namespace a preset
	// reads: Forbidden, a timeout). The Unknown is not the object's: the target's
	// verification failed, and a control it was asked about leaves its check unread.
	readError bool
	// at is when the provider answered; zero for a verdict the object decided.
	at time.Time
	// held: the object's operator is paused (a preset's hold setting), so it was not
	// verified on purpose.
	held bool
	// request names the request the provider was asked (call.Key()); empty for a verdict
	// the object decided.
	request string
	// scope is where the object's operator last put its resource, as its record says
	// (preset.RecordedScope); empty when its preset has no scope. instance is the UID of
	// the object its operator recorded as its resource, or instanceWhy says why there is
	// none to use (preset.InstanceOf).
	scope, instance, instanceWhy string
}

// answeredAt is when the verdict was given: by the provider, or, for a verdict the
// object decided, now, from the object just read.
func (r *reply) answeredAt() time.Time {
	if r.at.IsZero() {
		return time.Now()
	}
	return r.at
}

// decided is a verdict the object decided alone.
func decided(a provider.Answer) reply { return reply{Answer: a, byObject: true} }

// ask asks the rule's provider about one object, once per rendered request unless fresh.
// A preset's settings are read first: a held resource is not verified, a retained one
// is Retained without asking, and an identity the operator did not write is Unknown.
func (v *Verifier) ask(ctx context.Context, rule *Rule, full *unstructured.Unstructured, finalizer string, fresh bool) reply {
	prov := v.providers[rule.Name]
	if prov == nil {
		return decided(provider.Unknown("the rule's provider cannot run: %v", v.errs[rule.Name]))
	}
	var identity map[string]string
	var scope, instance, instanceWhy string
	if p := rule.Preset; p != nil && p.Matches(finalizer) {
		var ns *corev1.Namespace
		if p.NeedsNamespace && full.GetNamespace() != "" {
			var err error
			if ns, err = v.namespace(ctx, full.GetNamespace()); err != nil {
				return reply{Answer: provider.Unknown("reading namespace %s for preset %s: %v", full.GetNamespace(), p.Name, err), byObject: true, readError: true}
			}
		}
		if why, held := p.Held(full, ns, finalizer); held {
			return reply{Answer: provider.Unknown("not verified: %s; the operator of the resource must not be bypassed", why), byObject: true, held: true}
		}
		if why, retained := p.Retained(full, ns, finalizer); retained {
			return decided(provider.Answer{Verdict: finalizev1alpha1.VerdictRetained, Evidence: retainedByDesign + why})
		}
		if p.Shared != nil && p.Shared(finalizer) {
			if n, names := v.Controls.liveHolders(finalizer); n > 0 {
				return decided(provider.Answer{Verdict: finalizev1alpha1.VerdictPresent,
					Evidence: fmt.Sprintf("the resource behind %s is shared, and %d live objects still carry it (%s): it is not gone until all of them are", finalizer, n, strings.Join(names, ", "))})
			}
		}
		// The identity the object's operator names its resource by, or none: an identity
		// read where that operator does not read it names another resource (#38).
		if why := p.IdentityUnusable(full, v.identityUsed[rule.Name]); why != "" {
			return decided(provider.Unknown("not verified: %s", why))
		}
		// Whoever wrote it: an identity the operator never acted on names a resource it
		// may never have made.
		if why := p.UnrecordedIdentity(full, finalizer); len(why) > 0 {
			return decided(provider.Unknown("not verified: %s", strings.Join(why, "; ")))
		}
		if !rule.Spec.TrustIdentityFromAnyWriter {
			if why := p.UntrustedIdentity(full, finalizer, v.identityUsed[rule.Name], rule.OperatorManagers); len(why) > 0 {
				return decided(provider.Unknown("not verified: %s; an identity that anyone who may edit the object can change is trusted only when the operator wrote it "+
					"(operatorManagers in the rule names the operator's field managers where they differ; trustIdentityFromAnyWriter trusts any writer)", strings.Join(why, "; ")))
			}
		}
		identity = p.IdentityOf(full, finalizer)
		if why := p.MalformedIdentity(identity, v.identityUsed[rule.Name]); len(why) > 0 {
			return decided(provider.Unknown("not verified: %s; an identity is used as it is, and one of another form names no resource", strings.Join(why, "; ")))
		}
		// Where the operator put the resource beyond its identity (the cluster a
		// provider-kubernetes Object was applied to), as the operator recorded it.
		if ref, ok := p.ScopeRecordOf(full); ok {
			rec, served, err := v.record(ctx, ref)
			switch {
			case err != nil:
				return reply{Answer: provider.Unknown("reading %s for preset %s: %v", ref, p.Name, err), byObject: true, readError: true}
			case !served:
				return decided(provider.Unknown("not verified: %s is not served, so where its operator put the resource (%s) cannot be read", ref.Resource, ref))
			}
			var why string
			if scope, why = p.RecordedScope(full, rec, rule.OperatorManagers, rule.Spec.TrustIdentityFromAnyWriter); why != "" {
				return decided(provider.Unknown("not verified: %s", why))
			}
			instance, instanceWhy = p.InstanceOf(full, rule.OperatorManagers, rule.Spec.TrustIdentityFromAnyWriter)
		} else if s, ok := p.ScopeOf(full); ok {
			scope = s
			instance, instanceWhy = p.InstanceOf(full, rule.OperatorManagers, rule.Spec.TrustIdentityFromAnyWriter)
		}
	}
	call, err := prov.Prepare(&provider.Request{Rule: rule.Name, Finalizer: finalizer, Object: full, Identity: identity})
	if err != nil {
		return decided(provider.Unknown("the request cannot be made from this object: %v", err))
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
		a := do()
		return reply{Answer: a, at: time.Now(), request: call.Key(), scope: scope, instance: instance, instanceWhy: instanceWhy}
	}
	a := entry(&v.mu, v.cache, rule.Name+"\x00"+call.Key())
	a.once.Do(func() { a.Answer, a.at = do(), time.Now() })
	return reply{Answer: a.Answer, at: a.at, request: call.Key(), scope: scope, instance: instance, instanceWhy: instanceWhy}
}

// record reads the object in which a preset's operator records an object's scope
// (preset.ScopeRecordOf), nil when there is none. A type that is not served (served
// false) holds none; any other failure is the cluster's, and an error.
func (v *Verifier) record(ctx context.Context, ref preset.RecordRef) (*unstructured.Unstructured, bool, error) {
	if v.mapper == nil {
		return nil, false, fmt.Errorf("no client to resolve %s with", ref.Resource)
	}
	gvr, err := v.mapper.ResourceFor(schema.ParseGroupResource(ref.Resource).WithVersion(""))
	switch {
	case apimeta.IsNoMatchError(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("resolving %s: %w", ref.Resource, err)
	}
	var client dynamic.ResourceInterface = v.dynamic.Resource(gvr)
	if ref.Namespace != "" {
		client = v.dynamic.Resource(gvr).Namespace(ref.Namespace)
	}
	rec, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && kube.IsNotFoundOf(err, gvr.GroupResource(), ref.Name) {
		return nil, true, nil
	}
	return rec, true, err
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

// checkKey names the controls of one rule and one resource type.
type checkKey struct {
	rule string
	gr   schema.GroupResource
}

// check is what a rule's controls of one resource type showed of its provider.
type check struct {
	once sync.Once
	// distrust says why the rule's Gone answers about objects of the type cannot be
	// trusted, or is empty.
	distrust string
	// unread: the check failed because the cluster could not be read (distrust says so).
	unread bool
	// unchecked: the rule requires a live control and none of the type could be asked
	// (none carries its finalizer, each was decided by the object alone, or each changed);
	// distrust says which. heldBack names the objects of the type whose Gone this alone
	// held back (under Verifier.mu): any makes the rule unable to verify.
	unchecked bool
	heldBack  map[string]bool
	// targets counts the stuck objects of the type its provider answered about, and
	// unknownTargets holds what it answered for those it answered Unknown for (under
	// Verifier.mu). When no control of the type answered, and the provider answered
	// Unknown about every stuck object, nothing shows that it works: an expired token
	// with no live object left to check it against.
	targets        int
	unknownTargets []string
	// decidedTargets counts those of targets whose Unknown the object decided: the
	// provider was not asked about them.
	decidedTargets int
	// broken: the provider called a live object gone.
	broken bool
	// identityControls counts the controls asked by an identity of the rule's preset,
	// and ownName names those whose identity was their own name: such a control cannot
	// tell a provider asked by the identity the operator uses from one that would be
	// asked by the object's name (#38).
	identityControls int
	ownName          []string
	// present counts the controls the provider answered Present for; unknown holds what
	// it answered for those it answered Unknown for.
	present int
	unknown []string
	// shapes are what the http responses of the Present answers looked like: the shape
	// a Gone of the type must have (provider.GoneShapeMismatch).
	shapes []provider.Shape
	// scopeHeldBack names, by scope (preset.ScopeOf: the ProviderConfig of a
	// provider-kubernetes Object), the objects of the type whose Gone was held back under
	// requireLive because no live control of their scope vouched for it (under
	// Verifier.mu): the rule cannot verify them, and the pass says so.
	scopeHeldBack map[string]map[string]bool
	// cannotRun is the first answer that said the provider cannot run.
	cannotRun string
	results   []finalizev1alpha1.ControlResult
}

// trust checks the rule's provider against live objects of every type the rule has
// them for, once per pass each, and says why a Gone about an object of type r cannot be
// trusted: controls of r itself must have answered Present (another type's controls do
// not vouch for it), and no control of any type may have been called gone.
// The check of r itself is returned too.
func (v *Verifier) trust(ctx context.Context, rule *Rule, r kube.Resource) (string, bool, *check) {
	own := v.check(ctx, rule, r)
	if own.broken || own.unread {
		return own.distrust, own.unread, own
	}
	for _, other := range v.Controls.Types(rule) {
		if other.GroupResource() == r.GroupResource() {
			continue
		}
		if c := v.check(ctx, rule, other); c.broken {
			return c.distrust, false, own
		}
	}
	return own.distrust, own.unread, own
}

// check asks the rule's provider about live objects of one type, once per pass.
func (v *Verifier) check(ctx context.Context, rule *Rule, r kube.Resource) *check {
	c := entry(&v.mu, v.checks, checkKey{rule: rule.Name, gr: r.GroupResource()})
	c.once.Do(func() { v.runCheck(ctx, rule, r, c) })
	return c
}

// runCheck draws controls of one type until the rule's count of them were answered by
// its provider: every answer must be Present or Unknown, and at least one Present. The
// count is of distinct objects, each asked once (Observe collects one finalizer of each).
// A control the object decides alone (retained, held, shared, an identity that is not
// the operator's) proves nothing about the provider: it is skipped, and the next drawn.
func (v *Verifier) runCheck(ctx context.Context, rule *Rule, r kube.Resource, c *check) {
	if rule.Controls == 0 {
		return
	}
	typ := r.GroupResource().String()
	requireLive := "; to act without that check, set controls.requireLive: false in the rule"
	candidates := v.Controls.For(rule, r.GroupResource())
	if len(candidates) == 0 {
		if rule.RequireLive {
			uncounted := ""
			if rule.Preset != nil {
				uncounted = " (the holders of a shared finalizer and objects an annotation holds or retains do not count: the provider is never asked about them)"
			}
			c.distrust = fmt.Sprintf("no live object carries a finalizer this rule matches among %s%s, so its provider could not be checked against one that exists%s", typ, uncounted, requireLive)
			c.unchecked = true
		}
		return
	}
	asked := 0
	var skipped []string
	// seen are the objects drawn so far: rule.Controls counts distinct objects, so an
	// object seen twice (listed again, or under another finalizer) is not drawn again.
	seen := map[types.UID]bool{}
	// requests are the requests asked so far: a live object whose request another
	// control asked already (two objects naming one instance) shows nothing more of the
	// provider, so it is not counted, and another is drawn.
	requests := map[string]bool{}
	for _, ctl := range candidates {
		if asked == rule.Controls {
			break
		}
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
		if seen[full.GetUID()] {
			continue
		}
		seen[full.GetUID()] = true
		field := finalizev1alpha1.FieldMetadataFinalizers
		if ctl.resource.IsNamespaces() && !slices.Contains(full.GetFinalizers(), ctl.finalizer) {
			field = finalizev1alpha1.FieldSpecFinalizers
		}
		if !hasFinalizer(full, finalizev1alpha1.Finalizer{Name: ctl.finalizer, Field: field}) {
			continue // it changed since the scan: not a control any more
		}
		a := v.ask(ctx, rule, full, ctl.finalizer, false)
		ref := ctl.resource.Ref(ctl.namespace, ctl.name, full.GetUID())
		if a.readError {
			// What the control's verdict needs could not be read: not the object deciding,
			// the cluster not answering.
			c.distrust, c.unread = fmt.Sprintf("what its live objects need to check its provider could not be read: %s: %s", ref, a.Evidence), true
			return
		}
		if a.byObject {
			skipped = append(skipped, fmt.Sprintf("%s: %s", ref, a.Evidence))
			continue
		}
		if requests[a.request] {
			continue
		}
		requests[a.request] = true
		asked++
		if uses, own := v.identityIsOwnName(rule, full, ctl.finalizer); uses {
			c.identityControls++
			if own {
				c.ownName = append(c.ownName, ref.String())
			}
		}
		c.results = append(c.results, finalizev1alpha1.ControlResult{Target: ref, Finalizer: ctl.finalizer, Verdict: a.Verdict, Evidence: a.Evidence})
		if a.CannotRun && c.cannotRun == "" {
			c.cannotRun = a.Evidence
		}
		switch a.Verdict {
		case finalizev1alpha1.VerdictGone:
			c.broken = true
			c.distrust = fmt.Sprintf("the provider is broken: it called %s gone (%s), but that object is live and its finalizer %s still guards something", ref, a.Evidence, ctl.finalizer)
			return
		case finalizev1alpha1.VerdictPresent:
			c.present++
			if a.Shape != nil {
				c.shapes = append(c.shapes, *a.Shape)
			}
		default:
			// Retained from a provider is not Present: it says nothing of whether the
			// provider tells present from gone.
			c.unknown = append(c.unknown, fmt.Sprintf("%s: %s: %s", ref, a.Verdict, a.Evidence))
		}
	}
	switch {
	case c.present > 0:
	case len(c.unknown) > 0:
		c.distrust = fmt.Sprintf("every live object its provider was asked about answered Unknown (%s), so it is not shown to tell present from gone among %s",
			strings.Join(c.unknown, "; "), typ)
	case !rule.RequireLive:
	case len(skipped) > 0:
		c.distrust = fmt.Sprintf("no live object among %s could check its provider: what an object decides alone proves nothing about the provider (%s)%s",
			typ, strings.Join(skipped, "; "), requireLive)
		c.unchecked = true
	default:
		c.distrust = fmt.Sprintf("the live objects among %s that this rule matches changed before they could be checked; its provider could not be checked", typ)
		c.unchecked = true
	}
}

// identityIsOwnName says whether the rule asks about o by a name of its preset's
// identity (an external name, a manifest's name: uses), and whether every such name it
// asks by is o's own name (own).
func (v *Verifier) identityIsOwnName(rule *Rule, o *unstructured.Unstructured, finalizer string) (uses, own bool) {
	p := rule.Preset
	if p == nil {
		return false, false
	}
	used := v.identityUsed[rule.Name]
	names := map[string]bool{}
	for _, id := range p.AllIdentity() {
		names[id.Name] = id.Names
	}
	own = true
	for name, value := range p.IdentityOf(o, finalizer) {
		if (used != nil && !used(name)) || !names[name] {
			continue
		}
		uses = true
		if value != o.GetName() {
			own = false
		}
	}
	return uses, uses && own
}

// notVouchedFor says why a Gone is not vouched for by a live control of its scope, or
// "": its preset puts the resource in a scope the rule cannot see (the cluster a
// provider-kubernetes Object's ProviderConfig applies to, as the provider recorded it),
// and no live control of that scope answered Present about the very object its operator
// recorded (vouchFor). The rule asks one cluster; a control applied to another vouches
// for nothing here, and neither does a namesake the provider found. No setting lifts
// it: controls.requireLive: false and controls.count: 0 cannot tell where the rule
// asks.
func (v *Verifier) notVouchedFor(ctx context.Context, rule *Rule, r kube.Resource, a reply) string {
	if a.Verdict != finalizev1alpha1.VerdictGone || a.scope == "" {
		return ""
	}
	vo := v.vouchFor(ctx, rule, r, a.scope)
	if vo.by != "" {
		return ""
	}
	var drawn []string
	for _, d := range vo.drawn {
		drawn = append(drawn, fmt.Sprintf("%s (%s)", d.ref, d.scope))
	}
	seen := "no live object of " + r.GroupResource().String() + " that the rule matches could be drawn"
	if rule.Controls == 0 {
		seen = "controls.count is 0, so no live object is drawn: set it to draw them"
	}
	if len(drawn) > 0 {
		seen = "the live controls drawn are " + strings.Join(drawn, ", ")
	}
	if len(vo.unvouched) > 0 {
		seen += "; of " + a.scope + ": " + strings.Join(vo.unvouched, "; ")
	}
	return fmt.Sprintf("the provider answered Gone (%s), but this object is of %s, which says where its operator puts its resource, and no live control of %s shows that the rule asks there (%s): "+
		"a live object of %s that the rule matches, whose recorded object the provider finds, would; controls.requireLive and controls.count do not lift this", a.Evidence, a.scope, a.scope, seen, a.scope)
}

// vouchKey names the vouching of one scope for the objects of one rule and type.
type vouchKey struct {
	checkKey
	scope string
}

// vouch is what the live controls of one rule, type and scope showed: the first that
// vouched for the scope (by), or what each of the scope answered (unvouched), and the
// scope of every control drawn (drawn).
type vouch struct {
	once      sync.Once
	by        string
	unvouched []string
	drawn     []drawnControl
}

type drawnControl struct{ ref, scope string }

// controlAsk is one candidate control asked about, once per pass: its reply, or why it
// could not be (skip).
type controlAsk struct {
	once  sync.Once
	ref   string
	reply reply
	skip  bool
}

// vouchFor draws the rule's live controls of type r until one of scope vouches for it:
// the provider answered Present about the very object its operator recorded (the UID it
// found is the recorded one). Each control is asked once per pass, whatever scopes are
// looked for (askControl).
func (v *Verifier) vouchFor(ctx context.Context, rule *Rule, r kube.Resource, scope string) *vouch {
	vo := entry(&v.mu, v.vouches, vouchKey{checkKey: checkKey{rule: rule.Name, gr: r.GroupResource()}, scope: scope})
	vo.once.Do(func() {
		for _, ctl := range v.Controls.For(rule, r.GroupResource()) {
			ca := v.askControl(ctx, rule, ctl)
			if ca.skip {
				continue
			}
			a := ca.reply
			vo.drawn = append(vo.drawn, drawnControl{ref: ca.ref, scope: a.scope})
			if a.scope != scope {
				continue
			}
			switch {
			case a.Verdict != finalizev1alpha1.VerdictPresent:
				vo.unvouched = append(vo.unvouched, fmt.Sprintf("%s: %s: %s", ca.ref, a.Verdict, a.Evidence))
			case a.instanceWhy != "":
				vo.unvouched = append(vo.unvouched, fmt.Sprintf("%s: %s", ca.ref, a.instanceWhy))
			case a.Found == "":
				vo.unvouched = append(vo.unvouched, fmt.Sprintf("%s: the provider does not say which object it found (the kubernetes provider does: the UID of the object it read), so its Present may be a namesake's", ca.ref))
			case a.Found != a.instance:
				vo.unvouched = append(vo.unvouched, fmt.Sprintf("%s: the provider found uid %s, and its operator recorded uid %s: another object of the same name", ca.ref, a.Found, a.instance))
			default:
				vo.by = ca.ref
				return
			}
		}
	})
	return vo
}

// askControl asks the rule's provider about one live control, once per pass: skipped
// when it is no control any more (gone, deleting, its finalizer gone), could not be read,
// or decided alone (its reply then has no scope).
func (v *Verifier) askControl(ctx context.Context, rule *Rule, ctl control) *controlAsk {
	key := rule.Name + "\x00" + ctl.resource.GroupResource().String() + "\x00" + ctl.namespace + "\x00" + ctl.name + "\x00" + ctl.finalizer
	ca := entry(&v.mu, v.controlAsks, key)
	ca.once.Do(func() {
		full, _, err := v.fetch(ctx, ctl.resource, ctl.namespace, ctl.name)
		if err != nil || full == nil || full.GetDeletionTimestamp() != nil {
			ca.skip = true
			return
		}
		field := finalizev1alpha1.FieldMetadataFinalizers
		if ctl.resource.IsNamespaces() && !slices.Contains(full.GetFinalizers(), ctl.finalizer) {
			field = finalizev1alpha1.FieldSpecFinalizers
		}
		if !hasFinalizer(full, finalizev1alpha1.Finalizer{Name: ctl.finalizer, Field: field}) {
			ca.skip = true
			return
		}
		ca.ref = ctl.resource.Ref(ctl.namespace, ctl.name, full.GetUID()).String()
		ca.reply = v.ask(ctx, rule, full, ctl.finalizer, false)
		ca.skip = ca.reply.readError || ca.reply.byObject
	})
	return ca
}

// notTheAPIsOwn says why a Gone from an http response is not the API's own answer, given
// what the rule's controls of the same type answered Present in (their media type and
// Server: a proxy's HTML 404, an empty 404 where the API answers JSON, a 404 from another
// server), or "". The evidence keeps the answer and names both shapes.
func notTheAPIsOwn(a provider.Answer, c *check) string {
	if a.Verdict != finalizev1alpha1.VerdictGone || a.Shape == nil {
		return ""
	}
	var present []provider.Shape
	if c != nil {
		present = c.shapes
	}
	if why := provider.GoneShapeMismatch(*a.Shape, present); why != "" {
		return a.Evidence + ": not the API's own answer: " + why
	}
	return ""
}

// RuleStatuses say, for each rule whose controls were checked in this pass or that
// could not verify, what they showed; a broken rule first, then a rule that could not
// verify.
func (v *Verifier) RuleStatuses() []finalizev1alpha1.RuleStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	byRule := map[string]*finalizev1alpha1.RuleStatus{}
	status := func(name string) *finalizev1alpha1.RuleStatus {
		st := byRule[name]
		if st == nil {
			st = &finalizev1alpha1.RuleStatus{Rule: name}
			byRule[name] = st
		}
		return st
	}
	keys := make([]checkKey, 0, len(v.checks))
	for k := range v.checks {
		keys = append(keys, k)
	}
	// Broken types first, then by type: the distrust of a broken rule leads with why.
	sort.Slice(keys, func(i, j int) bool {
		if bi, bj := v.checks[keys[i]].broken, v.checks[keys[j]].broken; bi != bj {
			return bi
		}
		return keys[i].gr.String() < keys[j].gr.String()
	})
	// cannot holds, by rule, why each resource type of it could verify nothing: every
	// control of the type asked answered Unknown (another type's Present does not vouch
	// for it), or a Gone of the type was held back because no control of it could be
	// asked.
	cannot, cannotRun := map[string][]string{}, map[string]string{}
	for _, k := range keys {
		c := v.checks[k]
		st := status(k.rule)
		st.Broken = st.Broken || c.broken
		if c.distrust != "" {
			if st.Distrust != "" {
				st.Distrust += "; "
			}
			st.Distrust += c.distrust
		}
		st.Controls = append(st.Controls, c.results...)
		if c.present > 0 && c.identityControls > 0 && len(c.ownName) == c.identityControls {
			st.Warnings = append(st.Warnings, fmt.Sprintf("its controls of %s cannot tell whether the identity it asks by is the one the operator uses: "+
				"each was asked by its own name (%s), so a rule reading the wrong field would have passed them too; a live object whose identity differs from its name would tell",
				k.gr.String(), strings.Join(firstN(c.ownName, 5), ", ")))
		}
		switch typ := k.gr.String(); {
		case c.broken:
		case c.present == 0 && len(c.unknown) > 0:
			cannot[k.rule] = append(cannot[k.rule], fmt.Sprintf("every live object its provider was asked about answered Unknown among %s (%s)", typ, strings.Join(c.unknown, "; ")))
		case c.unchecked && len(c.heldBack) > 0:
			cannot[k.rule] = append(cannot[k.rule], fmt.Sprintf("no live control of %s could be asked, so the Gone of %s was held back: %s",
				typ, heldBackNames(c.heldBack), c.distrust))
		case len(c.scopeHeldBack) > 0:
			var held []string
			for _, scope := range slices.Sorted(maps.Keys(c.scopeHeldBack)) {
				held = append(held, fmt.Sprintf("of %s, %s", scope, heldBackNames(c.scopeHeldBack[scope])))
			}
			why := "a live object of each that the rule matches, whose recorded object the provider finds, would"
			if r := v.policy.ruleNamed(k.rule); r != nil && r.Controls == 0 {
				why = "controls.count is 0, so none is drawn: set it to draw them"
			}
			cannot[k.rule] = append(cannot[k.rule], fmt.Sprintf("no live control of %s showed that the rule asks where their operator put the resources of the objects %s, so their Gone was held back: %s",
				typ, strings.Join(held, "; "), why))
		case c.present == 0 && len(c.unknown) == 0 && c.targets > 0 && len(c.unknownTargets) == c.targets && c.decidedTargets == 0:
			cannot[k.rule] = append(cannot[k.rule], fmt.Sprintf("no live control of %s answered, and its provider answered Unknown about every stuck object of it (%s), so nothing shows that it works",
				typ, strings.Join(firstN(c.unknownTargets, 3), "; ")))
		case c.present == 0 && len(c.unknown) == 0 && c.targets > 0 && len(c.unknownTargets) == c.targets:
			cannot[k.rule] = append(cannot[k.rule], fmt.Sprintf("no live control of %s answered, and every stuck object of it is Unknown, %d of %d without its provider being asked (%s), so nothing shows that it can verify one",
				typ, c.decidedTargets, c.targets, strings.Join(firstN(c.unknownTargets, 3), "; ")))
		}
		if cannotRun[k.rule] == "" {
			cannotRun[k.rule] = c.cannotRun
		}
	}
	for name, why := range v.cannotRun {
		if cannotRun[name] == "" {
			cannotRun[name] = why
		}
	}
	for name, why := range cannotRun {
		if why != "" {
			status(name).CannotVerify = why
		}
	}
	for name, st := range byRule {
		if st.CannotVerify == "" && !st.Broken && len(cannot[name]) > 0 {
			st.CannotVerify = strings.Join(cannot[name], "; ")
		}
	}
	for name, err := range v.errs {
		st := status(name)
		st.Distrust, st.CannotVerify = "its provider cannot run: "+err.Error(), err.Error()
	}
	out := make([]finalizev1alpha1.RuleStatus, 0, len(byRule))
	for _, st := range byRule {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Broken != out[j].Broken {
			return out[i].Broken
		}
		if ci, cj := out[i].CannotVerify != "", out[j].CannotVerify != ""; ci != cj {
			return ci
		}
		return out[i].Rule < out[j].Rule
	})
	return out
}

// candidatesPerControl bounds the live objects collected per rule and type: several for
// each control asked, so that those which prove nothing (retained, held, an identity
// that is not the operator's) can be replaced.
const candidatesPerControl = 4

// Controls collects, while a scan lists, live objects that carry a finalizer a rule
// matches, per rule and resource type: the objects its provider is checked with.
type Controls struct {
	policy *Policy
	mu     sync.Mutex
	byRule map[checkKey][]control
	// types are, by rule, the resource types that have candidates, in the order seen.
	types map[string][]kube.Resource
	// holders count the live objects that carry a shared finalizer, and name a few.
	holders map[string]*holders
}

type holders struct {
	count int
	names []string
}

type control struct {
	resource        kube.Resource
	namespace, name string
	finalizer       string
}

// newControls collects controls for the rules of p.
func newControls(p *Policy) *Controls {
	return &Controls{policy: p, byRule: map[checkKey][]control{}, types: map[string][]kube.Resource{}, holders: map[string]*holders{}}
}

// Observe looks at one listed object; a scan calls it for every object, concurrently.
func (c *Controls) Observe(r kube.Resource, meta *metav1.ObjectMeta, ns *corev1.Namespace) {
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
	// A control is an object: one object is asked about once per rule, under the first
	// of its finalizers the rule would ask about, however many the rule matches. Asked
	// once per finalizer, an object with two would fill two of the rule's controls, and a
	// second live object, the one that could show the provider broken, would never be
	// asked.
	var taken []string
	for _, f := range finalizers {
		if !c.policy.MatchesFinalizer(f) {
			continue
		}
		rule := c.policy.Match(s, f)
		if rule == nil {
			continue
		}
		p := rule.Preset
		if p != nil && p.Matches(f) && p.Shared != nil && p.Shared(f) {
			// Its live holders decide its verdict, never the provider: not a control. Every
			// live holder counts, whatever else the object carries.
			c.hold(f, r.Ref(meta.Namespace, meta.Name, "").String())
			continue
		}
		if slices.Contains(taken, rule.Name) {
			continue
		}
		key := checkKey{rule: rule.Name, gr: r.GroupResource()}
		if rule.Controls == 0 || c.full(key, rule) || (p != nil && p.Matches(f) && decidedByMetadata(p, meta, f)) {
			continue
		}
		taken = append(taken, rule.Name)
		c.mu.Lock()
		if n := len(c.byRule[key]); n < rule.Controls*candidatesPerControl {
			if n == 0 {
				c.types[rule.Name] = append(c.types[rule.Name], r)
			}
			c.byRule[key] = append(c.byRule[key], control{resource: r, namespace: meta.Namespace, name: meta.Name, finalizer: f})
		}
		c.mu.Unlock()
	}
}

// full reports whether enough candidates of one rule and type were collected.
func (c *Controls) full(key checkKey, rule *Rule) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byRule[key]) >= rule.Controls*candidatesPerControl
}

// decidedByMetadata reports whether the object's annotations alone hold or retain it:
// the provider would not be asked about it, so it is not worth collecting. Settings in
// its spec or its namespace are read when it is checked.
func decidedByMetadata(p *preset.Preset, meta *metav1.ObjectMeta, finalizer string) bool {
	if len(meta.Annotations) == 0 {
		return false
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAnnotations(meta.Annotations)
	if _, held := p.Held(u, nil, finalizer); held {
		return true
	}
	_, retained := p.Retained(u, nil, finalizer)
	return retained
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

// For returns the candidate controls found for rule among objects of gr.
func (c *Controls) For(rule *Rule, gr schema.GroupResource) []control {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.byRule[checkKey{rule: rule.Name, gr: gr}])
}

// Types returns the resource types rule has candidate controls of.
func (c *Controls) Types(rule *Rule) []kube.Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.types[rule.Name])
}

// heldBackNames names a few of the objects whose Gone was held back, and how many more.
func heldBackNames(m map[string]bool) string {
	names := sortedKeys(m)
	if len(names) > 3 {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
	}
	return strings.Join(names, ", ")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// firstN is the first n of s, and how many more.
func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}

// entry is m[key], made on first use; mu guards m.
func entry[K comparable, V any](mu *sync.Mutex, m map[K]*V, key K) *V {
	mu.Lock()
	defer mu.Unlock()
	e, ok := m[key]
	if !ok {
		e = new(V)
		m[key] = e
	}
	return e
}
