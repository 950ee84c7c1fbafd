package doctor

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

func init() {
	register(family{
		causes: []Cause{
			{Reason: finalizev1alpha1.ReasonSnapshotsUsingClaim, Priority: 2,
				Help: "VolumeSnapshots taken from the claim are not ready yet",
				Doc:  "`snapshot.storage.kubernetes.io/pvc-as-source-protection`: the VolumeSnapshots taken from the claim that are not ready (their error first); the ready ones are named too. None pending: the snapshot-controller is judged as any controller"},
			{Reason: finalizev1alpha1.ReasonVolumeStillAttached, Priority: 2,
				Help: "VolumeAttachments still attach the volume to nodes",
				Doc:  "`external-attacher/<driver>` on a PV: its VolumeAttachments, their nodes, attached or being detached, and their attach or detach errors. None left: the external-attacher is judged as any controller"},
		},
		finalizers: []rule{
			{applies: func(o *kube.Object, fin finalizev1alpha1.Finalizer) bool {
				return fin.Name == finalizerSnapshotSource && o.Resource.GroupResource() == claimsResource.GroupResource()
			},
				explain: func(d *diagnoser, o *kube.Object, fin finalizev1alpha1.Finalizer) []finding {
					return []finding{d.snapshotSource(o, fin)}
				}},
			{applies: func(o *kube.Object, fin finalizev1alpha1.Finalizer) bool {
				return strings.HasPrefix(fin.Name, finalizerAttacherPrefix) && isVolume(o)
			},
				explain: func(d *diagnoser, o *kube.Object, fin finalizev1alpha1.Finalizer) []finding {
					return []finding{d.attached(o, fin)}
				}},
		},
	})
}

// The protections of the CSI sidecars that wait for other storage objects: the
// snapshot-controller keeps a claim while snapshots are taken from it, the
// external-attacher keeps a volume while it is attached to nodes.

const (
	finalizerSnapshotSource = "snapshot.storage.kubernetes.io/pvc-as-source-protection"
	finalizerAttacherPrefix = "external-attacher/"
)

var (
	volumeSnapshotsResource   = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}, Kind: "VolumeSnapshot", Namespaced: true}
	volumeAttachmentsResource = kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"}, Kind: "VolumeAttachment"}
)

// snapshotsKey keys the VolumeSnapshots of a namespace; attachmentsKey every
// VolumeAttachment.
type (
	snapshotsKey   string
	attachmentsKey struct{}
)

// snapshots and attachments are a list read and its error.
type (
	snapshots struct {
		items []volumeSnapshot
		err   error
	}
	attachments struct {
		items []volumeAttachment
		err   error
	}
)

type volumeSnapshot struct {
	Name, Namespace, Source string
	UID                     types.UID
	Ready                   bool
	// Status says why it is not ready: its error, or that it has no status yet.
	Status   string
	Failed   bool
	Deleting bool
}

type volumeAttachment struct {
	Name, Attacher, Node, Volume string
	UID                          types.UID
	Attached, Deleting           bool
	Error                        string
}

// volumeSnapshotsIn lists the VolumeSnapshots of a namespace, in pages, keeping what the
// rule needs.
func (d *diagnoser) volumeSnapshotsIn(ns string) ([]volumeSnapshot, error) {
	s := once(d.f, snapshotsKey(ns), func() snapshots { return d.readVolumeSnapshots(ns) })
	return s.items, s.err
}

func (d *diagnoser) readVolumeSnapshots(ns string) snapshots {
	var out []volumeSnapshot
	err := d.f.each(func(opts metav1.ListOptions) (runtime.Object, error) {
		return d.f.dyn.Resource(volumeSnapshotsResource.GroupVersionResource).Namespace(ns).List(d.f.ctx, opts)
	}, metav1.ListOptions{}, func(obj runtime.Object) error {
		u := obj.(*unstructured.Unstructured)
		s := volumeSnapshot{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), Deleting: u.GetDeletionTimestamp() != nil}
		s.Source, _, _ = unstructured.NestedString(u.Object, "spec", "source", "persistentVolumeClaimName")
		ready, found, _ := unstructured.NestedBool(u.Object, "status", "readyToUse")
		s.Ready = found && ready
		switch msg, _, _ := unstructured.NestedString(u.Object, "status", "error", "message"); {
		case s.Ready:
		case msg != "":
			s.Status, s.Failed = "not ready: "+msg, true
		case !found:
			s.Status = "not ready, no status yet"
		default:
			s.Status = "not ready"
		}
		out = append(out, s)
		return nil
	})
	return snapshots{out, err}
}

// snapshotSource: the snapshot-controller keeps pvc-as-source-protection on a claim while
// a VolumeSnapshot taken from it is not ready, so that the source does not go while the
// snapshot is cut.
func (d *diagnoser) snapshotSource(o *kube.Object, fin finalizev1alpha1.Finalizer) finding {
	all, err := d.volumeSnapshotsIn(o.Meta.Namespace)
	if err != nil {
		fd := d.custom(o, fin)
		if apierrors.IsNotFound(err) {
			fd.message += "; the VolumeSnapshot API (snapshot.storage.k8s.io/v1) is not served: the snapshot CRDs, and with them the snapshot-controller, are uninstalled"
		} else {
			d.f.warnf("could not list volumesnapshots.snapshot.storage.k8s.io in namespace %s, so the snapshots taken from its claims are not named: %v", o.Meta.Namespace, err)
		}
		return fd
	}
	var pending, ready []volumeSnapshot
	for _, s := range all {
		if s.Source != o.Meta.Name {
			continue
		}
		if s.Ready {
			ready = append(ready, s)
		} else {
			pending = append(pending, s)
		}
	}
	// A snapshot that reports an error explains more than one still being cut.
	sort.SliceStable(pending, func(i, j int) bool { return pending[i].Failed && !pending[j].Failed })
	var readyNames []string
	for _, s := range ready {
		readyNames = append(readyNames, s.Name)
	}
	if len(pending) == 0 {
		fd := d.custom(o, fin)
		if len(ready) > 0 {
			fd.message += fmt.Sprintf("; every VolumeSnapshot taken from the claim is ready (%s), so the snapshot-controller should have released it", strings.Join(readyNames, ", "))
		} else {
			fd.message += fmt.Sprintf("; no VolumeSnapshot in namespace %s names the claim as its source, so the snapshot-controller should have released it", o.Meta.Namespace)
		}
		return fd
	}
	fd := finding{reason: finalizev1alpha1.ReasonSnapshotsUsingClaim}
	var names []string
	for _, s := range pending {
		names = append(names, fmt.Sprintf("%s (%s)", s.Name, s.Status))
		if st, ok := d.f.byUID[s.UID]; ok {
			fd.waitsOn = append(fd.waitsOn, st)
			fd.blockers = append(fd.blockers, stuckBlocker(st, s.Status))
			continue
		}
		fd.blockers = append(fd.blockers, finalizev1alpha1.Blocker{Target: volumeSnapshotsResource.Ref(s.Namespace, s.Name, s.UID), Message: s.Status})
		if fd.root == nil {
			fd.next = fmt.Sprintf("see why VolumeSnapshot %s is not ready: kubectl describe volumesnapshot %s -n %s (its error, the CSI driver's snapshotter); the snapshot-controller releases the claim once every snapshot taken from it is ready or gone", s.Name, s.Name, s.Namespace)
			fd.root = &rootSpec{reason: finalizev1alpha1.ReasonSnapshotsUsingClaim, subject: finalizev1alpha1.Subject{Kind: "VolumeSnapshot", Namespace: s.Namespace, Name: s.Name},
				message: fmt.Sprintf("VolumeSnapshot %s/%s is %s, and the claims it is taken from are kept until it is ready", s.Namespace, s.Name, s.Status), next: fd.next}
		}
	}
	if fd.next == "" {
		fd.next = "the snapshots taken from the claim are being deleted themselves: see their causes"
	}
	verb := map[bool]string{true: "is", false: "are"}[len(pending) == 1]
	fd.message = fmt.Sprintf("%s taken from the claim %s not ready: %s; %s keeps the claim until %s ready",
		words.Count(len(pending), "VolumeSnapshot"), verb, strings.Join(names, ", "), fin.Name, map[bool]string{true: "it is", false: "they are"}[len(pending) == 1])
	if len(ready) > 0 {
		fd.message += fmt.Sprintf("; already ready: %s", strings.Join(readyNames, ", "))
	}
	return fd
}

// volumeAttachments lists every VolumeAttachment once, in pages.
func (d *diagnoser) volumeAttachments() ([]volumeAttachment, error) {
	a := once(d.f, attachmentsKey{}, d.readVolumeAttachments)
	return a.items, a.err
}

func (d *diagnoser) readVolumeAttachments() attachments {
	var c attachments
	c.err = d.f.each(func(opts metav1.ListOptions) (runtime.Object, error) {
		return d.f.dyn.Resource(volumeAttachmentsResource.GroupVersionResource).List(d.f.ctx, opts)
	}, metav1.ListOptions{}, func(obj runtime.Object) error {
		u := obj.(*unstructured.Unstructured)
		a := volumeAttachment{Name: u.GetName(), UID: u.GetUID(), Deleting: u.GetDeletionTimestamp() != nil}
		a.Attacher, _, _ = unstructured.NestedString(u.Object, "spec", "attacher")
		a.Node, _, _ = unstructured.NestedString(u.Object, "spec", "nodeName")
		a.Volume, _, _ = unstructured.NestedString(u.Object, "spec", "source", "persistentVolumeName")
		a.Attached, _, _ = unstructured.NestedBool(u.Object, "status", "attached")
		if msg, _, _ := unstructured.NestedString(u.Object, "status", "detachError", "message"); msg != "" {
			a.Error = "detach failed: " + msg
		} else if msg, _, _ := unstructured.NestedString(u.Object, "status", "attachError", "message"); msg != "" {
			a.Error = "attach failed: " + msg
		}
		if a.Volume != "" {
			c.items = append(c.items, a)
		}
		return nil
	})
	if c.err != nil {
		d.f.warnf("could not list volumeattachments.storage.k8s.io, so the nodes that hold volumes are not named: %v", c.err)
	}
	return c
}

func (a *volumeAttachment) state() string {
	s := "attached"
	if !a.Attached {
		s = "not attached yet"
	}
	if a.Deleting {
		s = "being detached"
	}
	if a.Error != "" {
		s += "; " + a.Error
	}
	return fmt.Sprintf("on node %s, %s", a.Node, s)
}

// attached: the CSI external-attacher keeps external-attacher/<driver> on a volume while
// a VolumeAttachment attaches it to a node.
func (d *diagnoser) attached(o *kube.Object, fin finalizev1alpha1.Finalizer) finding {
	all, err := d.volumeAttachments()
	if err != nil {
		return d.custom(o, fin)
	}
	var mine []volumeAttachment
	for _, a := range all {
		if a.Volume == o.Meta.Name {
			mine = append(mine, a)
		}
	}
	if len(mine) == 0 {
		fd := d.custom(o, fin)
		fd.message += "; no VolumeAttachment attaches the volume any more, so the external-attacher should have released it"
		return fd
	}
	fd := finding{reason: finalizev1alpha1.ReasonVolumeStillAttached}
	var names []string
	for _, a := range mine {
		names = append(names, fmt.Sprintf("%s (%s)", a.Name, a.state()))
		if st, ok := d.f.byUID[a.UID]; ok {
			fd.waitsOn = append(fd.waitsOn, st)
			fd.blockers = append(fd.blockers, stuckBlocker(st, a.state()))
			continue
		}
		fd.blockers = append(fd.blockers, finalizev1alpha1.Blocker{Target: volumeAttachmentsResource.Ref("", a.Name, a.UID), Message: a.state()})
		if fd.root == nil {
			fd.next = fmt.Sprintf("VolumeAttachment %s goes once nothing on node %s uses the volume: the attach-detach controller of kube-controller-manager deletes it, then the external-attacher of %s detaches the volume and releases it; see what still uses it: kubectl get pods -A -o wide --field-selector spec.nodeName=%s",
				a.Name, a.Node, a.Attacher, a.Node)
			fd.root = &rootSpec{reason: finalizev1alpha1.ReasonVolumeStillAttached, subject: finalizev1alpha1.Subject{Kind: "VolumeAttachment", Name: a.Name},
				message: fmt.Sprintf("VolumeAttachment %s attaches volumes being deleted to node %s (%s)", a.Name, a.Node, a.state()), next: fd.next}
		}
	}
	if fd.next == "" {
		fd.next = "its VolumeAttachments are being deleted themselves: see their causes"
	}
	fd.message = fmt.Sprintf("%s still %s the volume: %s; %s keeps it until %s gone",
		words.Count(len(mine), "VolumeAttachment"), map[bool]string{true: "attaches", false: "attach"}[len(mine) == 1], strings.Join(names, ", "), fin.Name,
		map[bool]string{true: "it is", false: "they are"}[len(mine) == 1])
	return fd
}
