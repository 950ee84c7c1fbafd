package doctor

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

const (
	finalizerPVC = "kubernetes.io/pvc-protection"
	finalizerPV  = "kubernetes.io/pv-protection"
	finalizerCRD = "customresourcecleanup.apiextensions.k8s.io"

	gcOwner        = "garbage collector (kube-controller-manager)"
	nsOwner        = "namespace controller (kube-controller-manager)"
	pvcOwner       = "pvc-protection controller (kube-controller-manager)"
	pvOwner        = "pv-protection controller (kube-controller-manager)"
	crdFinalizerBy = "CRD finalizer controller (kube-apiserver)"
	kindController = "Controller"
)

// DefaultNamespaceGrace is how long a deleted namespace may go without deletion
// conditions before the namespace controller is said to be inactive: it acts after a
// fixed 5 s delay, and again every sync period.
const DefaultNamespaceGrace = time.Minute

type diagnoser struct {
	f              *facts
	catalog        *owner.Catalog
	namespaceGrace time.Duration
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func ago(now, t time.Time) string { return duration.HumanDuration(now.Sub(t)) }

// diagnose returns every finding for o, at least one.
func (d *diagnoser) diagnose(o *scan.Object) []finding {
	var fs []finding
	if len(o.Meta.Finalizers) > 0 {
		if bw := d.f.blockingWebhooks(o, ""); len(bw) > 0 {
			fs = append(fs, webhookFinding(bw))
		}
	}
	if o.Resource.IsNamespaces() && o.Namespace != nil && len(o.Namespace.Spec.Finalizers) > 0 {
		if bw := d.f.blockingWebhooks(o, "finalize"); len(bw) > 0 {
			fs = append(fs, webhookFinding(bw))
		}
		fs = append(fs, d.namespace(o)...)
	}
	for _, fin := range o.Finalizers {
		if fin.Field != finalizev1alpha1.FieldMetadataFinalizers {
			continue
		}
		switch {
		case fin.Name == metav1.FinalizerDeleteDependents:
			fs = append(fs, d.foreground(o)...)
		case fin.Name == metav1.FinalizerOrphanDependents:
			fs = append(fs, d.orphan(o)...)
		case fin.Name == finalizerPVC && o.Resource.Group == "" && o.Resource.Resource == "persistentvolumeclaims":
			fs = append(fs, d.pvc(o))
		case fin.Name == finalizerPV && o.Resource.Group == "" && o.Resource.Resource == "persistentvolumes":
			fs = append(fs, d.pv(o))
		case fin.Name == finalizerCRD && o.Resource.Group == "apiextensions.k8s.io" && o.Resource.Resource == "customresourcedefinitions":
			fs = append(fs, d.crd(o))
		default:
			fs = append(fs, d.custom(o, fin))
		}
	}
	if len(fs) == 0 {
		fs = append(fs, finding{
			reason: finalizev1alpha1.ReasonUnknown, message: "no rule explains it",
			next: "inspect it: kubectl get " + describeRef(o.Ref()) + " -o yaml",
			root: &rootSpec{reason: finalizev1alpha1.ReasonUnknown, subject: subjectOf(o), message: "no rule explains it", next: "inspect the object"},
		})
	}
	return fs
}

func subjectOf(o *scan.Object) finalizev1alpha1.Subject {
	return finalizev1alpha1.Subject{Kind: o.Resource.Kind, Namespace: o.Meta.Namespace, Name: o.Meta.Name}
}

func ref(r scan.Resource, namespace, name string) finalizev1alpha1.ObjectReference {
	return finalizev1alpha1.ObjectReference{APIVersion: r.GroupVersion().String(), Kind: r.Kind, Resource: r.Resource, Namespace: namespace, Name: name}
}

func stuckBlocker(o *scan.Object, msg string) finalizev1alpha1.Blocker {
	return finalizev1alpha1.Blocker{Target: o.Ref(), Stuck: true, Message: msg}
}

// webhookFinding: a failurePolicy Fail webhook without a backend rejects the update that
// would remove the finalizer, whoever sends it.
func webhookFinding(bw []blockingWebhook) finding {
	var names []string
	fd := finding{reason: finalizev1alpha1.ReasonWebhookBlocking}
	for _, w := range bw {
		names = append(names, w.String())
		fd.blockers = append(fd.blockers, finalizev1alpha1.Blocker{
			Target:  finalizev1alpha1.ObjectReference{APIVersion: "admissionregistration.k8s.io/v1", Kind: w.Kind, Name: w.Configuration},
			Message: fmt.Sprintf("webhook %s: %s", w.Name, w.Problem),
		})
	}
	w := bw[0]
	fd.message = "every update of the object is rejected by " + strings.Join(names, "; ")
	fd.next = fmt.Sprintf("restore %s, or, if the webhook's owner is uninstalled, delete %s %s (or set its failurePolicy to Ignore)",
		serviceOf(w), strings.ToLower(w.Kind), w.Configuration)
	fd.root = &rootSpec{
		reason:  finalizev1alpha1.ReasonWebhookBlocking,
		subject: finalizev1alpha1.Subject{Kind: w.Kind, Name: w.Configuration},
		message: fmt.Sprintf("webhook %s rejects updates: %s", w.Name, w.Problem),
		next:    fd.next,
	}
	return fd
}

func serviceOf(w blockingWebhook) string {
	if w.Service == nil {
		return "its backend"
	}
	return "service " + w.Service.String()
}

// apiServiceFindings name the unavailable APIService behind each failing group version.
func (d *diagnoser) apiServiceFindings(gvs []string, why string) []finding {
	var fs []finding
	for _, gv := range gvs {
		a := d.f.apiServiceFor(gv)
		name := apiServiceName(gv)
		state := "cannot be discovered"
		fd := finding{reason: finalizev1alpha1.ReasonAPIServiceUnavailable}
		if a != nil {
			name = a.Name
			state = "is unavailable"
			if a.Reason != "" || a.Message != "" {
				state = fmt.Sprintf("is unavailable (%s: %s)", a.Reason, a.Message)
			}
		}
		fd.message = fmt.Sprintf("%s: APIService %s %s", fmt.Sprintf(why, gv), name, state)
		fd.next = fmt.Sprintf("restore the service behind APIService %s, or delete it if its API is no longer installed: kubectl delete apiservice %s", name, name)
		fd.blockers = []finalizev1alpha1.Blocker{{
			Target:  finalizev1alpha1.ObjectReference{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Resource: "apiservices", Name: name},
			Message: "APIService " + state,
		}}
		fd.root = &rootSpec{
			reason:  finalizev1alpha1.ReasonAPIServiceUnavailable,
			subject: finalizev1alpha1.Subject{Kind: "APIService", Name: name},
			message: fmt.Sprintf("APIService %s %s; until it is available, no namespace can finish deleting and the garbage collector cannot be sure of %s", name, state, gv),
			next:    fd.next,
		}
		fs = append(fs, fd)
	}
	return fs
}

// apiServiceName is the conventional name of the APIService of a group version:
// "metrics.k8s.io/v1beta1" is served by "v1beta1.metrics.k8s.io".
func apiServiceName(gv string) string {
	g, v, ok := strings.Cut(gv, "/")
	if !ok {
		return gv
	}
	return v + "." + g
}

var groupVersionRE = regexp.MustCompile(`([a-z0-9]([a-z0-9.-]*[a-z0-9])?)/(v[0-9]+(alpha[0-9]+|beta[0-9]+)?)\b`)

// groupVersionsIn finds the group versions a condition message names, whatever its
// wording.
func groupVersionsIn(msg string) []string {
	var out []string
	for _, m := range groupVersionRE.FindAllStringSubmatch(msg, -1) {
		gv := m[1] + "/" + m[3]
		if strings.Contains(m[1], ".") && !slices.Contains(out, gv) {
			out = append(out, gv)
		}
	}
	sort.Strings(out)
	return out
}

// namespace reads the namespace controller's conditions and goes one level deeper: the
// stuck objects still in the namespace.
func (d *diagnoser) namespace(o *scan.Object) []finding {
	ns := o.Namespace
	conds := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	for _, c := range ns.Status.Conditions {
		conds[c.Type] = c
	}
	isTrue := func(t corev1.NamespaceConditionType) (corev1.NamespaceCondition, bool) {
		c, ok := conds[t]
		return c, ok && c.Status == corev1.ConditionTrue
	}
	var fs []finding
	if c, ok := isTrue(corev1.NamespaceDeletionDiscoveryFailure); ok {
		gvs := groupVersionsIn(c.Message)
		if len(gvs) == 0 {
			gvs = d.f.discoveryFailures()
		}
		fs = append(fs, d.apiServiceFindings(gvs, "the namespace controller cannot tell whether the namespace still holds objects of %s")...)
	}
	if c, ok := isTrue(corev1.NamespaceDeletionGVParsingFailure); ok {
		fs = append(fs, finding{
			reason: finalizev1alpha1.ReasonUnknown, message: "the namespace controller cannot parse a group version: " + c.Message,
			next: "fix or remove the API whose group version cannot be parsed",
			root: &rootSpec{reason: finalizev1alpha1.ReasonUnknown, subject: subjectOf(o), message: c.Message, next: "fix or remove the API whose group version cannot be parsed"},
		})
	}
	children := d.f.byNamespace[o.Meta.Name]
	content, contentTrue := isTrue(corev1.NamespaceContentRemaining)
	fins, finsTrue := isTrue(corev1.NamespaceFinalizersRemaining)
	failed, failedTrue := isTrue(corev1.NamespaceDeletionContentFailure)
	if len(children) > 0 || contentTrue || finsTrue || failedTrue {
		fd := finding{reason: finalizev1alpha1.ReasonNamespaceContentRemaining, waitsOn: children,
			next: "the namespace goes once the objects it still holds are gone: see their causes"}
		var msgs []string
		if finsTrue {
			fd.reason = finalizev1alpha1.ReasonNamespaceFinalizersRemaining
			msgs = append(msgs, fins.Message)
		}
		if contentTrue {
			msgs = append(msgs, content.Message)
		}
		if failedTrue {
			msgs = append(msgs, failed.Message)
		}
		if len(msgs) == 0 {
			fd.reason = finalizev1alpha1.ReasonNamespaceFinalizersRemaining
			msgs = append(msgs, fmt.Sprintf("%d stuck objects remain in the namespace", len(children)))
		}
		fd.message = strings.Join(msgs, "; ")
		for _, c := range children {
			fd.blockers = append(fd.blockers, stuckBlocker(c, ""))
		}
		if len(children) == 0 {
			d.contentWithoutFinalizers(o, &fd, failedTrue, failed.Message)
		}
		fs = append(fs, fd)
	}
	if len(fs) > 0 {
		return fs
	}
	terminating := o.Terminating(d.f.now)
	if len(ns.Status.Conditions) == 0 {
		if terminating >= d.namespaceGrace {
			msg := fmt.Sprintf("no deletion conditions %s after the deletion began: the namespace controller of kube-controller-manager has not processed the namespace", duration.HumanDuration(terminating))
			next := "check that kube-controller-manager runs with the namespace controller enabled"
			return []finding{{reason: finalizev1alpha1.ReasonControllerInactive, message: msg, next: next,
				root: &rootSpec{reason: finalizev1alpha1.ReasonControllerInactive, subject: finalizev1alpha1.Subject{Kind: kindController, Name: nsOwner}, message: "the namespace controller has not processed namespaces being deleted", next: next}}}
		}
	}
	msg := "the namespace controller reports all content removed; it removes finalizer kubernetes next"
	if len(ns.Status.Conditions) == 0 {
		msg = "the deletion began " + duration.HumanDuration(terminating) + " ago; the namespace controller acts after a few seconds"
	}
	return []finding{progressing(o, msg, nsOwner)}
}

// contentWithoutFinalizers explains a namespace whose remaining content is not stuck on
// finalizers: objects in graceful deletion (pods wait for their kubelet), content the
// controller failed to delete, or types the scan could not list.
func (d *diagnoser) contentWithoutFinalizers(o *scan.Object, fd *finding, failedTrue bool, failedMsg string) {
	why := "objects remain that are being deleted without finalizers"
	next := "list what remains: kubectl api-resources --verbs=list --namespaced -o name | xargs -n1 kubectl get -n " + o.Meta.Name + " --ignore-not-found"
	var content *scan.NamespaceContent
	if d.f.res.Index != nil {
		content = d.f.res.Index.Content[o.Meta.Name]
	}
	switch {
	case content != nil && content.Count > 0:
		var names []string
		pods := false
		for _, ref := range content.Sample {
			state := "not deleted yet"
			if ref.Deleting {
				state = "being deleted"
				pods = pods || (ref.Resource.Group == "" && ref.Resource.Resource == "pods")
			}
			names = append(names, fmt.Sprintf("%s/%s (%s)", ref.Resource, ref.Name, state))
			r := ref.Resource
			target := finalizev1alpha1.ObjectReference{APIVersion: r.GroupVersion().String(), Kind: r.Kind, Resource: r.Resource, Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}
			fd.blockers = append(fd.blockers, finalizev1alpha1.Blocker{Target: target, Message: state})
		}
		if int64(len(names)) < content.Count {
			names = append(names, fmt.Sprintf("and %d more", content.Count-int64(len(names))))
		}
		verb := "remain"
		if content.Count == 1 {
			verb = "remains"
		}
		why = fmt.Sprintf("%s without finalizers %s: %s", plural(int(content.Count), "object"), verb, strings.Join(names, ", "))
		if pods {
			next = fmt.Sprintf("pods being deleted wait for the kubelet of their node; if that node is gone for good, delete them at once: kubectl delete pods -n %s --all --grace-period=0 --force", o.Meta.Name)
		}
	case failedTrue:
		why = "the namespace controller failed to delete some content: " + failedMsg
	case len(d.f.res.Incomplete) > 0:
		why = "the remaining objects are of types this scan could not list (see incomplete)"
	}
	fd.message += "; " + why
	fd.next = next
	fd.root = &rootSpec{reason: fd.reason, subject: subjectOf(o), message: why, next: next}
}

func progressing(o *scan.Object, msg, who string) finding {
	next := "wait; stuck is not proven yet. Watch it: kubectl get " + describeRef(o.Ref()) + " -w"
	return finding{reason: finalizev1alpha1.ReasonProgressing, message: msg, next: next,
		root: &rootSpec{reason: finalizev1alpha1.ReasonProgressing, subject: finalizev1alpha1.Subject{Kind: kindController, Name: who}, message: who + " is still working", next: "wait; stuck is not proven yet"}}
}

// garbageCollectorFindings explain why the garbage collector has not finished: a
// discovery failure, or the garbage collector is not running.
func (d *diagnoser) garbageCollectorFindings(o *scan.Object, what string) []finding {
	if gvs := d.f.discoveryFailures(); len(gvs) > 0 {
		return d.apiServiceFindings(gvs, "the garbage collector may be waiting for discovery of %s to "+what)
	}
	msg := fmt.Sprintf("nothing is left for the garbage collector to wait for, yet it has not removed its finalizer %s after the deletion began", duration.HumanDuration(o.Terminating(d.f.now)))
	next := "check that kube-controller-manager runs with the garbage collector enabled"
	return []finding{{reason: finalizev1alpha1.ReasonControllerInactive, message: msg, next: next,
		root: &rootSpec{reason: finalizev1alpha1.ReasonControllerInactive, subject: finalizev1alpha1.Subject{Kind: kindController, Name: gcOwner}, message: "the garbage collector is not finishing deletions", next: next}}}
}

// foreground: the garbage collector deletes the dependents that block their owner's
// deletion, then removes foregroundDeletion.
func (d *diagnoser) foreground(o *scan.Object) []finding {
	var blocking []scan.Dependent
	if d.f.res.Index != nil {
		for _, dep := range d.f.res.Index.Dependents[o.Meta.UID] {
			if dep.BlockOwnerDeletion {
				blocking = append(blocking, dep)
			}
		}
	}
	if len(blocking) == 0 {
		return d.garbageCollectorFindings(o, "finish the foreground deletion")
	}
	fd := finding{reason: finalizev1alpha1.ReasonDependentsRemaining,
		next: "the garbage collector removes foregroundDeletion once these dependents are gone: see their causes"}
	var names []string
	notDeleted := 0
	for _, dep := range blocking {
		r := ref(dep.Resource, dep.Namespace, dep.Name)
		r.UID = dep.UID
		if s, ok := d.f.byUID[dep.UID]; ok {
			fd.waitsOn = append(fd.waitsOn, s)
			fd.blockers = append(fd.blockers, stuckBlocker(s, "stuck"))
			names = append(names, describeRef(r)+" (stuck)")
			continue
		}
		state := "not deleted yet"
		if dep.Deleting {
			state = "being deleted"
		} else {
			notDeleted++
		}
		fd.blockers = append(fd.blockers, finalizev1alpha1.Blocker{Target: r, Message: state})
		names = append(names, describeRef(r)+" ("+state+")")
	}
	fd.message = fmt.Sprintf("deleted in the foreground, it waits for %s with blockOwnerDeletion: %s", plural(len(blocking), "dependent"), strings.Join(names, ", "))
	out := []finding{fd}
	if len(fd.waitsOn) == 0 {
		if notDeleted > 0 {
			// The garbage collector should have deleted them.
			out = append(out, d.garbageCollectorFindings(o, "delete the dependents")...)
		} else {
			out = append(out, progressing(o, "its dependents are being deleted", gcOwner))
		}
	}
	return out
}

// orphan: the garbage collector removes the owner's reference from every dependent, then
// removes orphan.
func (d *diagnoser) orphan(o *scan.Object) []finding {
	n := 0
	if d.f.res.Index != nil {
		n = len(d.f.res.Index.Dependents[o.Meta.UID])
	}
	fs := d.garbageCollectorFindings(o, "orphan the dependents")
	for i := range fs {
		fs[i].message = fmt.Sprintf("deleted with propagationPolicy Orphan, %s still name it as owner; %s", plural(n, "dependent"), fs[i].message)
	}
	return fs
}

// pvc: the claim goes once no scheduled pod references it. Like the pvc-protection
// controller, a completed pod still counts until it is deleted.
func (d *diagnoser) pvc(o *scan.Object) finding {
	pods, ok := d.f.podsIn(o.Meta.Namespace)
	if !ok {
		return finding{reason: finalizev1alpha1.ReasonUnknown, message: "the pods of the namespace could not be read",
			root: &rootSpec{reason: finalizev1alpha1.ReasonUnknown, subject: subjectOf(o), message: "the pods that may use the claim could not be read", next: "run the doctor with permission to list pods"}}
	}
	podRes := scan.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}
	fd := finding{reason: finalizev1alpha1.ReasonPodsUsingClaim}
	var names []string
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || !usesClaim(p, o.Meta.Name) {
			continue
		}
		state := fmt.Sprintf("%s on node %s", p.Status.Phase, p.Spec.NodeName)
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			state += "; a finished pod holds the claim until it is deleted"
		}
		r := ref(podRes, p.Namespace, p.Name)
		r.UID = p.UID
		fd.blockers = append(fd.blockers, finalizev1alpha1.Blocker{Target: r, Message: state})
		names = append(names, fmt.Sprintf("%s (%s)", p.Name, state))
		if fd.root == nil {
			next := fmt.Sprintf("delete pod %s -n %s, or scale down what runs it; the claim is released once no scheduled pod references it", p.Name, p.Namespace)
			fd.root = &rootSpec{reason: finalizev1alpha1.ReasonPodsUsingClaim, subject: finalizev1alpha1.Subject{Kind: "Pod", Namespace: p.Namespace, Name: p.Name},
				message: fmt.Sprintf("pod %s/%s still mounts claims that are being deleted", p.Namespace, p.Name), next: next}
			fd.next = next
		}
	}
	if len(names) == 0 {
		msg := "no scheduled pod references the claim, yet kubernetes.io/pvc-protection stays: the pvc-protection controller of kube-controller-manager is not acting"
		next := "check that kube-controller-manager runs with the persistentvolumeclaim-protection controller"
		return finding{reason: finalizev1alpha1.ReasonControllerInactive, message: msg, next: next,
			root: &rootSpec{reason: finalizev1alpha1.ReasonControllerInactive, subject: finalizev1alpha1.Subject{Kind: kindController, Name: pvcOwner}, message: "the pvc-protection controller is not releasing unused claims", next: next}}
	}
	if len(names) == 1 {
		fd.message = "a scheduled pod still uses the claim: " + names[0]
	} else {
		fd.message = fmt.Sprintf("%d scheduled pods still use the claim: %s", len(names), strings.Join(names, ", "))
	}
	return fd
}

func usesClaim(p *corev1.Pod, claim string) bool {
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
		if v.Ephemeral != nil && p.Name+"-"+v.Name == claim {
			return true
		}
	}
	return false
}

// pv: the volume goes once it is no longer bound.
func (d *diagnoser) pv(o *scan.Object) finding {
	pv, err := d.f.kube.CoreV1().PersistentVolumes().Get(d.f.ctx, o.Meta.Name, metav1.GetOptions{})
	if err != nil {
		d.f.warnf("could not read persistentvolume %s: %v", o.Meta.Name, err)
		return finding{reason: finalizev1alpha1.ReasonUnknown, message: "the volume could not be read: " + err.Error(),
			root: &rootSpec{reason: finalizev1alpha1.ReasonUnknown, subject: subjectOf(o), message: "the volume could not be read", next: "run the doctor with permission to get persistentvolumes"}}
	}
	if pv.Status.Phase != corev1.VolumeBound {
		msg := fmt.Sprintf("the volume is %s, not bound, yet kubernetes.io/pv-protection stays: the pv-protection controller of kube-controller-manager is not acting", pv.Status.Phase)
		next := "check that kube-controller-manager runs with the persistentvolume-protection controller"
		return finding{reason: finalizev1alpha1.ReasonControllerInactive, message: msg, next: next,
			root: &rootSpec{reason: finalizev1alpha1.ReasonControllerInactive, subject: finalizev1alpha1.Subject{Kind: kindController, Name: pvOwner}, message: "the pv-protection controller is not releasing unbound volumes", next: next}}
	}
	fd := finding{reason: finalizev1alpha1.ReasonClaimStillBound}
	cr := pv.Spec.ClaimRef
	if cr == nil {
		fd.message = "the volume is Bound but names no claim"
		fd.root = &rootSpec{reason: fd.reason, subject: subjectOf(o), message: fd.message, next: "inspect the volume: kubectl get pv " + pv.Name + " -o yaml"}
		return fd
	}
	claimRes := scan.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), Kind: "PersistentVolumeClaim", Namespaced: true}
	r := ref(claimRes, cr.Namespace, cr.Name)
	r.UID = cr.UID
	if s, ok := d.f.byUID[cr.UID]; ok {
		fd.message = fmt.Sprintf("bound to claim %s/%s, which is stuck itself", cr.Namespace, cr.Name)
		fd.waitsOn = []*scan.Object{s}
		fd.blockers = []finalizev1alpha1.Blocker{stuckBlocker(s, "bound claim")}
		fd.next = "the volume is released once its claim is gone: see the claim's cause"
		return fd
	}
	fd.message = fmt.Sprintf("still bound to claim %s/%s", cr.Namespace, cr.Name)
	fd.next = fmt.Sprintf("delete claim %s -n %s first (after its data is safe); the volume is released once the claim is gone", cr.Name, cr.Namespace)
	fd.blockers = []finalizev1alpha1.Blocker{{Target: r, Message: "bound"}}
	fd.root = &rootSpec{reason: fd.reason, subject: finalizev1alpha1.Subject{Kind: "PersistentVolumeClaim", Namespace: cr.Namespace, Name: cr.Name},
		message: fmt.Sprintf("claim %s/%s still binds volumes that are being deleted", cr.Namespace, cr.Name), next: fd.next}
	return fd
}

// crd: the CRD finalizer deletes every instance, then removes itself.
func (d *diagnoser) crd(o *scan.Object) finding {
	resource, group, _ := strings.Cut(o.Meta.Name, ".")
	gr := schema.GroupResource{Group: group, Resource: resource}
	var stuck []*scan.Object
	for _, s := range d.f.res.Objects {
		if s.Resource.GroupResource() == gr {
			stuck = append(stuck, s)
		}
	}
	count, counted := int64(0), false
	if d.f.res.Index != nil {
		count, counted = d.f.res.Index.Counts[gr]
	}
	condition := ""
	if u, err := d.f.dyn.Resource(crdGVR).Get(d.f.ctx, o.Meta.Name, metav1.GetOptions{}); err == nil {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Terminating" {
				condition = fmt.Sprintf("%v: %v", m["reason"], m["message"])
			}
		}
	} else if !apierrors.IsNotFound(err) {
		d.f.warnf("could not read customresourcedefinition %s: %v", o.Meta.Name, err)
	}
	fd := finding{reason: finalizev1alpha1.ReasonInstancesRemaining, waitsOn: stuck}
	for _, s := range stuck {
		fd.blockers = append(fd.blockers, stuckBlocker(s, "instance"))
	}
	switch {
	case len(stuck) > 0:
		fd.message = fmt.Sprintf("%s of the CRD stuck", plural(len(stuck), "instance"))
		if counted && count > int64(len(stuck)) {
			fd.message = fmt.Sprintf("%s of the CRD remain, %d of them stuck", plural(int(count), "instance"), len(stuck))
		}
		fd.next = "the CRD goes once its instances are gone: see their causes"
	case counted && count > 0:
		fd.message = fmt.Sprintf("%s of the CRD remain and are being deleted", plural(int(count), "instance"))
		fd.root = &rootSpec{reason: finalizev1alpha1.ReasonProgressing, subject: finalizev1alpha1.Subject{Kind: kindController, Name: crdFinalizerBy}, message: "the CRD finalizer is deleting instances", next: "wait"}
		fd.reason = finalizev1alpha1.ReasonProgressing
		fd.next = "wait: the CRD finalizer in kube-apiserver deletes the instances"
	default:
		fd.reason = finalizev1alpha1.ReasonProgressing
		fd.message = "no instance remains; the CRD finalizer in kube-apiserver removes its finalizer next"
		fd.root = &rootSpec{reason: finalizev1alpha1.ReasonProgressing, subject: finalizev1alpha1.Subject{Kind: kindController, Name: crdFinalizerBy}, message: "the CRD finalizer is finishing", next: "wait"}
		fd.next = "wait"
	}
	if condition != "" {
		fd.message += " (" + condition + ")"
	}
	return fd
}

// controllerName is the field manager of the controller expected to remove fin: the
// owner found in managedFields, else the controller that added it, else the controller
// that writes the object's status.
func controllerName(o *scan.Object, fin finalizev1alpha1.Finalizer) string {
	if fin.OwnerSource == finalizev1alpha1.OwnerSourceManagedFields {
		return fin.Owner
	}
	if fin.AddedBy != "" && !owner.IsGenericManager(fin.AddedBy) {
		return fin.AddedBy
	}
	for i := range o.Meta.ManagedFields {
		mf := &o.Meta.ManagedFields[i]
		if mf.Subresource == "status" && !owner.IsGenericManager(mf.Manager) {
			return mf.Manager
		}
	}
	return ""
}

// custom explains a finalizer of a controller outside Kubernetes: failing, inactive, or
// still at work.
func (d *diagnoser) custom(o *scan.Object, fin finalizev1alpha1.Finalizer) finding {
	now := d.f.now
	deleted := o.Meta.DeletionTimestamp.Time
	ctrl := controllerName(o, fin)
	who := ctrl
	if who == "" {
		who = fin.Owner
	}
	removeCmd := fmt.Sprintf("kubectl finalize remove %s --finalizer %s", describeRef(o.Ref()), fin.Name)
	guards := "what the finalizer guards is really gone"
	if e, ok := d.catalog.Lookup(fin.Name); ok && e.Purpose != "" {
		guards = e.Purpose
	}

	// Warnings since the deletion began: the controller is alive, and failing.
	if warns := d.f.warningsFor(o, deleted); len(warns) > 0 {
		sort.Slice(warns, func(i, j int) bool { return eventTime(&warns[i]).After(eventTime(&warns[j])) })
		e := &warns[0]
		reporter := reporterOf(e)
		if reporter == "" {
			reporter = who
		}
		msg := fmt.Sprintf("%s reports %s: %s (%d times, last %s ago)", reporter, e.Reason, e.Note, eventCount(e), ago(now, eventTime(e)))
		next := fmt.Sprintf("fix what %s reports (kubectl events --for %s); it removes %s once its cleanup succeeds", reporter, eventsFor(o), fin.Name)
		return finding{reason: finalizev1alpha1.ReasonControllerFailing, message: msg, next: next,
			root: &rootSpec{reason: finalizev1alpha1.ReasonControllerFailing, subject: finalizev1alpha1.Subject{Kind: kindController, Name: reporter},
				message: fmt.Sprintf("%s is failing to clean up (%s)", reporter, e.Reason), next: next}}
	}

	if who == "" {
		msg := fmt.Sprintf("nothing tells who should remove %s: no field manager wrote it as a controller, no known controller owns it, and it names no served API group", fin.Name)
		next := fmt.Sprintf("find who added it (kubectl get %s -o yaml --show-managed-fields) and what it guards before removing it", describeRef(o.Ref()))
		return finding{reason: finalizev1alpha1.ReasonUnknown, message: msg, next: next,
			root: &rootSpec{reason: finalizev1alpha1.ReasonUnknown, subject: finalizev1alpha1.Subject{Kind: "Finalizer", Name: fin.Name}, message: "nobody is known to own finalizer " + fin.Name, next: next}}
	}

	workloads := d.f.workloadsOf(ctrl, fin.Owner)
	var ready, notReady []string
	for _, w := range workloads {
		if w.Desired > 0 && w.Ready >= w.Desired {
			ready = append(ready, w.String())
		} else {
			notReady = append(notReady, w.String())
		}
	}
	workloadNote := ""
	switch {
	case len(notReady) > 0:
		workloadNote = "its " + strings.Join(notReady, ", ")
	case len(ready) > 0:
		workloadNote = "its " + strings.Join(ready, ", ")
	default:
		workloadNote = fmt.Sprintf("no Deployment, StatefulSet or DaemonSet named %s was found (it may run outside the cluster)", who)
	}

	if ctrl != "" {
		last, seen := d.f.res.ManagerActivity[ctrl]
		// managedFields times have one-second resolution: a write in the second of the
		// deletion proves nothing.
		if seen && last.After(deleted) {
			return progressing(o, fmt.Sprintf("%s is active: it last wrote %s ago, after the deletion began %s ago; stuck is not proven yet",
				ctrl, ago(now, last), ago(now, deleted)), ctrl)
		}
		lastNote := fmt.Sprintf("%s has written nothing in the cluster", ctrl)
		if seen {
			lastNote = fmt.Sprintf("%s has written nothing since the deletion began %s ago (its last write: %s ago)", ctrl, ago(now, deleted), ago(now, last))
		}
		return inactive(ctrl, lastNote+"; "+workloadNote, guards, removeCmd)
	}

	// The owner is known by name only (catalogue or API group): its workload tells.
	switch {
	case len(notReady) > 0 || (len(ready) == 0 && fin.OwnerSource == finalizev1alpha1.OwnerSourceCatalog):
		return inactive(who, fmt.Sprintf("%s is expected to remove %s; %s", who, fin.Name, workloadNote), guards, removeCmd)
	case len(ready) > 0:
		return progressing(o, fmt.Sprintf("%s; its writes cannot be told apart, so stuck is not proven yet", workloadNote), who)
	}
	msg := fmt.Sprintf("%s names API group %s, but no field manager identifies the controller that serves it, so its activity cannot be measured", fin.Name, fin.Owner)
	next := fmt.Sprintf("find the controller of API group %s and check that it runs; if it is gone for good, check that %s is done, then: %s", fin.Owner, guards, removeCmd)
	return finding{reason: finalizev1alpha1.ReasonUnknown, message: msg, next: next,
		root: &rootSpec{reason: finalizev1alpha1.ReasonUnknown, subject: finalizev1alpha1.Subject{Kind: kindController, Name: "controller of API group " + fin.Owner}, message: "the controller of API group " + fin.Owner + " could not be identified", next: next}}
}

func inactive(who, msg, guards, removeCmd string) finding {
	next := fmt.Sprintf("bring %s back (reinstall it, scale it up or fix its crash) so it finishes its cleanup; if it is gone for good, check that %s, then: %s",
		who, guards, removeCmd)
	return finding{reason: finalizev1alpha1.ReasonControllerInactive, message: msg, next: next,
		root: &rootSpec{reason: finalizev1alpha1.ReasonControllerInactive, subject: finalizev1alpha1.Subject{Kind: kindController, Name: who},
			message: fmt.Sprintf("%s is not removing its finalizers", who),
			next:    fmt.Sprintf("bring %s back so it finishes its cleanup; if it is gone for good, check that what its finalizers guard is gone, then remove them with kubectl finalize remove", who)}}
}

func eventsFor(o *scan.Object) string {
	s := strings.ToLower(o.Resource.Kind) + "/" + o.Meta.Name
	if o.Meta.Namespace != "" {
		s += " -n " + o.Meta.Namespace
	}
	return s
}
