package doctor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

func init() {
	register(family{
		causes: []Cause{
			{Reason: finalizev1alpha1.ReasonNamespaceContentRemaining, Priority: 2,
				Help: "the namespace still holds objects",
				Doc:  "from the namespace controller's conditions, whatever their wording; the stuck objects still in the namespace are its blockers"},
			{Reason: finalizev1alpha1.ReasonNamespaceFinalizersRemaining, Priority: 2,
				Help: "objects in the namespace still carry finalizers",
				Doc:  "from the namespace controller's conditions, whatever their wording; the stuck objects still in the namespace are its blockers"},
		},
		object: func(d *diagnoser, o *kube.Object) []finding {
			if !hasSpecFinalizers(o) {
				return nil
			}
			return d.namespace(o)
		},
	})
}

// hasSpecFinalizers: o is a namespace whose spec finalizers remain.
func hasSpecFinalizers(o *kube.Object) bool {
	return o.Resource.IsNamespaces() && o.Namespace != nil && len(o.Namespace.Spec.Finalizers) > 0
}

const nsOwner = "namespace controller (kube-controller-manager)"

// defaultNamespaceGrace is how long a deleted namespace may go without deletion
// conditions before the namespace controller is said to be inactive: it acts after a
// fixed 5 s delay, and again every sync period.
const defaultNamespaceGrace = time.Minute

// namespace reads the namespace controller's conditions and goes one level deeper: the
// stuck objects still in the namespace.
func (d *diagnoser) namespace(o *kube.Object) []finding {
	ns := o.Namespace
	conds := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	for _, c := range ns.Status.Conditions {
		conds[c.Type] = c
	}
	isTrue := func(t corev1.NamespaceConditionType) (corev1.NamespaceCondition, bool) {
		c, ok := conds[t]
		return c, ok && c.Status == corev1.ConditionTrue
	}
	unreadable := d.unreadableIn(o)
	fs := append([]finding(nil), unreadable...)
	if c, ok := isTrue(corev1.NamespaceDeletionDiscoveryFailure); ok {
		gvs := groupVersionsIn(c.Message)
		if len(gvs) == 0 {
			gvs = d.f.discoveryFailures()
		}
		fs = append(fs, d.apiServiceFindings(gvs, "the namespace controller cannot tell whether the namespace still holds objects of %s")...)
	}
	if c, ok := isTrue(corev1.NamespaceDeletionGVParsingFailure); ok {
		next := "fix or remove the API whose group version cannot be parsed"
		fs = append(fs, rooted(finalizev1alpha1.ReasonUnknown, subjectOf(o), "the namespace controller cannot parse a group version: "+c.Message, next, c.Message))
	}
	convs, stale := d.conversionFindings(o)
	fs = append(fs, convs...)
	children := d.f.byNamespace[o.Meta.Name]
	content, contentTrue := isTrue(corev1.NamespaceContentRemaining)
	fins, finsTrue := isTrue(corev1.NamespaceFinalizersRemaining)
	failed, failedTrue := isTrue(corev1.NamespaceDeletionContentFailure)
	// The conditions lag behind what was listed: when they say nothing remains but the
	// scan saw content, the content is believed.
	held := d.f.res.Index.Content[o.Meta.Name]
	observed := len(ns.Status.Conditions) > 0 && held != nil && held.Count > 0
	if len(children) > 0 || contentTrue || finsTrue || failedTrue || observed {
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
		switch {
		case len(msgs) > 0:
		case onlyPodsWaiting(children):
			msgs = append(msgs, podsWaitingMessage(children))
		case len(children) > 0:
			fd.reason = finalizev1alpha1.ReasonNamespaceFinalizersRemaining
			msg := fmt.Sprintf("%s %s in the namespace", words.Count(len(children), "stuck object"), map[bool]string{true: "remains", false: "remain"}[len(children) == 1])
			// The conditions may say the opposite (an upstream bug of ordered namespace
			// deletion): what was listed is believed, and their word is quoted.
			var said []string
			for _, c := range ns.Status.Conditions {
				remaining := c.Type == corev1.NamespaceContentRemaining || c.Type == corev1.NamespaceFinalizersRemaining
				if remaining && c.Status == corev1.ConditionFalse && c.Message != "" && !slices.Contains(said, c.Message) {
					said = append(said, c.Message)
				}
			}
			if len(said) > 0 {
				msg += fmt.Sprintf(", though its conditions say %q", strings.Join(said, "; "))
			}
			msgs = append(msgs, msg)
		default:
			msgs = append(msgs, "the namespace controller's conditions report no remaining content, but the scan found the namespace still holds objects")
		}
		fd.message = strings.Join(msgs, "; ")
		for _, c := range children {
			fd.blockers = append(fd.blockers, stuckBlocker(c, podBlockerMessage(c)))
		}
		switch {
		case len(children) > 0:
		case len(convs) > 0 && failedTrue && conversionExplains(failed.Message) && (held == nil || held.Count == 0):
			// What remains is of the types whose conversion webhook fails: their root
			// cause explains the namespace, and listing every type would fail on them.
			fd.next = convs[0].next
		case len(convs) == 0 && len(stale) > 0 && failedTrue && conversionExplains(failed.Message):
			// Every conversion failure the controller reported lists fine now: the
			// report is stale, and the controller retries. What the namespace still
			// holds has no finalizers (no stuck object is in it): that pass deletes it.
			msg := strings.Join(stale, "; ") + ": the namespace controller tries a namespace again at most a minute after a failed pass ends (kube-controller-manager v1.36; a pass under way when the webhook came back can take minutes, its lists of the type retried) and then rewrites its conditions"
			if held != nil && held.Count > 0 {
				msg += fmt.Sprintf("; the namespace still holds %s without finalizers, which that pass deletes", words.Count(int(held.Count), "object"))
			}
			return []finding{progressing(o, msg, nsOwner)}
		default:
			d.contentWithoutFinalizers(o, &fd, failedTrue, failed.Message)
		}
		d.orderedDeletion(o, &fd, children)
		fd.context = append(fd.context, stale...)
		if len(unreadable) > 0 && len(children) == 0 {
			// The namespace controller's pass stops at the list it cannot read: what
			// else remains waits for that object, not for a cause of its own.
			fd.root = nil
		}
		fs = append(fs, fd)
	}
	if len(fs) > 0 {
		return fs
	}
	terminating := o.Terminating(d.f.now)
	if len(ns.Status.Conditions) == 0 && terminating >= d.namespaceGrace {
		convs, context := d.unreportedConversions(o, terminating)
		if len(convs) > 0 {
			return convs
		}
		msg := fmt.Sprintf("no deletion conditions %s after the deletion began: the namespace controller of kube-controller-manager has not processed the namespace", duration.HumanDuration(terminating))
		fd := rooted(finalizev1alpha1.ReasonControllerInactive, controllerSubject(nsOwner), msg,
			"check that kube-controller-manager runs with the namespace controller enabled",
			"the namespace controller has not processed namespaces being deleted")
		fd.context = context
		return []finding{fd}
	}
	msg := "the namespace controller reports all content removed; it removes finalizer kubernetes next"
	if len(ns.Status.Conditions) == 0 {
		msg = "the deletion began " + duration.HumanDuration(terminating) + " ago; the namespace controller acts after a few seconds"
	}
	return []finding{progressing(o, msg, nsOwner)}
}

// contentWithoutFinalizers explains a namespace whose remaining content is not stuck on
// finalizers: objects in graceful deletion (pods wait for their kubelet, and the namespace
// controller deletes the rest only after its pods), content the controller failed to
// delete, or types the scan could not list.
func (d *diagnoser) contentWithoutFinalizers(o *kube.Object, fd *finding, failedTrue bool, failedMsg string) {
	var why string
	next := "list what remains: kubectl api-resources --verbs=list --namespaced -o name | xargs -n1 kubectl get -n " + o.Meta.Name + " --ignore-not-found"
	content := d.f.res.Index.Content[o.Meta.Name]
	switch {
	case content != nil && content.Count > 0:
		var names []string
		pods := false
		for _, ref := range content.Sample {
			state := "not deleted yet"
			if ref.Deleting {
				state = "being deleted"
				pods = pods || ref.Resource.GroupResource() == podsResource.GroupResource()
			}
			names = append(names, fmt.Sprintf("%s/%s (%s)", ref.Resource, ref.Name, state))
			fd.blockers = append(fd.blockers, finalizev1alpha1.Blocker{Target: ref.API(), Message: state})
		}
		if int64(len(names)) < content.Count {
			names = append(names, fmt.Sprintf("and %d more", content.Count-int64(len(names))))
		}
		verb := "remain"
		if content.Count == 1 {
			verb = "remains"
		}
		switch {
		case content.PendingCount > 0:
			// Objects not deleted yet carry finalizers: "without finalizers" would be false.
			why = fmt.Sprintf("%s %s, %d of them carrying finalizers, not deleted yet: %s", words.Count(int(content.Count), "object"), verb, content.PendingCount, strings.Join(names, ", "))
		default:
			why = fmt.Sprintf("%s without finalizers %s: %s", words.Count(int(content.Count), "object"), verb, strings.Join(names, ", "))
		}
		if pods {
			next = fmt.Sprintf("pods being deleted wait for the kubelet of their node; if that node is gone for good, delete them at once: kubectl delete pods -n %s --all --grace-period=0 --force", o.Meta.Name)
		}
	case failedTrue:
		why = "the namespace controller failed to delete some content: " + failedMsg
	case len(d.f.res.Incomplete) > 0:
		why = "the remaining objects are of types this scan could not list (see incomplete)"
	default:
		why = "the scan found none of that content: it may be gone since the namespace controller last looked, and the controller updates its conditions on its next pass"
		next = "look again in a minute: kubectl finalize doctor namespace/" + o.Meta.Name
	}
	fd.message += "; " + why
	fd.next = next
	fd.root = &rootSpec{reason: fd.reason, subject: subjectOf(o), message: why, next: next}
}
