package doctor

import (
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
)

// workloadState is what a controller's workload looks like.
type workloadState struct {
	Kind, Namespace, Name string
	Ready, Desired        int64
	// ServiceAccount is the one its pod template runs as.
	ServiceAccount string
	// Watches is what its pod template says of the namespaces it watches (an environment
	// variable or a flag), empty when it says nothing.
	Watches []watchSetting
	// Selector is its spec.selector.matchLabels: how to find all of its pods.
	Selector map[string]string
}

// watchSetting is one setting of a pod template that limits a controller to namespaces.
type watchSetting struct {
	// Setting is how it is set: "env WATCH_NAMESPACE" or "flag --namespace".
	Setting string
	// Namespaces are its values; empty means every namespace.
	Namespaces []string
}

func (w *workloadState) String() string {
	return fmt.Sprintf("%s %s/%s has %d/%d ready replicas", w.Kind, w.Namespace, w.Name, w.Ready, w.Desired)
}

// running: at least one replica is ready (a controller with leader election works with
// one of several).
func (w *workloadState) running() bool { return w.Ready > 0 }

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

// appNameLabel is the label a controller's workload is often found by.
const appNameLabel = "app.kubernetes.io/name"

// workloads is what the doctor found of the workloads named like one controller.
type workloads struct {
	found []workloadState
	// unread names the kinds that could not be read: absence is not proven for them.
	unread []string
}

// workloadsKey keys the workloads named like one controller.
type workloadsKey string

// workloadsOf finds the Deployments, StatefulSets and DaemonSets named like a controller,
// or labelled app.kubernetes.io/name with its name, anywhere in the cluster, whatever the
// scan looked at: from the scan's index when the scan listed every workload of the
// cluster, else by a targeted cluster-wide list per name. What it says of a controller
// never depends on how narrow the scan was.
func (f *facts) workloadsOf(names ...string) workloads {
	var out workloads
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		w := once(f, workloadsKey(n), func() workloads { return f.readWorkloads(n) })
		for _, st := range w.found {
			if !slices.ContainsFunc(out.found, func(x workloadState) bool {
				return x.Kind == st.Kind && x.Namespace == st.Namespace && x.Name == st.Name
			}) {
				out.found = append(out.found, st)
			}
		}
		for _, k := range w.unread {
			if !slices.Contains(out.unread, k) {
				out.unread = append(out.unread, k)
			}
		}
	}
	sort.SliceStable(out.found, func(i, j int) bool {
		a, b := out.found[i], out.found[j]
		return a.Kind+"/"+a.Namespace+"/"+a.Name < b.Kind+"/"+b.Namespace+"/"+b.Name
	})
	return out
}

// readWorkloads reads the workloads of one name, kind by kind.
func (f *facts) readWorkloads(name string) workloads {
	var out workloads
	for _, kind := range workloadKinds {
		fields := workloadFields[kind]
		var objs []*unstructured.Unstructured
		var err error
		if f.indexHolds(fields.resource.GroupResource()) {
			objs, err = f.workloadsFromIndex(kind, name)
		} else {
			objs, err = f.listWorkloads(kind, name)
		}
		if err != nil {
			f.warnf("could not look for %ss named %s: %v", strings.ToLower(kind), name, err)
			out.unread = append(out.unread, kind)
		}
		for _, u := range objs {
			out.found = append(out.found, stateOf(kind, u))
		}
	}
	return out
}

// indexHolds reports whether the scan's index lists every object of gr in the cluster:
// the scan was not limited to namespaces or a label selector, and listed gr in full.
func (f *facts) indexHolds(gr schema.GroupResource) bool {
	if len(f.res.Namespaces) > 0 || f.res.LabelSelector != "" {
		return false
	}
	for _, in := range f.res.Incomplete {
		gv, err := schema.ParseGroupVersion(in.GroupVersion)
		if err == nil && gv.Group == gr.Group && (in.Resource == "" || in.Resource == gr.Resource) {
			return false
		}
	}
	for _, r := range f.res.Resources {
		if r.GroupResource() == gr {
			return true
		}
	}
	return false
}

// workloadsFromIndex reads the workloads of kind the index names name.
func (f *facts) workloadsFromIndex(kind, name string) ([]*unstructured.Unstructured, error) {
	fields := workloadFields[kind]
	var out []*unstructured.Unstructured
	var failed error
	for _, w := range f.res.Index.Workloads {
		if w.Kind != kind || (w.Name != name && w.AppName != name) {
			continue
		}
		u, err := f.dyn.Resource(fields.resource).Namespace(w.Namespace).Get(f.ctx, w.Name, metav1.GetOptions{})
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
func (f *facts) listWorkloads(kind, name string) ([]*unstructured.Unstructured, error) {
	res := f.dyn.Resource(workloadFields[kind].resource)
	var out []*unstructured.Unstructured
	add := func(obj runtime.Object) error {
		u := obj.(*unstructured.Unstructured)
		if u.GetName() != name && u.GetLabels()[appNameLabel] != name {
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
	list := func(opts metav1.ListOptions) (runtime.Object, error) { return res.List(f.ctx, opts) }
	if err := f.each(list, metav1.ListOptions{FieldSelector: "metadata.name=" + name}, add); err != nil {
		return nil, err
	}
	selector := labels.Set{appNameLabel: name}.AsSelector().String()
	if err := f.each(list, metav1.ListOptions{LabelSelector: selector}, add); err != nil {
		return nil, err
	}
	return out, nil
}

// stateOf reads the readiness and pod template of a workload.
func stateOf(kind string, u *unstructured.Unstructured) workloadState {
	fields := workloadFields[kind]
	st := workloadState{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName(), Desired: fields.desiredDefault, ServiceAccount: "default"}
	if v, ok, _ := unstructured.NestedInt64(u.Object, fields.desired...); ok {
		st.Desired = v
	}
	st.Ready, _, _ = unstructured.NestedInt64(u.Object, fields.ready...)
	st.Selector, _, _ = unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
	spec, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
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
		st.Watches = append(st.Watches, watchSettings(cm, st.Namespace)...)
	}
	return st
}

// logsCommand reads the logs of every pod of the workload since d ago: by its selector's
// matchLabels (with leader election, one pod of several works, and kubectl logs
// deploy/NAME reads one chosen pod, perhaps a standby), every container, each line
// prefixed with its pod and container; by kind and name only when the selector has no
// matchLabels. kubectl shows the last 10 lines of each pod when given a selector unless
// --tail says otherwise.
func (w *workloadState) logsCommand(d time.Duration) string {
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

// watchEnv and watchFlags are how controllers are commonly limited to namespaces:
// operator-sdk and kubebuilder scaffolds read WATCH_NAMESPACE; many take a flag.
var (
	watchEnv   = []string{"WATCH_NAMESPACE", "WATCH_NAMESPACES", "OPERATOR_NAMESPACE_WATCH"}
	watchFlags = []string{"--namespaces", "--watch-namespace", "--watch-namespaces", "--watched-namespaces"}
)

// watchSettings reads what one container says of the namespaces it watches. An
// environment variable from the pod's own namespace (fieldRef metadata.namespace) is
// the workload's namespace.
func watchSettings(c map[string]any, ownNamespace string) []watchSetting {
	var out []watchSetting
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
		if path, _, _ := unstructured.NestedString(em, "valueFrom", "fieldRef", "fieldPath"); path == "metadata.namespace" {
			value = ownNamespace
		}
		out = append(out, watchSetting{Setting: "env " + name, Namespaces: splitNamespaces(value)})
	}
	for _, field := range []string{"command", "args"} {
		args, _, _ := unstructured.NestedStringSlice(c, field)
		for i, a := range args {
			for _, flag := range watchFlags {
				switch {
				case strings.HasPrefix(a, flag+"="):
					out = append(out, watchSetting{Setting: "flag " + flag, Namespaces: splitNamespaces(strings.TrimPrefix(a, flag+"="))})
				case a == flag && i+1 < len(args):
					out = append(out, watchSetting{Setting: "flag " + flag, Namespaces: splitNamespaces(args[i+1])})
				}
			}
		}
	}
	return out
}

func splitNamespaces(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// excludes says how w's pod template keeps it from watching namespace ns, or "".
func (w *workloadState) excludes(ns string) string {
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
