package doctor

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/admission"
	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

func init() {
	register(family{
		causes: []Cause{
			{Reason: finalizev1alpha1.ReasonWebhookBlocking, Priority: 1,
				Help: "a failurePolicy Fail webhook without a backend rejects every update of the object",
				Doc:  "a `failurePolicy: Fail` webhook intercepts UPDATE of the object (rules, `matchPolicy`, scope, namespace and object selectors as the API server applies them) and its service does not exist or has no ready endpoints: nobody can remove the finalizer"},
		},
		// The update that removes a metadata finalizer, and a namespace's /finalize.
		object: func(d *diagnoser, o *kube.Object) []finding {
			var fs []finding
			if len(o.Meta.Finalizers) > 0 {
				if bw := d.f.blockingWebhooks(o, ""); len(bw) > 0 {
					fs = append(fs, webhookFinding(bw))
				}
			}
			if hasSpecFinalizers(o) {
				if bw := d.f.blockingWebhooks(o, "finalize"); len(bw) > 0 {
					fs = append(fs, webhookFinding(bw))
				}
			}
			return fs
		},
	})
}

// webhookConfigurationResources are the types of the configurations a blocking webhook
// lives in, by kind.
var webhookConfigurationResources = map[string]kube.Resource{
	"ValidatingWebhookConfiguration": {GroupVersionResource: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, Kind: "ValidatingWebhookConfiguration"},
	"MutatingWebhookConfiguration":   {GroupVersionResource: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}, Kind: "MutatingWebhookConfiguration"},
}

// webhookFinding: a failurePolicy Fail webhook without a backend rejects the update that
// would remove the finalizer, whoever sends it.
func webhookFinding(bw []blockingWebhook) finding {
	var names []string
	var blockers []finalizev1alpha1.Blocker
	for _, w := range bw {
		names = append(names, w.String())
		blockers = append(blockers, finalizev1alpha1.Blocker{
			Target:  webhookConfigurationResources[w.Kind].Ref("", w.Configuration, ""),
			Message: fmt.Sprintf("webhook %s: %s", w.Name, w.Problem),
		})
	}
	w := bw[0]
	fd := rooted(finalizev1alpha1.ReasonWebhookBlocking, finalizev1alpha1.Subject{Kind: w.Kind, Name: w.Configuration},
		"every update of the object is rejected by "+strings.Join(names, "; "),
		fmt.Sprintf("restore %s, or, if the webhook's owner is uninstalled, delete %s %s (or set its failurePolicy to Ignore)", serviceOf(w), strings.ToLower(w.Kind), w.Configuration),
		fmt.Sprintf("webhook %s rejects updates: %s", w.Name, w.Problem))
	fd.blockers = blockers
	return fd
}

func serviceOf(w blockingWebhook) string {
	if w.Service == nil {
		return "its backend"
	}
	return "service " + w.Service.String()
}

// webhook is one admission webhook that rejects requests when its backend fails.
type webhook struct {
	Kind          string // ValidatingWebhookConfiguration or MutatingWebhookConfiguration
	Configuration string
	Name          string
	admission.Webhook
	Service *types.NamespacedName
}

// blockingWebhook is a webhook that would reject the update that removes a finalizer.
type blockingWebhook struct {
	webhook
	Problem string
}

// blockingWebhooks returns the failurePolicy Fail webhooks that intercept an update of o
// (of its subresource sub, if set) and whose service cannot answer: neither the owning
// controller nor anyone else can remove a finalizer through them.
func (f *facts) blockingWebhooks(o *kube.Object, sub string) []blockingWebhook {
	var out []blockingWebhook
	for _, w := range f.failingWebhooks() {
		if w.Service == nil || !w.InterceptsUpdate(o, sub, f.namespaceLabels(o)) {
			continue // a URL webhook's backend cannot be checked from the cluster
		}
		st := f.service(*w.Service)
		if st.Err != nil {
			f.warnf("could not check service %s of webhook %s: %v", *w.Service, w.Name, st.Err)
			continue
		}
		if problem := st.describe(*w.Service); problem != "" {
			out = append(out, blockingWebhook{webhook: w, Problem: problem})
		}
	}
	return out
}

// namespaceLabels are the labels a namespaceSelector is matched against: those of the
// object's namespace, or of the namespace itself.
func (f *facts) namespaceLabels(o *kube.Object) map[string]string {
	if o.Resource.IsNamespaces() {
		return o.Meta.Labels
	}
	return f.res.Index.NamespaceLabels[o.Meta.Namespace]
}

func (b *blockingWebhook) String() string {
	return fmt.Sprintf("%s %s (webhook %s): %s", b.Kind, b.Configuration, b.Name, b.Problem)
}

// serviceState says whether a Service exists and has ready endpoints.
type serviceState struct {
	Exists bool
	Ready  int
	Err    error
}

// serviceKey keys the state of one Service.
type serviceKey types.NamespacedName

func (f *facts) service(key types.NamespacedName) *serviceState {
	return once(f, serviceKey(key), func() *serviceState { return f.readService(key) })
}

func (f *facts) readService(key types.NamespacedName) *serviceState {
	s := &serviceState{}
	if _, err := f.kube.CoreV1().Services(key.Namespace).Get(f.ctx, key.Name, metav1.GetOptions{}); err == nil {
		s.Exists = true
		s.Err = f.each(func(opts metav1.ListOptions) (runtime.Object, error) {
			return f.kube.DiscoveryV1().EndpointSlices(key.Namespace).List(f.ctx, opts)
		}, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + key.Name}, func(obj runtime.Object) error {
			for _, ep := range obj.(*discoveryv1.EndpointSlice).Endpoints {
				if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
					s.Ready++
				}
			}
			return nil
		})
	} else if !apierrors.IsNotFound(err) {
		s.Err = err
	}
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

// webhooksKey keys the webhooks with failurePolicy Fail, listed once.
type webhooksKey struct{}

// failingWebhooks returns the webhooks with failurePolicy Fail.
func (f *facts) failingWebhooks() []webhook {
	return once(f, webhooksKey{}, func() []webhook {
		var out []webhook
		configs := f.kube.AdmissionregistrationV1()
		f.listWebhooks("validatingwebhookconfigurations", func(opts metav1.ListOptions) (runtime.Object, error) {
			return configs.ValidatingWebhookConfigurations().List(f.ctx, opts)
		}, func(obj runtime.Object) {
			c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
			for _, w := range c.Webhooks {
				out = addWebhook(out, "ValidatingWebhookConfiguration", c.Name, w.Name, w.FailurePolicy, w.Rules, w.NamespaceSelector, w.ObjectSelector, w.MatchPolicy, w.ClientConfig)
			}
		})
		f.listWebhooks("mutatingwebhookconfigurations", func(opts metav1.ListOptions) (runtime.Object, error) {
			return configs.MutatingWebhookConfigurations().List(f.ctx, opts)
		}, func(obj runtime.Object) {
			c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
			for _, w := range c.Webhooks {
				out = addWebhook(out, "MutatingWebhookConfiguration", c.Name, w.Name, w.FailurePolicy, w.Rules, w.NamespaceSelector, w.ObjectSelector, w.MatchPolicy, w.ClientConfig)
			}
		})
		return out
	})
}

// listWebhooks reads every configuration of one kind, page by page, into add; a failed
// read is a warning that names the kind.
func (f *facts) listWebhooks(resource string, list func(metav1.ListOptions) (runtime.Object, error), add func(runtime.Object)) {
	err := f.each(list, metav1.ListOptions{}, func(obj runtime.Object) error {
		add(obj)
		return nil
	})
	if err != nil {
		f.warnf("could not list %s, so blocking webhooks are not named: %v", resource, err)
	}
}

// addWebhook keeps a webhook that fails closed: failurePolicy Fail, the default.
func addWebhook(out []webhook, kind, configuration, name string, policy *admissionregistrationv1.FailurePolicyType, rules []admissionregistrationv1.RuleWithOperations,
	namespaceSelector, objectSelector *metav1.LabelSelector, mp *admissionregistrationv1.MatchPolicyType, cc admissionregistrationv1.WebhookClientConfig) []webhook {
	if policy != nil && *policy != admissionregistrationv1.Fail {
		return out
	}
	w := webhook{Kind: kind, Configuration: configuration, Name: name,
		Webhook: admission.Webhook{Rules: rules, NamespaceSelector: namespaceSelector, ObjectSelector: objectSelector, MatchPolicy: admission.MatchPolicy(mp)}}
	if cc.Service != nil {
		w.Service = &types.NamespacedName{Namespace: cc.Service.Namespace, Name: cc.Service.Name}
	}
	return append(out, w)
}
