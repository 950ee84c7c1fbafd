package doctor

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/version"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// A CRD whose conversion webhook fails: objects stored at one version cannot be read at
// another. Every list of another version fails (the scan's, kubectl's, the namespace
// controller's) in the namespaces that hold such objects and, once the API server's watch
// cache of the type gives up initializing ("storage is (re)initializing"), in every
// namespace (kube v1.36, observed). The namespace controller of kube-controller-manager
// v1.36 deletes and then lists, in every namespace it deletes (once the namespace's pods
// are gone), every namespaced type that supports delete, at its preferred version
// (discovery's ServerPreferredNamespacedResources): a namespace being deleted cannot
// finish while that list fails there. A namespace is blamed on the webhook only when its
// own conditions, or a list of the type in it made now, tie it to the CRD.

// conversionCRD is what the doctor reads of a CRD whose conversion webhook fails.
type conversionCRD struct {
	// Name is the CRD's name, resolved from discovery or from the CRDs' spec.group and
	// spec.names.kind; empty when it could not be resolved (never guessed).
	Name, Group, Kind, Resource string
	// Storage is the storage version; Versions every version in spec order, served or
	// not; Served the served ones; Stored the versions status.storedVersions says objects
	// may be stored at.
	Storage  string
	Versions []string
	Served   []string
	Stored   []string
	Service  *types.NamespacedName
	URL      string
	// Read is false when the CRD could not be read; only what the API server said is known.
	Read bool
	// Listed is the version whose lists fail: the one the scan and the namespace
	// controller list (the preferred version); nil when not known.
	Listed *schema.GroupVersionResource
	// unresolved says why the name could not be resolved.
	unresolved string
}

// label names the CRD for people after "CRD": its name, or what is known of it.
func (c *conversionCRD) label() string {
	if c.Name != "" {
		return c.Name
	}
	return fmt.Sprintf("with kind %s in group %s", c.Kind, c.Group)
}

// typeName names its type for people: the CRD's name, or its kind and group.
func (c *conversionCRD) typeName() string {
	if c.Name != "" {
		return c.Name
	}
	return fmt.Sprintf("the objects of kind %s in group %s", c.Kind, c.Group)
}

// subject is the root cause's subject: the CRD by name, or by kind and group when its
// name is not known (a CRD's name is lower case, so the two cannot be confused).
func (c *conversionCRD) subject() finalizev1alpha1.Subject {
	if c.Name != "" {
		return finalizev1alpha1.Subject{Kind: "CustomResourceDefinition", Name: c.Name}
	}
	return finalizev1alpha1.Subject{Kind: "CustomResourceDefinition", Name: c.Kind + "." + c.Group}
}

// blockers names the CRD as what the namespace waits for, when its name is known.
func (c *conversionCRD) blockers(problem string) []finalizev1alpha1.Blocker {
	if c.Name == "" {
		return nil
	}
	return []finalizev1alpha1.Blocker{{Target: crdsResource.Ref("", c.Name, ""), Message: "conversion webhook: " + problem}}
}

// listedVersion is "v2", or "its preferred version" when not known.
func (c *conversionCRD) listedVersion() string {
	if c.Listed == nil {
		return "its preferred version"
	}
	return c.Listed.Version
}

func init() {
	register(family{causes: []Cause{
		{Reason: finalizev1alpha1.ReasonConversionWebhookUnavailable, Priority: 0,
			Help: "a CRD's conversion webhook fails: its lists fail, and so does the deletion of every namespace where the namespace controller's list of the type fails",
			Doc:  "a CRD's conversion webhook fails (its service does not exist or has no ready endpoints, looked up now; else TLS, a refused connection or a timeout, as the API server reported it), and the namespace is tied to it: its own conditions name the failure and the same list made now still fails, or (no conditions yet) a list of the type in that namespace made now fails with the conversion error. The CRD is the root cause of every namespace it blocks; the scan's `incomplete` entry for the type has the same reason and says the same"},
	}})
}

// conversion is the diagnosis of one CRD's failing conversion webhook, said the same way
// for every namespace it blocks and in the scan's incomplete entry.
type conversion struct {
	crd           *conversionCRD
	fail          scan.ConversionFailure
	problem       string // why the webhook fails
	message, next string
	// lists are the lists of the type made now, by namespace (listNow).
	lists map[string]scan.LiveList
}

// conversionOf diagnoses the failing conversion webhook of fail's CRD, cached per CRD.
func (d *diagnoser) conversionOf(fail scan.ConversionFailure) *conversion {
	crd := d.resolveConversionCRD(fail)
	key := crd.Name
	if key == "" {
		key = crd.Kind + "." + crd.Group
	}
	return once(d.f, conversionKey(key), func() *conversion { return d.diagnoseConversion(crd, fail) })
}

// conversionKey keys the diagnosis of one CRD's failing conversion webhook; crdsKey
// every CRD, listed once.
type (
	conversionKey string
	crdsKey       struct{}
)

// crds are every CRD and the error of their list.
type crds struct {
	items []*unstructured.Unstructured
	err   error
}

func (d *diagnoser) diagnoseConversion(crd *conversionCRD, fail scan.ConversionFailure) *conversion {
	c := &conversion{crd: crd, fail: fail, problem: d.webhookProblem(crd, fail), lists: map[string]scan.LiveList{}}
	via := ""
	switch {
	case crd.Service != nil:
		via = " (service " + crd.Service.String() + ")"
	case crd.URL != "":
		via = " (" + crd.URL + ")"
	case fail.Service != "":
		via = " (service " + fail.Service + ")"
	}
	what := crd.Resource
	if what == "" {
		what = "its objects"
	}
	if crd.Name == "" {
		via += " (its name could not be resolved: " + crd.unresolved + ")"
	}
	c.message = fmt.Sprintf("the conversion webhook of CRD %s%s fails: %s; objects stored at %s cannot be read at another version, so lists of %s at %s fail (kubectl's, this scan's, the namespace controller's): in the namespaces that hold such objects, and, once the API server's watch cache of the type cannot initialize, in every namespace. The namespace controller lists every namespaced type at its preferred version in each namespace it deletes (once the namespace's pods are gone), so no namespace being deleted can finish while that list fails there",
		crd.label(), via, c.problem, fail.From, what, crd.listedVersion())
	c.next = conversionNext(crd, fail, c.problem)
	return c
}

// resolveConversionCRD finds the CRD of a failed conversion by what names it: the type
// the scan could not list, a type discovery served with that group and kind, else the
// CRD whose spec.group and spec.names.kind are the failure's. A name not found that way
// is said unresolved, never guessed.
func (d *diagnoser) resolveConversionCRD(fail scan.ConversionFailure) *conversionCRD {
	crd := &conversionCRD{Group: fail.From.Group, Kind: fail.Kind}
	for _, in := range d.f.res.Incomplete {
		if in.Reason != finalizev1alpha1.ReasonConversionWebhookUnavailable {
			continue
		}
		for _, f := range scan.ConversionFailures(in.Message) {
			if f.From.Group == fail.From.Group && f.Kind == fail.Kind {
				crd.Name = in.Resource + "." + fail.From.Group
				if gv, err := schema.ParseGroupVersion(in.GroupVersion); err == nil {
					gvr := gv.WithResource(in.Resource)
					crd.Listed = &gvr
				}
			}
		}
		if crd.Name != "" {
			break
		}
	}
	if crd.Name == "" {
		for _, r := range d.f.res.Resources {
			if r.Group == fail.From.Group && r.Kind == fail.Kind {
				crd.Name = r.Resource + "." + r.Group
				gvr := r.GroupVersionResource
				crd.Listed = &gvr
				break
			}
		}
	}
	var u *unstructured.Unstructured
	if crd.Name == "" {
		u = d.crdOfKind(crd)
	}
	if crd.Name == "" {
		return crd
	}
	if i := strings.Index(crd.Name, "."); i > 0 {
		crd.Resource = crd.Name[:i]
	}
	if u == nil {
		var err error
		if u, err = d.f.dyn.Resource(crdsResource.GroupVersionResource).Get(d.f.ctx, crd.Name, metav1.GetOptions{}); err != nil {
			d.f.warnf("could not read customresourcedefinition %s, so its conversion webhook is described only as the API server reported it: %v", crd.Name, err)
			return crd
		}
	}
	readConversionCRD(crd, u)
	return crd
}

// crdOfKind finds, among the CRDs (one list, once), the one whose spec.group and
// spec.names.kind are crd's, and sets its name and the version lists fail at: its
// preferred version, the highest served one in Kubernetes' version order.
func (d *diagnoser) crdOfKind(crd *conversionCRD) *unstructured.Unstructured {
	all := once(d.f, crdsKey{}, func() crds {
		var all crds
		all.err = d.f.each(func(opts metav1.ListOptions) (runtime.Object, error) {
			return d.f.dyn.Resource(crdsResource.GroupVersionResource).List(d.f.ctx, opts)
		}, metav1.ListOptions{}, func(obj runtime.Object) error {
			all.items = append(all.items, obj.(*unstructured.Unstructured).DeepCopy())
			return nil
		})
		if all.err != nil {
			d.f.warnf("could not list customresourcedefinitions to name the CRD of a failing conversion webhook: %v", all.err)
		}
		return all
	})
	if all.err != nil {
		crd.unresolved = "the CRDs could not be listed: " + all.err.Error()
		return nil
	}
	for _, u := range all.items {
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
		plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
		if group != crd.Group || kind != crd.Kind {
			continue
		}
		crd.Name = u.GetName()
		preferred := ""
		versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		for _, v := range versions {
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			n, _ := m["name"].(string)
			if served, _ := m["served"].(bool); served && (preferred == "" || version.CompareKubeAwareVersionStrings(n, preferred) > 0) {
				preferred = n
			}
		}
		if preferred != "" && plural != "" {
			gvr := schema.GroupVersionResource{Group: group, Version: preferred, Resource: plural}
			crd.Listed = &gvr
		}
		return u
	}
	crd.unresolved = fmt.Sprintf("no CRD has spec.group %s and spec.names.kind %s", crd.Group, crd.Kind)
	return nil
}

// readConversionCRD reads the versions and webhook of a CRD object into crd.
func readConversionCRD(crd *conversionCRD, u *unstructured.Unstructured) {
	crd.Read = true
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		n, _ := m["name"].(string)
		crd.Versions = append(crd.Versions, n)
		if served, _ := m["served"].(bool); served {
			crd.Served = append(crd.Served, n)
		}
		if storage, _ := m["storage"].(bool); storage {
			crd.Storage = n
		}
	}
	crd.Stored, _, _ = unstructured.NestedStringSlice(u.Object, "status", "storedVersions")
	if ns, ok, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "service", "namespace"); ok {
		n, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "service", "name")
		crd.Service = &types.NamespacedName{Namespace: ns, Name: n}
	}
	crd.URL, _, _ = unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "url")
}

// webhookProblem says why the webhook fails: what its service is missing, looked up now,
// else what the API server observed (TLS, a refused connection, a timeout).
func (d *diagnoser) webhookProblem(crd *conversionCRD, fail scan.ConversionFailure) string {
	if crd.Service != nil {
		st := d.f.service(*crd.Service)
		if st.Err != nil {
			d.f.warnf("could not check service %s of the conversion webhook of %s: %v", crd.Service, crd.label(), st.Err)
		} else if p := st.describe(*crd.Service); p != "" {
			return p
		}
	}
	return fail.Problem()
}

// listNow lists the CRD's failing version in namespace ns now, as the namespace
// controller does (the whole list, no limit: served as it serves the controller's), once
// per namespace.
func (d *diagnoser) listNow(c *conversion, ns string) scan.LiveList {
	if l, ok := c.lists[ns]; ok {
		return l
	}
	l := scan.LiveList{Err: fmt.Errorf("which version of %s the namespace controller lists is not known", c.crd.typeName())}
	if c.crd.Listed != nil {
		l = scan.ListNow(d.f.ctx, d.f.kube.Discovery(), d.f.dyn, *c.crd.Listed, ns)
	}
	c.lists[ns] = l
	return l
}

// listCommand is the list listNow makes, for people.
func (c *conversion) listCommand(ns string) string {
	if c.crd.Listed == nil {
		return ""
	}
	return scan.ListNowCommand(*c.crd.Listed, ns)
}

// conversionNext is the next step that works: restore the webhook; or, when its
// operator is gone for good and every object is stored at the storage version, stop
// serving the others, which needs no conversion and changes nothing stored. That is
// offered only when the API server's failure agrees: the objects it failed to convert
// are stored at the storage version, and the version lists fail at is another (a list
// of the storage version itself would fail whatever is served).
func conversionNext(crd *conversionCRD, fail scan.ConversionFailure, problem string) string {
	var restore string
	switch {
	case crd.Service != nil && strings.Contains(problem, "TLS"):
		restore = fmt.Sprintf("restore the conversion webhook of CRD %s: its serving certificate must be signed by the CRD's spec.conversion.webhook.clientConfig.caBundle (check service %s and whoever injects the CA)", crd.label(), crd.Service)
	case crd.Service != nil:
		restore = fmt.Sprintf("restore the conversion webhook of CRD %s: service %s and its ready endpoints (kubectl get svc,endpointslices -n %s)", crd.label(), crd.Service, crd.Service.Namespace)
	case crd.URL != "":
		restore = fmt.Sprintf("restore the conversion webhook of CRD %s at %s", crd.label(), crd.URL)
	case crd.Name == "":
		restore = fmt.Sprintf("restore the conversion webhook of the CRD %s; find it: kubectl get crd -o custom-columns=NAME:.metadata.name,GROUP:.spec.group,KIND:.spec.names.kind | grep %s", crd.label(), crd.Kind)
	default:
		restore = fmt.Sprintf("restore the conversion webhook of CRD %s", crd.label())
	}
	if !crd.Read {
		return restore
	}
	list := fmt.Sprintf("kubectl get %s.%s.%s -A lists its objects at the storage version, without conversion", crd.Resource, crd.Storage, crd.Group)
	if crd.Storage == "" || !slices.Contains(crd.Served, crd.Storage) {
		return restore + "; the storage version is not served, so without the webhook no object can be read"
	}
	if fail.From.Version != "" && fail.From.Version != crd.Storage {
		return fmt.Sprintf("%s. The API server failed to convert objects stored at %s, not at the storage version %s, so some objects are stored at %s (whatever status.storedVersions says) and cannot be read at another version without the webhook: bring it back, even only long enough to rewrite every object at %s (read and write each unchanged, as kube-storage-version-migrator does); serving fewer versions cannot help",
			restore, fail.From, crd.Storage, fail.From.Version, crd.Storage)
	}
	if crd.Listed != nil && crd.Listed.Version == crd.Storage {
		return fmt.Sprintf("%s. Lists fail at the storage version %s itself, so serving fewer versions cannot help: bring the webhook back", restore, crd.Storage)
	}
	if len(crd.Stored) == 1 && crd.Stored[0] == crd.Storage {
		var ops []string
		var others []string
		for i, v := range crd.Versions {
			if v == crd.Storage || !slices.Contains(crd.Served, v) {
				continue
			}
			others = append(others, v)
			ops = append(ops, fmt.Sprintf(`{"op":"test","path":"/spec/versions/%d/name","value":%q},{"op":"replace","path":"/spec/versions/%d/served","value":false}`, i, v, i))
		}
		if len(ops) == 0 {
			return restore + "; " + list
		}
		return fmt.Sprintf("%s. If its operator is gone for good: status.storedVersions says every object is stored at %s, and the API server failed converting objects stored at %s, so serving only %s needs no conversion and changes nothing stored (clients of %s then get NotFound): kubectl patch crd %s --type=json -p '[%s]'; %s",
			restore, crd.Storage, crd.Storage, crd.Storage, strings.Join(others, ", "), crd.Name, strings.Join(ops, ","), list)
	}
	var older []string
	for _, v := range crd.Stored {
		if v != crd.Storage {
			older = append(older, v)
		}
	}
	return fmt.Sprintf("%s. Objects may be stored at %s (status.storedVersions), and without the webhook none can be read at another version: bring it back, even only long enough to rewrite every object at %s (read and write each unchanged, as kube-storage-version-migrator does); only then may status.storedVersions drop %s and the other versions stop being served",
		restore, strings.Join(crd.Stored, " and "), crd.Storage, strings.Join(older, ", "))
}

// conversionFindings: the namespace controller reports that it cannot list a type of
// the namespace because the type's conversion webhook fails. Each report is checked now
// with the same list: one that succeeds now is stale (stale lists those CRDs' reports),
// and the webhook is not blamed for the namespace.
func (d *diagnoser) conversionFindings(o *kube.Object) (fs []finding, stale []string) {
	ns := o.Meta.Name
	seen := map[string]bool{}
	for _, c := range o.Namespace.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		for _, fail := range scan.ConversionFailures(c.Message) {
			cv := d.conversionOf(fail)
			label := cv.crd.label()
			if seen[label] {
				continue
			}
			seen[label] = true
			live := d.listNow(cv, ns)
			if live.OK {
				when := "earlier"
				if !c.LastTransitionTime.IsZero() {
					when = ago(d.f.now, c.LastTransitionTime.Time) + " ago"
				}
				stale = append(stale, fmt.Sprintf("the namespace controller reported %s (condition %s) that the conversion webhook of CRD %s failed, but the same list made now succeeds (%s), so that report is stale",
					when, c.Type, label, cv.listCommand(ns)))
				continue
			}
			msg := fmt.Sprintf("the namespace controller cannot list %s in the namespace: %s", cv.crd.typeName(), cv.message)
			switch {
			case live.Failing:
				msg += fmt.Sprintf("; the same list made now fails too (%s)", cv.listCommand(ns))
			case live.Err != nil:
				msg += fmt.Sprintf("; whether the same list fails now could not be checked: %v", live.Err)
			}
			fd := rooted(finalizev1alpha1.ReasonConversionWebhookUnavailable, cv.crd.subject(), msg, cv.next, cv.message)
			fd.blockers = cv.crd.blockers(cv.problem)
			fs = append(fs, fd)
		}
	}
	return fs, stale
}

// unreportedConversions: a namespace the namespace controller has not reported on, in
// a cluster where the scan found conversion webhooks failing. The webhook is blamed for
// it only when a list of the type in the namespace, made now as the controller makes
// it, fails with the conversion error; otherwise what is known is said as context.
func (d *diagnoser) unreportedConversions(o *kube.Object, terminating time.Duration) (fs []finding, notes []string) {
	ns := o.Meta.Name
	seen := map[string]bool{}
	for _, in := range d.f.res.Incomplete {
		if in.Reason != finalizev1alpha1.ReasonConversionWebhookUnavailable {
			continue
		}
		fails := scan.ConversionFailures(in.Message)
		if len(fails) == 0 {
			continue
		}
		cv := d.conversionOf(fails[0])
		label := cv.crd.label()
		if seen[label] {
			continue
		}
		seen[label] = true
		live := d.listNow(cv, ns)
		switch {
		case live.Failing:
			fd := rooted(finalizev1alpha1.ReasonConversionWebhookUnavailable, cv.crd.subject(),
				fmt.Sprintf("the namespace controller has not reported on the namespace %s after the deletion began, and a list of %s in it made now, as the namespace controller makes it, fails (%s): %s",
					duration.HumanDuration(terminating), cv.crd.typeName(), cv.listCommand(ns), cv.message), cv.next, cv.message)
			fd.blockers = cv.crd.blockers(cv.problem)
			fs = append(fs, fd)
		case live.OK:
			notes = append(notes, fmt.Sprintf("the conversion webhook of CRD %s fails elsewhere, but a list of it in this namespace made now succeeds (%s), so it does not block this namespace", label, cv.listCommand(ns)))
		default:
			notes = append(notes, fmt.Sprintf("the conversion webhook of CRD %s fails elsewhere; whether it blocks this namespace could not be checked (%v)", label, live.Err))
		}
	}
	return fs, notes
}

var remainingRE = regexp.MustCompile(`(\d+) remaining`)

// conversionExplains reports whether the conversion failures account for every type
// the namespace controller says it failed to delete.
func conversionExplains(msg string) bool {
	n := len(scan.ConversionFailures(msg))
	if n == 0 {
		return false
	}
	if m := remainingRE.FindStringSubmatch(msg); m != nil {
		want, err := strconv.Atoi(m[1])
		return err == nil && want == n
	}
	return true
}

// describeConversionIncomplete says in the scan's incomplete entries what the doctor
// found about each failing conversion webhook, the same words as its root cause.
func (d *diagnoser) describeConversionIncomplete() {
	for i := range d.f.res.Incomplete {
		in := &d.f.res.Incomplete[i]
		if in.Reason != finalizev1alpha1.ReasonConversionWebhookUnavailable {
			continue
		}
		fails := scan.ConversionFailures(in.Message)
		if len(fails) == 0 {
			continue
		}
		cv := d.conversionOf(fails[0])
		raw := in.Message
		if i := strings.Index(raw, "the API server said: "); i >= 0 {
			raw = raw[i:]
		}
		in.Message = cv.message + "; " + raw
	}
}
