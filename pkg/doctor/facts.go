package doctor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

var (
	apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// facts holds what the doctor read, each thing read at most once. One diagnosis uses it
// from one goroutine.
type facts struct {
	ctx  context.Context
	kube kubernetes.Interface
	dyn  dynamic.Interface
	res  *scan.Result
	now  time.Time

	byUID       map[types.UID]*scan.Object
	byNamespace map[string][]*scan.Object

	warnings []string

	apiServicesOnce sync.Once
	apiServices     map[string]*apiService // by "group/version"

	webhooksOnce sync.Once
	webhooks     []webhook

	services map[types.NamespacedName]*serviceState
	pods     map[string][]corev1.Pod
	events   map[string][]eventsv1.Event
}

func newFacts(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, res *scan.Result) *facts {
	f := &facts{
		ctx: ctx, kube: kube, dyn: dyn, res: res, now: res.Now,
		byUID:       map[types.UID]*scan.Object{},
		byNamespace: map[string][]*scan.Object{},
		services:    map[types.NamespacedName]*serviceState{},
		pods:        map[string][]corev1.Pod{},
		events:      map[string][]eventsv1.Event{},
	}
	for _, o := range res.Objects {
		f.byUID[o.Meta.UID] = o
		if o.Meta.Namespace != "" {
			f.byNamespace[o.Meta.Namespace] = append(f.byNamespace[o.Meta.Namespace], o)
		}
	}
	return f
}

// warnf records a read that failed; the report prints it once.
func (f *facts) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, w := range f.warnings {
		if w == msg {
			return
		}
	}
	f.warnings = append(f.warnings, msg)
}

// apiService is an APIService and whether the aggregator finds it available.
type apiService struct {
	Name      string
	Group     string
	Version   string
	Service   *types.NamespacedName
	Available bool
	Reason    string
	Message   string
}

// apiServiceFor returns the APIService of a group version ("metrics.k8s.io/v1beta1").
func (f *facts) apiServiceFor(gv string) *apiService {
	f.apiServicesOnce.Do(func() {
		f.apiServices = map[string]*apiService{}
		list, err := f.dyn.Resource(apiServiceGVR).List(f.ctx, metav1.ListOptions{})
		if err != nil {
			f.warnf("could not list apiservices.apiregistration.k8s.io, so unavailable APIServices are not named: %v", err)
			return
		}
		for i := range list.Items {
			u := &list.Items[i]
			a := &apiService{Name: u.GetName(), Available: true}
			a.Group, _, _ = unstructured.NestedString(u.Object, "spec", "group")
			a.Version, _, _ = unstructured.NestedString(u.Object, "spec", "version")
			if ns, ok, _ := unstructured.NestedString(u.Object, "spec", "service", "namespace"); ok {
				name, _, _ := unstructured.NestedString(u.Object, "spec", "service", "name")
				a.Service = &types.NamespacedName{Namespace: ns, Name: name}
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				m, ok := c.(map[string]any)
				if !ok || m["type"] != "Available" {
					continue
				}
				a.Available = m["status"] == "True"
				a.Reason, _ = m["reason"].(string)
				a.Message, _ = m["message"].(string)
			}
			gv := a.Group + "/" + a.Version
			if a.Group == "" {
				gv = a.Version
			}
			f.apiServices[gv] = a
		}
	})
	return f.apiServices[gv]
}

// discoveryFailures are the group versions the scan could not discover.
func (f *facts) discoveryFailures() []string {
	var gvs []string
	for _, in := range f.res.Incomplete {
		if in.Reason == "DiscoveryFailed" {
			gvs = append(gvs, in.GroupVersion)
		}
	}
	return gvs
}

// serviceState says whether a Service exists and has ready endpoints.
type serviceState struct {
	Exists bool
	Ready  int
	Err    error
}

func (f *facts) service(key types.NamespacedName) *serviceState {
	if s, ok := f.services[key]; ok {
		return s
	}
	s := &serviceState{}
	if _, err := f.kube.CoreV1().Services(key.Namespace).Get(f.ctx, key.Name, metav1.GetOptions{}); err == nil {
		s.Exists = true
		slices, err := f.kube.DiscoveryV1().EndpointSlices(key.Namespace).List(f.ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + key.Name})
		if err != nil {
			s.Err = err
		} else {
			for i := range slices.Items {
				for _, ep := range slices.Items[i].Endpoints {
					if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
						s.Ready++
					}
				}
			}
		}
	} else if !apierrors.IsNotFound(err) {
		s.Err = err
	}
	f.services[key] = s
	return s
}

// describe says what is wrong with a service, or "" when it has ready endpoints.
func (s *serviceState) describe(key types.NamespacedName) string {
	switch {
	case s.Err != nil:
		return ""
	case !s.Exists:
		return fmt.Sprintf("service %s does not exist", key)
	case s.Ready == 0:
		return fmt.Sprintf("service %s has no ready endpoints", key)
	}
	return ""
}

// podsIn lists the pods of a namespace.
func (f *facts) podsIn(ns string) ([]corev1.Pod, bool) {
	if pods, ok := f.pods[ns]; ok {
		return pods, true
	}
	list, err := f.kube.CoreV1().Pods(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.warnf("could not list pods in namespace %s, so the pods that hold its claims are not named: %v", ns, err)
		return nil, false
	}
	f.pods[ns] = list.Items
	return list.Items, true
}

// warningsFor returns the warning Events about o that were reported after since.
// Events about cluster-scoped objects are recorded in the default namespace.
func (f *facts) warningsFor(o *scan.Object, since time.Time) []eventsv1.Event {
	ns := o.Meta.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	events, ok := f.events[ns]
	if !ok {
		list, err := f.kube.EventsV1().Events(ns).List(f.ctx, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning})
		if err != nil {
			f.warnf("could not list events in namespace %s, so failing controllers there may look inactive: %v", ns, err)
		} else {
			events = list.Items
		}
		f.events[ns] = events
	}
	var out []eventsv1.Event
	for i := range events {
		e := &events[i]
		if e.Regarding.UID != o.Meta.UID || reporterOf(e) == "kubectl-finalize" {
			continue
		}
		if !eventTime(e).Before(since) {
			out = append(out, *e)
		}
	}
	return out
}

// eventTime is when an event was last seen.
func eventTime(e *eventsv1.Event) time.Time {
	t := e.EventTime.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if e.DeprecatedLastTimestamp.After(t) {
		t = e.DeprecatedLastTimestamp.Time
	}
	return t
}

// eventCount is how many times an event was seen.
func eventCount(e *eventsv1.Event) int32 {
	switch {
	case e.Series != nil:
		return e.Series.Count
	case e.DeprecatedCount > 0:
		return e.DeprecatedCount
	}
	return 1
}

func reporterOf(e *eventsv1.Event) string {
	if e.ReportingController != "" {
		return e.ReportingController
	}
	return e.DeprecatedSource.Component
}

// workloadState is what a controller's workload looks like.
type workloadState struct {
	Kind, Namespace, Name string
	Ready, Desired        int32
}

func (w *workloadState) String() string {
	return fmt.Sprintf("%s %s/%s has %d/%d ready replicas", w.Kind, w.Namespace, w.Name, w.Ready, w.Desired)
}

// workloadsOf finds the Deployments, StatefulSets and DaemonSets named like a controller,
// or labelled app.kubernetes.io/name with its name, and reads their readiness.
func (f *facts) workloadsOf(names ...string) []workloadState {
	if f.res.Index == nil {
		return nil
	}
	var out []workloadState
	for _, w := range f.res.Index.Workloads {
		match := false
		for _, n := range names {
			if n != "" && (w.Name == n || w.AppName == n) {
				match = true
			}
		}
		if !match {
			continue
		}
		st := workloadState{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}
		var err error
		switch w.Kind {
		case "Deployment":
			dep, derr := f.kube.AppsV1().Deployments(w.Namespace).Get(f.ctx, w.Name, metav1.GetOptions{})
			err = derr
			if derr == nil {
				st.Desired = 1
				if dep.Spec.Replicas != nil {
					st.Desired = *dep.Spec.Replicas
				}
				st.Ready = dep.Status.ReadyReplicas
			}
		case "StatefulSet":
			sts, serr := f.kube.AppsV1().StatefulSets(w.Namespace).Get(f.ctx, w.Name, metav1.GetOptions{})
			err = serr
			if serr == nil {
				st.Desired = 1
				if sts.Spec.Replicas != nil {
					st.Desired = *sts.Spec.Replicas
				}
				st.Ready = sts.Status.ReadyReplicas
			}
		case "DaemonSet":
			ds, derr := f.kube.AppsV1().DaemonSets(w.Namespace).Get(f.ctx, w.Name, metav1.GetOptions{})
			err = derr
			if derr == nil {
				st.Desired, st.Ready = ds.Status.DesiredNumberScheduled, ds.Status.NumberReady
			}
		}
		if err != nil {
			f.warnf("could not read %s %s/%s: %v", strings.ToLower(w.Kind), w.Namespace, w.Name, err)
			continue
		}
		out = append(out, st)
	}
	return out
}

// webhook is one admission webhook that rejects requests when its backend fails.
type webhook struct {
	Kind              string // ValidatingWebhookConfiguration or MutatingWebhookConfiguration
	Configuration     string
	Name              string
	Rules             []admissionregistrationv1.RuleWithOperations
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
	MatchPolicy       admissionregistrationv1.MatchPolicyType
	Service           *types.NamespacedName
}

// failingWebhooks returns the webhooks with failurePolicy Fail.
func (f *facts) failingWebhooks() []webhook {
	f.webhooksOnce.Do(func() {
		fail := func(p *admissionregistrationv1.FailurePolicyType) bool {
			return p == nil || *p == admissionregistrationv1.Fail // Fail is the default
		}
		svc := func(cc admissionregistrationv1.WebhookClientConfig) *types.NamespacedName {
			if cc.Service == nil {
				return nil
			}
			return &types.NamespacedName{Namespace: cc.Service.Namespace, Name: cc.Service.Name}
		}
		vwcs, err := f.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(f.ctx, metav1.ListOptions{})
		if err != nil {
			f.warnf("could not list validatingwebhookconfigurations, so blocking webhooks are not named: %v", err)
		} else {
			for i := range vwcs.Items {
				for _, w := range vwcs.Items[i].Webhooks {
					if fail(w.FailurePolicy) {
						f.webhooks = append(f.webhooks, webhook{Kind: "ValidatingWebhookConfiguration", Configuration: vwcs.Items[i].Name, Name: w.Name,
							Rules: w.Rules, NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector, MatchPolicy: matchPolicy(w.MatchPolicy), Service: svc(w.ClientConfig)})
					}
				}
			}
		}
		mwcs, err := f.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(f.ctx, metav1.ListOptions{})
		if err != nil {
			f.warnf("could not list mutatingwebhookconfigurations, so blocking webhooks are not named: %v", err)
		} else {
			for i := range mwcs.Items {
				for _, w := range mwcs.Items[i].Webhooks {
					if fail(w.FailurePolicy) {
						f.webhooks = append(f.webhooks, webhook{Kind: "MutatingWebhookConfiguration", Configuration: mwcs.Items[i].Name, Name: w.Name,
							Rules: w.Rules, NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector, MatchPolicy: matchPolicy(w.MatchPolicy), Service: svc(w.ClientConfig)})
					}
				}
			}
		}
	})
	return f.webhooks
}

func matchPolicy(p *admissionregistrationv1.MatchPolicyType) admissionregistrationv1.MatchPolicyType {
	if p == nil {
		return admissionregistrationv1.Equivalent
	}
	return *p
}
