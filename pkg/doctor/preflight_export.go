package doctor

import (
	"context"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// This file lends the doctor's ways of finding things to `preflight` (pkg/preflight),
// which asks of objects that are not deleted yet what the doctor asks of stuck ones.

// Controller is who is expected to remove a finalizer, as the doctor finds it, and the
// workloads it runs as.
type Controller struct {
	// Name is the controller's name in messages: its field manager, else its owner.
	Name string
	// Manager is the field manager whose writes are the controller's, if one wrote the
	// finalizer as a controller.
	Manager string
	// Workloads are the Deployments, StatefulSets and DaemonSets found for it, by name or
	// app.kubernetes.io/name label, anywhere in the cluster.
	Workloads []WorkloadRef
	// Unread names the workload kinds that could not be read: absence is not proven.
	Unread []string
}

// WorkloadRef names a Deployment, StatefulSet or DaemonSet.
type WorkloadRef struct {
	Kind, Namespace, Name string
	// ServiceAccount is the one its pod template runs as.
	ServiceAccount string
	// Desired is how many pods it asks for (a DaemonSet: how many nodes it should run
	// on, 1 when not known).
	Desired int64
	// Watches are the namespaces its pod template limits it to (WATCH_NAMESPACE, a
	// --namespace flag ...); nil when it does not say, or says every namespace.
	Watches []string
}

// WatchesNamespace says whether the workload reconciles objects of namespace ns as far
// as its pod template says: every namespace unless it names some.
func (w WorkloadRef) WatchesNamespace(ns string) bool {
	return w.Watches == nil || ns == "" || slices.Contains(w.Watches, ns)
}

// ControllerFinder finds the controllers of finalizers the way the doctor does
// (controller.go, workload.go): the catalogue, the field manager that wrote the
// finalizer, and the workloads named like them. It reads each name's workloads once.
type ControllerFinder struct {
	d *diagnoser
}

// NewControllerFinder reads through kc and dyn; res is a scan of the cluster made with
// Options.Index, whose index of workloads is used when it holds them all.
func NewControllerFinder(ctx context.Context, kc client.Interface, dyn dynamic.Interface, res *scan.Result, chunk int64) *ControllerFinder {
	f := newFacts(ctx, kc, dyn, res)
	f.chunk = chunk
	return &ControllerFinder{d: &diagnoser{f: f, catalog: owner.Builtin()}}
}

// Controller finds the controller of fin on o (fin's owner filled in by pkg/owner). It
// is empty when nothing names one.
func (c *ControllerFinder) Controller(o *kube.Object, fin finalizev1alpha1.Finalizer) Controller {
	id := c.d.identify(o, fin)
	out := Controller{Name: id.who, Manager: id.manager}
	if len(id.workloads) == 0 {
		return out
	}
	ws := c.d.f.workloadsOf(id.workloads...)
	for _, w := range ws.found {
		ref := WorkloadRef{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, ServiceAccount: w.ServiceAccount, Desired: w.Desired}
		for _, ws := range w.Watches {
			if len(ws.Namespaces) == 0 {
				ref.Watches = nil
				break
			}
			for _, n := range ws.Namespaces {
				if !slices.Contains(ref.Watches, n) {
					ref.Watches = append(ref.Watches, n)
				}
			}
		}
		out.Workloads = append(out.Workloads, ref)
	}
	out.Unread = ws.unread
	return out
}

// Warnings name the reads that failed.
func (c *ControllerFinder) Warnings() []string { return c.d.f.warnings }

// WebhookInterceptsUpdate reports whether an admission webhook with these rules,
// selectors and match policy is called for an update of o, whose namespace (or o itself,
// for a namespace) has the labels nsLabels: the update that removes a finalizer.
func WebhookInterceptsUpdate(rules []admissionregistrationv1.RuleWithOperations, namespaceSelector, objectSelector *metav1.LabelSelector,
	mp *admissionregistrationv1.MatchPolicyType, o *kube.Object, nsLabels map[string]string) bool {
	w := webhook{Rules: rules, NamespaceSelector: namespaceSelector, ObjectSelector: objectSelector, MatchPolicy: matchPolicy(mp)}
	return w.intercepts(o, "", nsLabels)
}
