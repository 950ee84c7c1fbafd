package doctor

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// finding is one reason an object is stuck: a root cause itself, or the stuck objects it
// waits for (whose roots then explain it), or both.
type finding struct {
	reason, message, next string
	blockers              []finalizev1alpha1.Blocker
	root                  *rootSpec
	waitsOn               []*kube.Object
	// external names the external resource behind the finalizer, when a preset knows.
	external *finalizev1alpha1.External
	// context is what the object's cause adds after "also:": facts that explain no
	// finalizer (warnings of controllers that own none).
	context []string
}

// rootSpec is a root cause as one finding names it; findings that name the same one
// (same reason and subject) are one root cause.
type rootSpec struct {
	reason        string
	subject       finalizev1alpha1.Subject
	message, next string
}

// rootKey tells root causes apart: by reason and subject.
type rootKey struct {
	reason  string
	subject finalizev1alpha1.Subject
}

func (r *rootSpec) key() rootKey { return rootKey{r.reason, r.subject} }

// rooted is a finding that is a root cause itself: subject is what it is about, message
// what it says of this object, and rootMessage what the root cause says once for every
// object it explains. The root cause's next step is the finding's; a root cause with
// another next step sets it afterwards.
func rooted(reason string, subject finalizev1alpha1.Subject, message, next, rootMessage string) finding {
	return finding{reason: reason, message: message, next: next,
		root: &rootSpec{reason: reason, subject: subject, message: rootMessage, next: next}}
}

// withRootNext sets the next step of the finding's root cause, said once for every
// object it explains, where it differs from the object's own.
func (fd finding) withRootNext(next string) finding {
	fd.root.next = next
	return fd
}

// The types the doctor names in blockers and subjects.
var (
	podsResource        = coreResource("pods", "Pod", true)
	claimsResource      = coreResource("persistentvolumeclaims", "PersistentVolumeClaim", true)
	apiServicesResource = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}, Kind: "APIService"}
	crdsResource        = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Kind: "CustomResourceDefinition"}
)

func coreResource(resource, kind string, namespaced bool) kube.Resource {
	return kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource(resource), Kind: kind, Namespaced: namespaced}
}

// kindController is the kind of a subject known only as a controller's name.
const kindController = "Controller"

func controllerSubject(name string) finalizev1alpha1.Subject {
	return finalizev1alpha1.Subject{Kind: kindController, Name: name}
}

func subjectOf(o *kube.Object) finalizev1alpha1.Subject {
	return finalizev1alpha1.Subject{Kind: o.Resource.Kind, Namespace: o.Meta.Namespace, Name: o.Meta.Name}
}

func stuckBlocker(o *kube.Object, msg string) finalizev1alpha1.Blocker {
	return finalizev1alpha1.Blocker{Target: o.Ref().API(), Stuck: true, Message: msg}
}

func ago(now, t time.Time) string { return duration.HumanDuration(now.Sub(t)) }

// progressing: the owner is at work; stuck is not proven yet.
func progressing(o *kube.Object, msg, who string) finding {
	next := "wait; stuck is not proven yet. Watch it: kubectl get " + o.Ref().String() + " -w"
	return rooted(finalizev1alpha1.ReasonProgressing, controllerSubject(who), msg, next, who+" may still be working on these objects").
		withRootNext("wait; stuck is not proven yet")
}
