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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// A CRD whose conversion webhook fails: objects stored at one version cannot be read at
// another. Every list of another version fails (the scan's, kubectl's, the namespace
// controller's) in the namespaces that hold such objects and, once the API server's watch
// cache of the type gives up initializing ("storage is (re)initializing"), in every
// namespace: then no namespace of the cluster can finish deleting (kube v1.36, observed).

// conversionCRD is what the doctor reads of a CRD whose conversion webhook fails.
type conversionCRD struct {
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
}

// conversion is the diagnosis of one CRD's failing conversion webhook, said the same way
// for every namespace it blocks and in the scan's incomplete entry.
type conversion struct {
	crd           *conversionCRD
	problem       string // why the webhook fails
	message, next string
}

// conversions caches the diagnosis per CRD name.
func (d *diagnoser) conversionOf(fail scan.ConversionFailure) *conversion {
	name := d.crdNameOf(fail)
	if c, ok := d.conversions[name]; ok {
		return c
	}
	if d.conversions == nil {
		d.conversions = map[string]*conversion{}
	}
	crd := d.readConversionCRD(name, fail)
	c := &conversion{crd: crd, problem: d.webhookProblem(crd, fail)}
	via := ""
	switch {
	case crd.Service != nil:
		via = " (service " + crd.Service.String() + ")"
	case crd.URL != "":
		via = " (" + crd.URL + ")"
	case fail.Service != "":
		via = " (service " + fail.Service + ")"
	}
	c.message = fmt.Sprintf("the conversion webhook of CRD %s%s fails: %s; objects stored at %s cannot be read at another version, so lists of %s at other versions fail (kubectl's, this scan's, the namespace controller's): first in the namespaces that hold them, then, once the API server's watch cache of the type cannot initialize, in every namespace, and no namespace can finish deleting",
		name, via, c.problem, fail.From, crd.Resource)
	c.next = conversionNext(crd, c.problem)
	d.conversions[name] = c
	return c
}

// crdNameOf finds the CRD of a failed conversion: by the type the scan could not list,
// else by the kind among the types discovery served.
func (d *diagnoser) crdNameOf(fail scan.ConversionFailure) string {
	for _, in := range d.f.res.Incomplete {
		if in.Reason != finalizev1alpha1.ReasonConversionWebhookUnavailable {
			continue
		}
		for _, f := range scan.ConversionFailures(in.Message) {
			if f.From.Group == fail.From.Group && f.Kind == fail.Kind {
				return in.Resource + "." + fail.From.Group
			}
		}
	}
	for _, r := range d.f.res.Resources {
		if r.Group == fail.From.Group && r.Kind == fail.Kind {
			return r.Resource + "." + r.Group
		}
	}
	return strings.ToLower(fail.Kind) + "s." + fail.From.Group // the convention, when nothing else tells
}

func (d *diagnoser) readConversionCRD(name string, fail scan.ConversionFailure) *conversionCRD {
	crd := &conversionCRD{Name: name, Group: fail.From.Group, Kind: fail.Kind, Resource: name}
	if i := strings.Index(name, "."); i > 0 {
		crd.Resource = name[:i]
	}
	u, err := d.f.dyn.Resource(crdsResource.GroupVersionResource).Get(d.f.ctx, name, metav1.GetOptions{})
	if err != nil {
		d.f.warnf("could not read customresourcedefinition %s, so its conversion webhook is described only as the API server reported it: %v", name, err)
		return crd
	}
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
	return crd
}

// webhookProblem says why the webhook fails: what its service is missing, looked up now,
// else what the API server observed (TLS, a refused connection, a timeout).
func (d *diagnoser) webhookProblem(crd *conversionCRD, fail scan.ConversionFailure) string {
	if crd.Service != nil {
		st := d.f.service(*crd.Service)
		if st.Err != nil {
			d.f.warnf("could not check service %s of the conversion webhook of %s: %v", crd.Service, crd.Name, st.Err)
		} else if p := st.describe(*crd.Service); p != "" {
			return p
		}
	}
	return fail.Problem()
}

// conversionNext is the next step that works: restore the webhook; or, when its
// operator is gone for good and every object is stored at one version, stop serving the
// others, which needs no conversion and changes nothing stored.
func conversionNext(crd *conversionCRD, problem string) string {
	var restore string
	switch {
	case crd.Service != nil && strings.Contains(problem, "TLS"):
		restore = fmt.Sprintf("restore the conversion webhook of CRD %s: its serving certificate must be signed by the CRD's spec.conversion.webhook.clientConfig.caBundle (check service %s and whoever injects the CA)", crd.Name, crd.Service)
	case crd.Service != nil:
		restore = fmt.Sprintf("restore the conversion webhook of CRD %s: service %s and its ready endpoints (kubectl get svc,endpointslices -n %s)", crd.Name, crd.Service, crd.Service.Namespace)
	case crd.URL != "":
		restore = fmt.Sprintf("restore the conversion webhook of CRD %s at %s", crd.Name, crd.URL)
	default:
		restore = fmt.Sprintf("restore the conversion webhook of CRD %s", crd.Name)
	}
	if !crd.Read {
		return restore
	}
	list := fmt.Sprintf("kubectl get %s.%s.%s -A lists its objects at the storage version, without conversion", crd.Resource, crd.Storage, crd.Group)
	if crd.Storage == "" || !slices.Contains(crd.Served, crd.Storage) {
		return restore + "; the storage version is not served, so without the webhook no object can be read"
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
		return fmt.Sprintf("%s. If its operator is gone for good: status.storedVersions says every object is stored at %s, so serving only %s needs no conversion and changes nothing stored (clients of %s then get NotFound): kubectl patch crd %s --type=json -p '[%s]'; %s",
			restore, crd.Storage, crd.Storage, strings.Join(others, ", "), crd.Name, strings.Join(ops, ","), list)
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
// the namespace because the type's conversion webhook fails.
func (d *diagnoser) conversionFindings(conds []corev1.NamespaceCondition) []finding {
	var fs []finding
	seen := map[string]bool{}
	for _, c := range conds {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		for _, fail := range scan.ConversionFailures(c.Message) {
			cv := d.conversionOf(fail)
			if seen[cv.crd.Name] {
				continue
			}
			seen[cv.crd.Name] = true
			fd := rooted(finalizev1alpha1.ReasonConversionWebhookUnavailable, finalizev1alpha1.Subject{Kind: "CustomResourceDefinition", Name: cv.crd.Name},
				fmt.Sprintf("the namespace controller cannot list %s in the namespace: %s", cv.crd.Name, cv.message), cv.next, cv.message)
			fd.blockers = []finalizev1alpha1.Blocker{{Target: crdsResource.Ref("", cv.crd.Name, ""), Message: "conversion webhook: " + cv.problem}}
			fs = append(fs, fd)
		}
	}
	return fs
}

// unreportedConversions: a namespace the namespace controller has not reported on, in
// a cluster where the scan found conversion webhooks failing. Once the API server's watch
// cache of such a type cannot initialize, every namespace's list of it fails, and the
// controller's passes over the namespaces already blocked fail and retry.
func (d *diagnoser) unreportedConversions(terminating time.Duration) []finding {
	var fs []finding
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
		if seen[cv.crd.Name] {
			continue
		}
		seen[cv.crd.Name] = true
		fd := rooted(finalizev1alpha1.ReasonConversionWebhookUnavailable, finalizev1alpha1.Subject{Kind: "CustomResourceDefinition", Name: cv.crd.Name},
			fmt.Sprintf("the namespace controller has not reported on the namespace %s after the deletion began, while %s", duration.HumanDuration(terminating), cv.message), cv.next, cv.message)
		fd.blockers = []finalizev1alpha1.Blocker{{Target: crdsResource.Ref("", cv.crd.Name, ""), Message: "conversion webhook: " + cv.problem}}
		fs = append(fs, fd)
	}
	return fs
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
