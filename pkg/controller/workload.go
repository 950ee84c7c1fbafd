package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Workload is a Deployment, StatefulSet or DaemonSet of a controller, as it is now.
type Workload struct {
	Kind, Namespace, Name string
	Ready, Desired        int64
	// ServiceAccount is the one its pod template runs as.
	ServiceAccount string
	// Watches is what its pod template says of the namespaces it watches (an environment
	// variable or a flag), empty when it says nothing.
	Watches []WatchSetting
	// Selector is its spec.selector.matchLabels: how to find all of its pods.
	Selector map[string]string
	// Install is its InstallLabel: the release it belongs to, "" when it has none.
	Install string
}

// InstallLabel is the label Helm and the Kubernetes recommended labels give every object
// of one install of a program (its release name).
const InstallLabel = "app.kubernetes.io/instance"

// WatchSetting is one setting of a pod template that limits a controller to namespaces.
type WatchSetting struct {
	// Setting is how it is set: "env WATCH_NAMESPACE" or "flag --namespace".
	Setting string
	// Namespaces are its values; empty means every namespace.
	Namespaces []string
}

func (w *Workload) String() string {
	return fmt.Sprintf("%s %s/%s has %d/%d ready replicas", w.Kind, w.Namespace, w.Name, w.Ready, w.Desired)
}

// Running says whether at least one replica is ready (a controller with leader
// election works with one of several).
func (w *Workload) Running() bool { return w.Ready > 0 }

// Excludes says how w's pod template keeps it from watching namespace ns, or "".
func (w *Workload) Excludes(ns string) string {
	if ns == "" {
		return ""
	}
	for _, s := range w.Watches {
		if len(s.Namespaces) > 0 && !slices.Contains(s.Namespaces, ns) {
			return fmt.Sprintf("its pod template sets %s to %s: it may not watch namespace %s", s.Setting, strings.Join(s.Namespaces, ","), ns)
		}
	}
	return ""
}

// ScopeUnproven says why w, a workload that does not exclude namespace ns (Excludes), is
// still not proven to run for the objects of ns; "" when it is. It is proven when ns is
// "" (a cluster-scoped object); when its pod template says it watches ns (by name, or
// every namespace: "" or "*"); when it runs in ns itself (an install watches every
// namespace or its own); or when it is the program's only install, read in full: every
// workload of ws is in its namespace and of its Helm release (InstallLabel), and no
// workload kind went unread. A single install that names no namespace watches them all.
// Installs of one program in several namespaces, or several releases of it, are installs
// per team or tenant, each scoped by what a pod template does not show (a ConfigMap, a
// custom resource, a flag of its own), so one that names no namespace is not taken to
// watch a third.
func (w *Workload) ScopeUnproven(ws Workloads, ns string) string {
	if ns == "" || w.Namespace == ns || len(w.Watches) > 0 {
		return ""
	}
	var elsewhere, releases []string
	for i := range ws.Found {
		o := &ws.Found[i]
		switch {
		case o.Namespace != w.Namespace:
			if !slices.Contains(elsewhere, o.Namespace) {
				elsewhere = append(elsewhere, o.Namespace)
			}
		case o.Install != "" && w.Install != "" && o.Install != w.Install:
			if !slices.Contains(releases, o.Install) {
				releases = append(releases, o.Install)
			}
		}
	}
	const says = "its pod template does not say which namespaces it watches, and "
	switch {
	case len(elsewhere) > 0:
		sort.Strings(elsewhere)
		return says + fmt.Sprintf("the program is installed in other namespaces too (%s), so it may watch its own only", strings.Join(elsewhere, ", "))
	case len(releases) > 0:
		sort.Strings(releases)
		return says + fmt.Sprintf("other releases of the program run beside it (%s %s), so each may watch some namespaces only", InstallLabel, strings.Join(releases, ", "))
	case len(ws.Unread) > 0:
		return says + fmt.Sprintf("its %ss could not be read, so whether the program is installed elsewhere too is not known", strings.Join(ws.Unread, "s, "))
	}
	return ""
}

// WatchedNamespaces are the namespaces its pod template limits it to, all its settings
// together; nil when it names none, or one setting says every namespace.
func (w *Workload) WatchedNamespaces() []string {
	var out []string
	for _, s := range w.Watches {
		if len(s.Namespaces) == 0 {
			return nil
		}
		for _, n := range s.Namespaces {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// WatchesNamespace says whether the workload reconciles objects of namespace ns as far
// as its pod template says (WatchedNamespaces): every namespace unless it names some.
// It asks what a workload that stays will do; Excludes, what may keep a running one from
// an object (any one setting that leaves ns out).
func (w *Workload) WatchesNamespace(ns string) bool {
	watched := w.WatchedNamespaces()
	return watched == nil || ns == "" || slices.Contains(watched, ns)
}

// LogsCommand is the command that reads the logs of every pod of the workload since d ago: by its selector's
// matchLabels (with leader election, one pod of several works, and kubectl logs
// deploy/NAME reads one chosen pod, perhaps a standby), every container, each line
// prefixed with its pod and container; by kind and name only when the selector has no
// matchLabels. kubectl shows the last 10 lines of each pod when given a selector unless
// --tail says otherwise.
func (w *Workload) LogsCommand(d time.Duration) string {
	if len(w.Selector) == 0 {
		return fmt.Sprintf("kubectl logs -n %s %s/%s --all-containers --since=%s", w.Namespace, logsKind[w.Kind], w.Name, sinceFlag(d))
	}
	keys := make([]string, 0, len(w.Selector))
	for k := range w.Selector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sel []string
	for _, k := range keys {
		sel = append(sel, k+"="+w.Selector[k])
	}
	return fmt.Sprintf("kubectl logs -n %s -l %s --all-containers --prefix --tail=-1 --since=%s", w.Namespace, strings.Join(sel, ","), sinceFlag(d))
}

// GetCommand is the command that shows the workload, its pod template included.
func (w *Workload) GetCommand() string {
	return fmt.Sprintf("kubectl get -n %s %s/%s -o yaml", w.Namespace, logsKind[w.Kind], w.Name)
}

// logsKind is kubectl's short name of each workload kind.
var logsKind = map[string]string{"Deployment": "deploy", "StatefulSet": "sts", "DaemonSet": "ds"}

// sinceFlag is a --since value that covers d, in whole minutes (at least one).
func sinceFlag(d time.Duration) string {
	m := int(d/time.Minute) + 1
	if m >= 60*48 {
		return "48h"
	}
	return fmt.Sprintf("%dm", m)
}

// workloadFields say where each kind of workload keeps its desired and ready replicas.
var workloadFields = map[string]struct {
	resource       schema.GroupVersionResource
	desired, ready []string
	desiredDefault int64
}{
	"Deployment":  {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, []string{"spec", "replicas"}, []string{"status", "readyReplicas"}, 1},
	"StatefulSet": {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, []string{"spec", "replicas"}, []string{"status", "readyReplicas"}, 1},
	"DaemonSet":   {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, []string{"status", "desiredNumberScheduled"}, []string{"status", "numberReady"}, 0},
}

// workloadKinds in the order they are named.
var workloadKinds = []string{"Deployment", "StatefulSet", "DaemonSet"}

// AppNameLabel is the label a controller's workload is often found by.
const AppNameLabel = "app.kubernetes.io/name"

// Workloads are what was found of the workloads named like one controller.
type Workloads struct {
	Found []Workload
	// Unread names the kinds that could not be read: absence is not proven for them.
	Unread []string
}

// Finder finds controllers' workloads anywhere in the cluster, each name's once.
type Finder struct {
	Dynamic dynamic.Interface
	// Scan is a scan of the cluster made with its index, whose index of workloads is used
	// when the scan listed them all.
	Scan *scan.Result
	// ChunkSize is the page size of its lists; 0 lists in one request.
	ChunkSize int64
	// Warnf is told of every read that failed.
	Warnf func(format string, args ...any)

	found map[string]Workloads
}

// Workloads finds the Deployments, StatefulSets and DaemonSets named like a controller,
// or labelled app.kubernetes.io/name with its name, anywhere in the cluster, whatever the
// scan looked at: from the scan's index when the scan listed every workload of the
// cluster, else by a targeted cluster-wide list per name. What it says of a controller
// never depends on how narrow the scan was.
func (f *Finder) Workloads(ctx context.Context, names ...string) Workloads {
	var out Workloads
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		w, ok := f.found[n]
		if !ok {
			if f.found == nil {
				f.found = map[string]Workloads{}
			}
			w = f.readWorkloads(ctx, n)
			f.found[n] = w
		}
		for _, st := range w.Found {
			if !slices.ContainsFunc(out.Found, func(x Workload) bool {
				return x.Kind == st.Kind && x.Namespace == st.Namespace && x.Name == st.Name
			}) {
				out.Found = append(out.Found, st)
			}
		}
		for _, k := range w.Unread {
			if !slices.Contains(out.Unread, k) {
				out.Unread = append(out.Unread, k)
			}
		}
	}
	sort.SliceStable(out.Found, func(i, j int) bool {
		a, b := out.Found[i], out.Found[j]
		return a.Kind+"/"+a.Namespace+"/"+a.Name < b.Kind+"/"+b.Namespace+"/"+b.Name
	})
	return out
}

// readWorkloads reads the workloads of one name, kind by kind.
func (f *Finder) readWorkloads(ctx context.Context, name string) Workloads {
	var out Workloads
	for _, kind := range workloadKinds {
		fields := workloadFields[kind]
		var objs []*unstructured.Unstructured
		var err error
		if f.indexHolds(fields.resource.GroupResource()) {
			objs, err = f.workloadsFromIndex(ctx, kind, name)
		} else {
			objs, err = f.listWorkloads(ctx, kind, name)
		}
		if err != nil {
			f.Warnf("could not look for %ss named %s: %v", strings.ToLower(kind), name, err)
			out.Unread = append(out.Unread, kind)
		}
		for _, u := range objs {
			out.Found = append(out.Found, stateOf(kind, u))
		}
	}
	return out
}

// indexHolds reports whether the scan's index lists every object of gr in the cluster:
// the scan was not limited to namespaces or a label selector, and listed gr in full.
func (f *Finder) indexHolds(gr schema.GroupResource) bool {
	if len(f.Scan.Namespaces) > 0 || f.Scan.LabelSelector != "" {
		return false
	}
	for _, in := range f.Scan.Incomplete {
		gv, err := schema.ParseGroupVersion(in.GroupVersion)
		if err == nil && gv.Group == gr.Group && (in.Resource == "" || in.Resource == gr.Resource) {
			return false
		}
	}
	for _, r := range f.Scan.Resources {
		if r.GroupResource() == gr {
			return true
		}
	}
	return false
}

// workloadsFromIndex reads the workloads of kind the index names name.
func (f *Finder) workloadsFromIndex(ctx context.Context, kind, name string) ([]*unstructured.Unstructured, error) {
	fields := workloadFields[kind]
	var out []*unstructured.Unstructured
	var failed error
	for _, w := range f.Scan.Index.Workloads {
		if w.Kind != kind || (w.Name != name && w.AppName != name) {
			continue
		}
		u, err := f.Dynamic.Resource(fields.resource).Namespace(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue // gone since the scan
		case err != nil:
			// Unreadable: the kind is unread, never absent; the others still tell.
			if failed == nil {
				failed = fmt.Errorf("could not read %s %s/%s: %w", strings.ToLower(kind), w.Namespace, w.Name, err)
			}
			continue
		}
		out = append(out, u)
	}
	return out, failed
}

// listWorkloads lists, across the cluster, the workloads of kind called name and those
// labelled app.kubernetes.io/name=name: two small lists.
func (f *Finder) listWorkloads(ctx context.Context, kind, name string) ([]*unstructured.Unstructured, error) {
	res := f.Dynamic.Resource(workloadFields[kind].resource)
	var out []*unstructured.Unstructured
	add := func(obj runtime.Object) error {
		u := obj.(*unstructured.Unstructured)
		if u.GetName() != name && u.GetLabels()[AppNameLabel] != name {
			return nil
		}
		for _, o := range out {
			if o.GetNamespace() == u.GetNamespace() && o.GetName() == u.GetName() {
				return nil
			}
		}
		out = append(out, u.DeepCopy())
		return nil
	}
	list := func(opts metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, opts) }
	if err := f.each(ctx, list, metav1.ListOptions{FieldSelector: "metadata.name=" + name}, add); err != nil {
		return nil, err
	}
	selector := labels.Set{AppNameLabel: name}.AsSelector().String()
	if err := f.each(ctx, list, metav1.ListOptions{LabelSelector: selector}, add); err != nil {
		return nil, err
	}
	return out, nil
}

// each lists a collection in pages of f.ChunkSize and calls fn with every item, a
// pointer into the page: what fn keeps, it copies.
func (f *Finder) each(ctx context.Context, list func(metav1.ListOptions) (runtime.Object, error), opts metav1.ListOptions, fn func(runtime.Object) error) error {
	p := pager.New(pager.SimplePageFunc(list))
	p.PageSize = f.ChunkSize
	return p.EachListItem(ctx, opts, fn)
}

// stateOf reads the readiness and pod template of a workload.
func stateOf(kind string, u *unstructured.Unstructured) Workload {
	fields := workloadFields[kind]
	st := Workload{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName(), Desired: fields.desiredDefault, ServiceAccount: "default"}
	if v, ok, _ := unstructured.NestedInt64(u.Object, fields.desired...); ok {
		st.Desired = v
	}
	st.Ready, _, _ = unstructured.NestedInt64(u.Object, fields.ready...)
	st.Selector, _, _ = unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
	st.Install = u.GetLabels()[InstallLabel]
	spec, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
	podMeta, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "metadata")
	if sa, _, _ := unstructured.NestedString(spec, "serviceAccountName"); sa != "" {
		st.ServiceAccount = sa
	} else if sa, _, _ := unstructured.NestedString(spec, "serviceAccount"); sa != "" {
		st.ServiceAccount = sa
	}
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	for _, c := range containers {
		cm, ok := c.(map[string]any)
		if !ok {
			continue
		}
		st.Watches = append(st.Watches, watchSettings(cm, st.Namespace, podMeta)...)
	}
	return st
}

// watchEnv and watchFlags are how controllers are commonly limited to namespaces:
// operator-sdk and kubebuilder scaffolds read WATCH_NAMESPACE; Strimzi's operators
// STRIMZI_NAMESPACE; many take a flag (the Prometheus operator --namespaces). A value of
// "*" (Strimzi's) means every namespace, as an empty one does. --namespace is not read:
// for OLM (olm --namespace $(OPERATOR_NAMESPACE)), Velero and others it names where the
// program runs or cleans up, not what it watches.
var (
	watchEnv   = []string{"WATCH_NAMESPACE", "WATCH_NAMESPACES", "OPERATOR_NAMESPACE_WATCH", "STRIMZI_NAMESPACE"}
	watchFlags = []string{"--namespaces", "--watch-namespace", "--watch-namespaces", "--watched-namespaces"}
)

// watchSettings reads what one container says of the namespaces it watches. An
// environment variable from the pod's own namespace (fieldRef metadata.namespace) is
// the workload's namespace; one from an annotation or a label of the pod
// (metadata.annotations['K'], as OLM sets WATCH_NAMESPACE from olm.targetNamespaces) is
// that value of the pod template's metadata, podMeta, when it has it.
func watchSettings(c map[string]any, ownNamespace string, podMeta map[string]any) []WatchSetting {
	var out []WatchSetting
	env, _, _ := unstructured.NestedSlice(c, "env")
	for _, e := range env {
		em, ok := e.(map[string]any)
		if !ok {
			continue
		}
		name, _, _ := unstructured.NestedString(em, "name")
		if !slices.Contains(watchEnv, name) {
			continue
		}
		value, _, _ := unstructured.NestedString(em, "value")
		if _, from, _ := unstructured.NestedMap(em, "valueFrom"); from {
			// Read from elsewhere (an annotation, a ConfigMap): only the pod's own
			// namespace is known.
			path, _, _ := unstructured.NestedString(em, "valueFrom", "fieldRef", "fieldPath")
			v, ok := fieldRefValue(path, ownNamespace, podMeta)
			if !ok {
				continue
			}
			value = v
		}
		if ns, ok := splitNamespaces(value); ok {
			out = append(out, WatchSetting{Setting: "env " + name, Namespaces: ns})
		}
	}
	for _, field := range []string{"command", "args"} {
		args, _, _ := unstructured.NestedStringSlice(c, field)
		for i, a := range args {
			for _, flag := range watchFlags {
				value, set := "", false
				switch {
				case strings.HasPrefix(a, flag+"="):
					value, set = strings.TrimPrefix(a, flag+"="), true
				case a == flag && i+1 < len(args):
					value, set = args[i+1], true
				}
				if ns, ok := splitNamespaces(value); set && ok {
					out = append(out, WatchSetting{Setting: "flag " + flag, Namespaces: ns})
				}
			}
		}
	}
	return out
}

// fieldRefValue is the value the kubelet gives an environment variable from the pod's
// field path: its namespace, or one of its annotations or labels as the pod template
// sets it (metadata.annotations['K'], metadata.labels['K']). ok is false for another
// path, or a key the template does not set (a webhook may add it to the pod).
func fieldRefValue(path, ownNamespace string, podMeta map[string]any) (string, bool) {
	if path == "metadata.namespace" {
		return ownNamespace, true
	}
	for _, field := range []string{"annotations", "labels"} {
		prefix := "metadata." + field + "['"
		if !strings.HasPrefix(path, prefix) || !strings.HasSuffix(path, "']") {
			continue
		}
		key := strings.TrimSuffix(strings.TrimPrefix(path, prefix), "']")
		v, ok, err := unstructured.NestedString(podMeta, field, key)
		return v, ok && err == nil
	}
	return "", false
}

// splitNamespaces reads a comma-separated list of namespaces; ok is false when a part is
// not a namespace name ("$(OPERATOR_NAMESPACE)", "a b", "a;b"): such a setting is not
// understood, and never taken to keep a controller from a namespace.
func splitNamespaces(v string) (out []string, ok bool) {
	for _, s := range strings.Split(v, ",") {
		switch s = strings.TrimSpace(s); {
		case s == "*":
			return nil, true
		case s == "":
		case len(validation.IsDNS1123Label(s)) > 0:
			return nil, false
		default:
			out = append(out, s)
		}
	}
	return out, true
}
