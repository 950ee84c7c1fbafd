package doctor

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
)

// A pod whose deletion is overdue (scan sets kube.Object.WaitsFor) waits for the kubelet of
// its node: the kubelet deletes it for good once its containers stopped and its volumes
// were released. Three causes, by what the Node object says: NodeGone (there is none),
// NodeNotReady (its Ready condition is False or Unknown, or its kubelet stopped
// reporting), KubeletNotFinishing (Ready, the kubelet reports, and has not finished).

// Facts of Kubernetes the words below rest on (kube-controller-manager v1.36).
const (
	// taintOutOfService is the taint that tells the pod garbage collector and the
	// attach-detach controller that a NotReady node's machine is off.
	taintOutOfService = "node.kubernetes.io/out-of-service"
	// nodeMonitorGracePeriod is the default --node-monitor-grace-period of kube-
	// controller-manager: a node whose kubelet has not reported for longer is marked
	// Unknown by the node lifecycle controller, when it runs.
	nodeMonitorGracePeriod = 50 * time.Second
	// leaseNamespace holds the Lease each kubelet renews every 10 s.
	leaseNamespace = corev1.NamespaceNodeLease
)

func init() {
	register(family{
		causes: []Cause{
			{Reason: finalizev1alpha1.ReasonNodeGone, Priority: 2,
				Help: "a pod waits for its kubelet past --pod-grace-margin, and its Node object does not exist",
				Doc:  "a pod whose deletion waits for its kubelet (see below) is bound to a node whose Node object does not exist"},
			{Reason: finalizev1alpha1.ReasonNodeNotReady, Priority: 2,
				Help: "a pod waits for its kubelet past --pod-grace-margin, and its node is NotReady or Unknown, or its kubelet shows no sign of life",
				Doc:  "a pod whose deletion waits for its kubelet is bound to a node that has Ready `False` or `Unknown` (since when, reason and message), or Ready `True` while its kubelet shows no sign of life within 100 s by the rule a force deletion is refused by ([safety.md](safety.md#force-deleting-a-pod-whose-node-is-gone)); the last heartbeat is the latest of the Ready condition's `lastHeartbeatTime`, the node's Lease `renewTime` and the Lease's last change as the API server saw it"},
			{Reason: finalizev1alpha1.ReasonKubeletNotFinishing, Priority: 2,
				Help: "a pod waits for its kubelet past --pod-grace-margin, and its node is Ready, but the kubelet has not stopped its containers or released its volumes",
				Doc:  "a pod whose deletion waits for its kubelet is bound to a node that is Ready, and its kubelet reports: the containers it has not stopped, and the pod's volumes still in the node's `status.volumesInUse` or attached by a VolumeAttachment, with their CSI drivers"},
		},
		object: func(d *diagnoser, o *kube.Object) []finding {
			if o.WaitsFor == nil {
				return nil
			}
			return []finding{d.podWaitsForKubelet(o)}
		},
	})
}

// nodeState is what the doctor read of one node.
type nodeState struct {
	node *corev1.Node
	gone bool
	err  error
	// lease is the node's Lease, nil when there is none or it could not be read.
	lease *coordinationv1.Lease
	// heartbeat is the latest of the Ready condition's lastHeartbeatTime, the node
	// Lease's renewTime (both by the kubelet's clock) and the last change of the Lease
	// the API server saw (by its own); source says which.
	heartbeat time.Time
	source    string
}

// nodeKey keys what the doctor read of one node.
type nodeKey string

func (d *diagnoser) node(name string) *nodeState {
	return once(d.f, nodeKey(name), func() *nodeState { return d.readNode(name) })
}

// readNode reads a node and its Lease.
func (d *diagnoser) readNode(name string) *nodeState {
	s := &nodeState{}
	n, err := d.f.kube.CoreV1().Nodes().Get(d.f.ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s.gone = true
		return s
	case err != nil:
		s.err = err
		d.f.warnf("could not read node %s, so the pods that wait for its kubelet are not diagnosed: %v", name, err)
		return s
	}
	s.node = n
	if c := readyCondition(n); c != nil && !c.LastHeartbeatTime.IsZero() {
		s.heartbeat, s.source = c.LastHeartbeatTime.Time, "node status"
	}
	lease, err := d.f.kube.CoordinationV1().Leases(leaseNamespace).Get(d.f.ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		s.lease = lease
		if lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(s.heartbeat) {
			s.heartbeat, s.source = lease.Spec.RenewTime.Time, "Lease "+leaseNamespace+"/"+name
		}
		if changed := plan.LastChange(lease); changed.After(s.heartbeat) {
			s.heartbeat, s.source = changed, "Lease "+leaseNamespace+"/"+name+", changed by the API server's clock"
		}
	case !apierrors.IsNotFound(err):
		d.f.warnf("could not read Lease %s/%s, so the last heartbeat of node %s is its status's: %v", leaseNamespace, name, name, err)
	}
	return s
}

func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func nodeSubject(name string) finalizev1alpha1.Subject {
	return finalizev1alpha1.Subject{Kind: "Node", Name: name}
}

func kubeletOf(node string) string { return "kubelet of node " + node }

// podWaitsForKubelet diagnoses a pod whose deletion is overdue.
func (d *diagnoser) podWaitsForKubelet(o *kube.Object) finding {
	name := o.WaitsFor.Node
	overdue := ago(d.f.now, o.Meta.DeletionTimestamp.Time)
	if name == "" {
		return rooted(finalizev1alpha1.ReasonUnknown, subjectOf(o),
			"its grace period ended "+overdue+" ago, but it was never scheduled to a node, so no kubelet holds it",
			"inspect it: kubectl get pod -n "+o.Meta.Namespace+" "+o.Meta.Name+" -o yaml", "a pod never scheduled waits for a kubelet")
	}
	// The scan read the pod for its node; a scan that did not is read again.
	pod, err := d.f.res.Pods[o.Meta.UID], error(nil)
	if pod == nil {
		pod, err = d.f.kube.CoreV1().Pods(o.Meta.Namespace).Get(d.f.ctx, o.Meta.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err) || err == nil && pod.UID != o.Meta.UID:
		return progressing(o, "the pod was deleted since the scan", kubeletOf(name))
	case err != nil:
		d.f.warnf("could not read pod %s/%s, so its containers and volumes are not named: %v", o.Meta.Namespace, o.Meta.Name, err)
		pod = nil
	}
	st := d.node(name)
	if st.err != nil {
		return rooted(finalizev1alpha1.ReasonUnknown, nodeSubject(name),
			fmt.Sprintf("its grace period ended %s ago and it waits for the %s, which could not be read: %v", overdue, kubeletOf(name), st.err),
			"kubectl get node "+name, "node "+name+" could not be read")
	}
	force := fmt.Sprintf("kubectl delete pod -n %s %s --grace-period=0 --force", o.Meta.Namespace, o.Meta.Name)
	caution := d.twoWriters(o, pod)
	switch {
	case st.gone:
		msg := fmt.Sprintf("its grace period ended %s ago and it waits for the %s, but Node %s does not exist: no kubelet will ever confirm that its containers stopped; the pod garbage collector of kube-controller-manager force-deletes pods bound to a missing node 40 s after it finds the node gone (it looks every 20 s): if the node has been gone longer, it is not running", overdue, kubeletOf(name), name)
		next := fmt.Sprintf("make sure machine %s is off for good (your cloud's console or instance API), then force-delete the pod: %s%s", name, force, caution)
		return rooted(finalizev1alpha1.ReasonNodeGone, nodeSubject(name), msg, next,
			fmt.Sprintf("Node %s does not exist, and the pods bound to it wait for a kubelet that will never answer", name)).
			withRootNext(fmt.Sprintf("make sure machine %s is off for good, then force-delete each pod listed (kubectl delete pod -n NAMESPACE NAME --grace-period=0 --force); see the caution of each pod", name))
	case !d.ready(st):
		why := d.notReady(st)
		msg := fmt.Sprintf("its grace period ended %s ago and it waits for the %s, which has not confirmed that its containers stopped: node %s %s", overdue, kubeletOf(name), name, why)
		if tainted(st.node) {
			msg += fmt.Sprintf("; the node carries %s, so the pod garbage collector of kube-controller-manager should force-delete it: check that kube-controller-manager runs", taintOutOfService)
		}
		next := fmt.Sprintf("find out whether machine %s runs: if its kubelet comes back, it finishes the deletion. If the machine is off for good: kubectl taint nodes %s %s=nodeshutdown:NoExecute (the pod garbage collector then force-deletes the node's terminating pods and the attach-detach controller detaches their volumes), or force-delete this pod alone: %s%s", name, name, taintOutOfService, force, caution)
		return rooted(finalizev1alpha1.ReasonNodeNotReady, nodeSubject(name), msg, next,
			fmt.Sprintf("node %s %s, and the pods being deleted on it wait for its kubelet", name, why)).
			withRootNext(fmt.Sprintf("find out whether machine %s runs; if it is off for good: kubectl taint nodes %s %s=nodeshutdown:NoExecute", name, name, taintOutOfService))
	}
	what, drivers := d.unfinished(pod, st.node)
	msg := fmt.Sprintf("its grace period ended %s ago; node %s is Ready and its kubelet reported %s ago, but has not finished the pod: %s", overdue, name, ago(d.f.now, st.heartbeat), what)
	uid := string(o.Meta.UID)
	next := fmt.Sprintf("read why in the kubelet's log on node %s: journalctl -u kubelet | grep %s", name, uid)
	for _, drv := range drivers {
		next += fmt.Sprintf("; and the log of the node plugin of CSI driver %s on node %s (kubectl get pods -A -o wide --field-selector spec.nodeName=%s names it)", drv, name, name)
	}
	return rooted(finalizev1alpha1.ReasonKubeletNotFinishing, nodeSubject(name), msg, next,
		fmt.Sprintf("the kubelet of node %s reports, but has not finished the pods being deleted on it", name)).
		withRootNext(fmt.Sprintf("read the kubelet's log on node %s: journalctl -u kubelet", name))
}

// ready: the Ready condition is True and the kubelet shows a sign of life, by the rule
// a force deletion is refused by (plan.KubeletSigns: the last change of its Lease the
// API server saw, its renewTime or its heartbeat, within plan.AliveWindow). The node
// lifecycle controller marks a silent node Unknown only when it runs.
func (d *diagnoser) ready(st *nodeState) bool {
	c := readyCondition(st.node)
	return c != nil && c.Status == corev1.ConditionTrue && plan.KubeletSigns(st.node.Name, st.lease, st.node, d.f.now) != ""
}

// notReady says how the node is not ready: since when, and its last heartbeat.
func (d *diagnoser) notReady(st *nodeState) string {
	c := readyCondition(st.node)
	var b strings.Builder
	switch {
	case c == nil:
		b.WriteString("has no Ready condition")
	case c.Status == corev1.ConditionTrue:
		fmt.Fprintf(&b, "is Ready=True since %s ago, but stale: its kubelet has shown no sign of life within the last %s, longer than the %s after which the node lifecycle controller of kube-controller-manager marks it Unknown, so that controller is not running",
			ago(d.f.now, c.LastTransitionTime.Time), plan.AliveWindow(st.lease), nodeMonitorGracePeriod)
	default:
		fmt.Fprintf(&b, "is NotReady (Ready=%s since %s ago", c.Status, ago(d.f.now, c.LastTransitionTime.Time))
		if c.Reason != "" {
			fmt.Fprintf(&b, ", %s", c.Reason)
		}
		if c.Message != "" {
			fmt.Fprintf(&b, ": %s", strings.TrimSuffix(c.Message, "."))
		}
		b.WriteString(")")
	}
	if st.heartbeat.IsZero() {
		b.WriteString("; its kubelet never reported")
	} else {
		fmt.Fprintf(&b, "; its kubelet last reported %s ago (%s)", ago(d.f.now, st.heartbeat), st.source)
	}
	return b.String()
}

func tainted(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == taintOutOfService && t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// twoWriters is the caution a force deletion needs: a StatefulSet starts a pod of the same
// name elsewhere at once, and a ReadWriteOnce volume then has two writers if the old
// machine still runs.
func (d *diagnoser) twoWriters(o *kube.Object, pod *corev1.Pod) string {
	var why []string
	for _, ref := range o.Meta.OwnerReferences {
		if ref.Kind == "StatefulSet" && ref.Controller != nil && *ref.Controller {
			why = append(why, fmt.Sprintf("StatefulSet %s starts %s again on another node at once", ref.Name, o.Meta.Name))
		}
	}
	for _, c := range d.claimsOf(pod) {
		for _, m := range c.Spec.AccessModes {
			if m == corev1.ReadWriteOnce || m == corev1.ReadWriteOncePod {
				why = append(why, fmt.Sprintf("claim %s is %s and is attached elsewhere next", c.Name, m))
				break
			}
		}
	}
	if len(why) == 0 {
		return ""
	}
	return ". Only once the machine is off: " + strings.Join(why, ", ") + "; if the old containers still run, two writers corrupt the data"
}

// claimsOf reads the claims a pod mounts; those that cannot be read are left out.
func (d *diagnoser) claimsOf(pod *corev1.Pod) []*corev1.PersistentVolumeClaim {
	if pod == nil {
		return nil
	}
	var out []*corev1.PersistentVolumeClaim
	for _, v := range pod.Spec.Volumes {
		name := ""
		switch {
		case v.PersistentVolumeClaim != nil:
			name = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			name = pod.Name + "-" + v.Name
		default:
			continue
		}
		c, err := d.f.kube.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(d.f.ctx, name, metav1.GetOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				d.f.warnf("could not read claim %s/%s: %v", pod.Namespace, name, err)
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

// unfinished says what the kubelet has not finished: containers not terminated, volumes
// still in use on the node or attached to it. drivers are the CSI drivers of those volumes.
func (d *diagnoser) unfinished(pod *corev1.Pod, node *corev1.Node) (string, []string) {
	if pod == nil {
		return "the pod could not be read", nil
	}
	var parts []string
	var states []string
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		switch s := cs.State; {
		case s.Running != nil:
			states = append(states, fmt.Sprintf("%s running since %s ago", cs.Name, ago(d.f.now, s.Running.StartedAt.Time)))
		case s.Waiting != nil:
			states = append(states, fmt.Sprintf("%s waiting (%s)", cs.Name, s.Waiting.Reason))
		}
	}
	if len(states) > 0 {
		parts = append(parts, "containers not stopped: "+strings.Join(states, ", "))
	} else {
		parts = append(parts, "every container stopped, and the kubelet has not released what the pod holds on the node (its volumes, including those the API does not show: emptyDir, configMap, secret, projected)")
	}
	inUse := map[string]bool{}
	for _, v := range node.Status.VolumesInUse {
		inUse[string(v)] = true
	}
	drivers := map[string]bool{}
	var volumes []string
	attachments, _ := d.volumeAttachments()
	for _, c := range d.claimsOf(pod) {
		if c.Spec.VolumeName == "" {
			continue
		}
		pv, err := d.f.kube.CoreV1().PersistentVolumes().Get(d.f.ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			continue
		}
		var where []string
		if csi := pv.Spec.CSI; csi != nil && inUse["kubernetes.io/csi/"+csi.Driver+"^"+csi.VolumeHandle] {
			where = append(where, "in use on the node (status.volumesInUse)")
			drivers[csi.Driver] = true
		}
		for _, a := range attachments {
			if a.Volume == pv.Name && a.Node == node.Name {
				where = append(where, fmt.Sprintf("attached by VolumeAttachment %s of %s", a.Name, a.Attacher))
				drivers[a.Attacher] = true
			}
		}
		if len(where) > 0 {
			volumes = append(volumes, fmt.Sprintf("claim %s (volume %s) %s", c.Name, pv.Name, strings.Join(where, ", ")))
		}
	}
	if len(volumes) > 0 {
		parts = append(parts, "volumes not released: "+strings.Join(volumes, "; "))
	}
	out := make([]string, 0, len(drivers))
	for drv := range drivers {
		out = append(out, drv)
	}
	sort.Strings(out)
	return strings.Join(parts, "; "), out
}

// podBlockerMessage is what a namespace says of a pod it holds that waits for a kubelet.
func podBlockerMessage(o *kube.Object) string {
	if o.WaitsFor == nil {
		return ""
	}
	if o.WaitsFor.Node == "" {
		return "waits for a kubelet, never scheduled"
	}
	return "waits for the " + kubeletOf(o.WaitsFor.Node)
}

// onlyPodsWaiting: every object is a pod that waits for its kubelet and has no finalizer.
func onlyPodsWaiting(objs []*kube.Object) bool {
	for _, o := range objs {
		if o.WaitsFor == nil || len(o.Finalizers) > 0 {
			return false
		}
	}
	return len(objs) > 0
}

// podsWaitingMessage says that the pods wait for their kubelets.
func podsWaitingMessage(pods []*kube.Object) string {
	if len(pods) == 1 {
		return "1 pod being deleted waits for its kubelet"
	}
	return words.Count(len(pods), "pod") + " being deleted wait for their kubelets"
}
