package policy

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/klog/v2"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/provider"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// nodes is the core nodes resource: the controls of a waitsForNode rule are Ready nodes.
var nodes = kube.Resource{GroupVersionResource: corev1.SchemeGroupVersion.WithResource("nodes"), Kind: "Node"}

// maxNodeControlCandidates bounds the nodes listed to draw a rule's controls from.
const maxNodeControlCandidates = 100

// VerifyPod implements plan.PodVerifier: whether the machine of the node a pod's
// deletion waits for is gone, by the first rule with waitsForNode that matches the pod.
// The Node object's absence (the planner's fresh GET answered 404) is Gone by itself,
// once the planner found no sign of a running kubelet: a kubelet that runs renews its
// Lease in kube-node-lease every 10 s even when its Node object was deleted by hand (it
// registers the Node again only when it restarts), and the planner and the write refuse
// a kubelet that shows a sign of life (plan.KubeletSigns: a change of its Lease the API
// server saw, or a renewTime, within plan.AliveWindow by the API server's clock), the
// write a Lease the API server shows change while it watches it, and a Node of that name
// that exists at the write. A rule's minAge is measured by the API server's clock too. A node that exists and is not Ready is Gone only when the rule's provider
// says its machine is, asked with the Node object ({identity.nodeName},
// {identity.providerID}), and after it called the rule's controls, Ready nodes of the
// same kind (the same providerID scheme, or none), Present. A Ready node is never
// verified.
func (v *Verifier) VerifyPod(ctx context.Context, req plan.PodRequest) plan.Verification {
	o, pod := req.Object, req.Pod
	rule := v.policy.MatchPod(SubjectOf(o.Resource, pod.Namespace, pod.Name, pod.Labels))
	if rule == nil {
		return plan.Verification{}
	}
	out := plan.Verification{Rule: rule.Name, ResourceVersion: pod.ResourceVersion}
	answer := func(verdict finalizev1alpha1.Verdict, format string, args ...any) plan.Verification {
		out.Verdict, out.Evidence = verdict, fmt.Sprintf(format, args...)
		return out
	}
	if age := o.Terminating(v.now()); age < rule.MinAge {
		out.Status = plan.TooYoung
		out.Evidence = fmt.Sprintf("overdue for %s, the rule waits %s", duration.HumanDuration(age), duration.HumanDuration(rule.MinAge))
		return out
	}
	name, node := pod.Spec.NodeName, req.Node
	switch {
	case name == "":
		return answer(finalizev1alpha1.VerdictGone, "the pod was never bound to a node: no kubelet runs its containers")
	case node == nil:
		return answer(finalizev1alpha1.VerdictGone, "GET nodes/%s: 404: the Node object is gone, so no kubelet of that name reports or runs the pod", name)
	case plan.IsReady(node):
		return answer(finalizev1alpha1.VerdictPresent, "node %s is Ready: its kubelet answers", name)
	}
	state := nodeState(node)
	if err := v.errs[rule.Name]; err != nil {
		return answer(finalizev1alpha1.VerdictUnknown, "node %s exists (%s); the rule's provider cannot run: %v", name, state, err)
	}
	if v.providers[rule.Name] == nil {
		return answer(finalizev1alpha1.VerdictUnknown, "node %s exists (%s), and the rule names no provider to ask whether its machine is gone: "+
			"only the Node object's absence verifies under it", name, state)
	}
	a, _ := v.askNode(ctx, rule, node)
	out.Verdict, out.Evidence = a.Verdict, fmt.Sprintf("node %s exists (%s); %s", name, state, a.Evidence)
	if a.CannotRun {
		v.mu.Lock()
		if v.cannotRun[rule.Name] == "" {
			v.cannotRun[rule.Name] = a.Evidence
		}
		v.mu.Unlock()
	}
	if a.Verdict == finalizev1alpha1.VerdictGone {
		c := v.checkNodes(ctx, rule, node)
		if why := notTheAPIsOwn(a, c); why != "" {
			out.Verdict, out.Evidence = finalizev1alpha1.VerdictUnknown, fmt.Sprintf("node %s exists (%s); %s", name, state, why)
			return out
		}
		if c.distrust != "" {
			out.Status, out.Detail = plan.Distrusted, c.distrust
			if c.unread {
				out.Status = plan.ControlsUnread
			}
		}
	}
	return out
}

// nodeState says how a node that is not Ready is, for evidence.
func nodeState(n *corev1.Node) string {
	c := plan.NodeReady(n)
	if c == nil {
		return "no Ready condition: its kubelet never reported"
	}
	return fmt.Sprintf("Ready %s since %s, last heartbeat %s", c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339), c.LastHeartbeatTime.UTC().Format(time.RFC3339))
}

// askNode asks the rule's provider about one node, once per rendered request in a pass.
// asked is false when no request could be made from the node (a template value it lacks,
// like a providerID): the provider was not asked.
func (v *Verifier) askNode(ctx context.Context, rule *Rule, node *corev1.Node) (_ provider.Answer, asked bool) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(node)
	if err != nil {
		return provider.Unknown("node %s cannot be rendered: %v", node.Name, err), false
	}
	full := &unstructured.Unstructured{Object: obj}
	full.SetAPIVersion("v1")
	full.SetKind("Node")
	identity := map[string]string{"nodeName": node.Name}
	if node.Spec.ProviderID != "" {
		identity["providerID"] = node.Spec.ProviderID
	}
	call, err := v.providers[rule.Name].Prepare(&provider.Request{Rule: rule.Name, Object: full, Identity: identity})
	if err != nil {
		return provider.Unknown("the request cannot be made from node %s: %v", node.Name, err), false
	}
	a := entry(&v.mu, v.cache, rule.Name+"\x00"+call.Key())
	a.once.Do(func() {
		if err := v.limiters[rule.Name].Wait(ctx); err != nil {
			a.Answer = provider.Unknown("not asked: %v", err)
			return
		}
		a.Answer = call.Do(ctx)
		klog.V(4).InfoS("Provider answered about a node", "rule", rule.Name, "node", node.Name, "verdict", a.Verdict, "evidence", a.Evidence)
	})
	return a.Answer, true
}

// nodeKind is what a node's controls must share with it: the scheme of its
// spec.providerID (aws, gce, azure, vsphere: what is before "://"), or that it has none.
// A cloud API trusted on the cloud's nodes proves nothing about an on-premises or a
// virtual node, whose IDs it does not know and may answer 404 for.
func nodeKind(n *corev1.Node) string {
	id := n.Spec.ProviderID
	if id == "" {
		return "nodes without a providerID"
	}
	if scheme, _, ok := strings.Cut(id, "://"); ok {
		return "nodes with providerID " + scheme + "://"
	}
	return "nodes with a providerID without a scheme"
}

// maxNodeControlPages bounds the pages of nodes listed to find controls of one kind.
const maxNodeControlPages = 10

// checkNodes asks the rule's provider about Ready nodes of the same kind as node (the
// same providerID scheme, or none), once per pass and kind: their machines run, so each
// must be Present. One called Gone means the provider is broken; none answering Present
// means it is not shown to tell a running machine of that kind from a gone one.
func (v *Verifier) checkNodes(ctx context.Context, rule *Rule, node *corev1.Node) *check {
	kind := nodeKind(node)
	c := entry(&v.mu, v.checks, checkKey{rule: rule.Name, gr: schema.GroupResource{Resource: kind}})
	c.once.Do(func() { v.runNodeCheck(ctx, rule, kind, c) })
	return c
}

func (v *Verifier) runNodeCheck(ctx context.Context, rule *Rule, kind string, c *check) {
	if rule.Controls == 0 {
		return
	}
	requireLive := "; to act without that check, set controls.requireLive: false in the rule"
	opts := metav1.ListOptions{Limit: maxNodeControlCandidates}
	for page := 0; page < maxNodeControlPages && c.present+len(c.unknown) < rule.Controls; page++ {
		list, err := v.dynamic.Resource(nodes.GroupVersionResource).List(ctx, opts)
		if err != nil {
			c.distrust, c.unread = fmt.Sprintf("the nodes could not be listed to check its provider against Ready %s: %v", kind, err), true
			return
		}
		for i := range list.Items {
			if c.present+len(c.unknown) == rule.Controls {
				break
			}
			n := &corev1.Node{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, n); err != nil || !plan.IsReady(n) || nodeKind(n) != kind {
				continue
			}
			a, asked := v.askNode(ctx, rule, n)
			if !asked {
				continue // proves nothing about the provider
			}
			ref := nodes.Ref("", n.Name, n.UID)
			c.results = append(c.results, finalizev1alpha1.ControlResult{Target: ref, Verdict: a.Verdict, Evidence: a.Evidence})
			if a.CannotRun && c.cannotRun == "" {
				c.cannotRun = a.Evidence
			}
			switch a.Verdict {
			case finalizev1alpha1.VerdictGone:
				c.broken = true
				c.distrust = fmt.Sprintf("the provider is broken: it called the machine of node %s gone (%s), but that node is Ready", n.Name, a.Evidence)
				return
			case finalizev1alpha1.VerdictPresent:
				c.present++
				if a.Shape != nil {
					c.shapes = append(c.shapes, *a.Shape)
				}
			default:
				c.unknown = append(c.unknown, fmt.Sprintf("node %s: %s: %s", n.Name, a.Verdict, a.Evidence))
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	switch {
	case c.present > 0:
	case len(c.unknown) > 0:
		c.distrust = fmt.Sprintf("every Ready node among %s its provider was asked about answered Unknown (%s), so it is not shown to tell a running machine of that kind from a gone one", kind, joinFirst(c.unknown))
	case rule.RequireLive:
		c.distrust = fmt.Sprintf("no Ready node among %s could be asked about (none is Ready, or none has what the request needs), so its provider could not be checked against a machine of that kind that runs", kind) + requireLive
		c.unchecked = true
	}
}

func joinFirst(s []string) string {
	out := ""
	for i, x := range firstN(s, 3) {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}
