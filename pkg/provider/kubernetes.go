package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	kfclient "github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// defaultKubernetesTimeout bounds one verification of the kubernetes provider.
const defaultKubernetesTimeout = 10 * time.Second

func init() {
	register(&kind[finalizev1alpha1.KubernetesProvider]{
		name:      "kubernetes",
		spec:      func(v *finalizev1alpha1.Verify) *finalizev1alpha1.KubernetesProvider { return v.Kubernetes },
		check:     checkKubernetes,
		templates: kubernetesTemplates,
		reads:     kubernetesReads,
		build:     newKubernetes,
	})
}

// kubernetesTemplates: the namespace, and the name or the selector.
func kubernetesTemplates(k *finalizev1alpha1.KubernetesProvider) []string {
	return []string{k.Namespace, k.Name, k.Selector}
}

// kubernetesReads: a provider without a kubeconfig or a context of its own reads the
// cluster being reconciled: one object by name, or a list by selector.
func kubernetesReads(k *finalizev1alpha1.KubernetesProvider) []Read {
	if k.Kubeconfig != "" || k.Context != "" {
		return nil
	}
	r := Read{Field: "verify.kubernetes.resource", Resource: k.Resource, Namespace: k.Namespace, Verb: "list", Purpose: "lists them by selector"}
	if k.Name != "" {
		r.Verb, r.Purpose = "get", "reads one by name"
	}
	return []Read{r}
}

// valuesRE finds the values of a simple template, to check what surrounds them.
var valuesRE = regexp.MustCompile(`\{[^}]*\}`)

func checkKubernetes(c Checks, path *field.Path, k *finalizev1alpha1.KubernetesProvider) {
	if k.Resource == "" {
		c.Add(field.Required(path.Child("resource"), "the type of the objects to look for, like instances.compute.example.com"))
	}
	switch {
	case (k.Name == "") == (k.Selector == ""):
		c.Add(field.Invalid(path, field.OmitValueType{}, "set exactly one of name and selector"))
	case k.Name != "":
		c.Template(path.Child("name"), k.Name)
	default:
		c.Template(path.Child("selector"), k.Selector)
		if _, err := labels.Parse(valuesRE.ReplaceAllString(k.Selector, "x")); err != nil {
			c.Add(field.Invalid(path.Child("selector"), k.Selector, err.Error()))
		}
	}
	if k.Namespace != "" {
		c.Template(path.Child("namespace"), k.Namespace)
	}
	checkTimeout(c, path.Child("timeout"), k.Timeout)
}

type kubernetesProvider struct {
	spec      *finalizev1alpha1.KubernetesProvider
	namespace *Template
	name      *Template
	selector  *Template
	timeout   time.Duration
	// where names the cluster in evidence.
	where string

	once      sync.Once
	dyn       dynamic.Interface
	mapper    meta.RESTMapper
	resource  kube.Resource
	clientErr error
}

func newKubernetes(spec *finalizev1alpha1.KubernetesProvider, opts Options) (Provider, error) {
	p := &kubernetesProvider{spec: spec, timeout: defaultKubernetesTimeout, where: "in this cluster"}
	if spec.Timeout != nil {
		p.timeout = spec.Timeout.Duration
	}
	var err error
	for _, f := range []struct {
		field string
		in    string
		out   **Template
	}{{"namespace", spec.Namespace, &p.namespace}, {"name", spec.Name, &p.name}, {"selector", spec.Selector, &p.selector}} {
		if f.in == "" {
			continue
		}
		if *f.out, err = ParseTemplate(f.in); err != nil {
			return nil, fmt.Errorf("%s: %w", f.field, err)
		}
	}
	if spec.Kubeconfig == "" && spec.Context == "" {
		p.dyn, p.mapper = opts.Dynamic, opts.Mapper
		if p.dyn == nil || p.mapper == nil {
			return nil, fmt.Errorf("no client for the cluster being reconciled")
		}
		return p, nil
	}
	p.where = "in the cluster of "
	switch {
	case spec.Context != "" && spec.Kubeconfig != "":
		p.where += fmt.Sprintf("context %s of %s", spec.Context, spec.Kubeconfig)
	case spec.Context != "":
		p.where += "context " + spec.Context
	default:
		p.where += spec.Kubeconfig
	}
	// The other cluster's clients are made now, so a missing context fails the rule at
	// once; its discovery waits for the first question.
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = spec.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: spec.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig %s: %w", p.where, err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	if err := kfclient.RegisterCredentials(cfg); err != nil {
		return nil, fmt.Errorf("the kubeconfig %s: %w", p.where, err)
	}
	if p.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	p.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return p, nil
}

func (p *kubernetesProvider) String() string {
	return fmt.Sprintf("kubernetes %s %s", p.spec.Resource, p.where)
}

// resolve finds the resource type in the cluster, once.
func (p *kubernetesProvider) resolve() error {
	p.once.Do(func() {
		p.resource, p.clientErr = kube.ResolveResource(p.mapper, p.spec.Resource)
	})
	return p.clientErr
}

type kubernetesCall struct {
	p                         *kubernetesProvider
	namespace, name, selector string
}

func (p *kubernetesProvider) Prepare(req *Request) (Call, error) {
	c := &kubernetesCall{p: p}
	var err error
	obj := req.Object.Object
	// A namespace or a name no object can have is answered 404, which would read as Gone
	// while the object it was meant to name exists: each is checked, as it is, against
	// the rules of what it names, and refused, never normalized.
	if p.namespace != nil {
		if c.namespace, err = p.namespace.renderAll(obj, req.Identity, objectName); err != nil {
			return nil, fmt.Errorf("namespace: %w", err)
		}
		if why := checkNamespace(c.namespace); why != "" {
			return nil, fmt.Errorf("namespace: %s", why)
		}
	}
	if p.name != nil {
		if c.name, err = p.name.renderAll(obj, req.Identity, objectName); err != nil {
			return nil, fmt.Errorf("name: %w", err)
		}
		// The type's rules are known once it is resolved; a type that cannot be resolved
		// is Unknown when asked.
		if p.resolve() == nil {
			if why := checkName(p.resource.GroupResource(), c.name); why != "" {
				return nil, fmt.Errorf("name: %s", why)
			}
		}
	}
	if why := p.otherType(req.Identity); why != "" {
		return nil, errors.New(why)
	}
	if why := c.otherObject(req.Identity); why != "" {
		return nil, errors.New(why)
	}
	if p.selector != nil {
		if c.selector, err = p.selector.renderAll(obj, req.Identity, labelValue); err != nil {
			return nil, fmt.Errorf("selector: %w", err)
		}
		if _, err := labels.Parse(c.selector); err != nil {
			return nil, fmt.Errorf("selector: %q: %w", c.selector, err)
		}
	}
	return c, nil
}

// Identity values that say the type of the resource: a preset's family whose operator
// names the resource by an object's apiVersion and kind (crossplane-managed's
// provider-kubernetes: its manifest's), its namespace and its name.
const (
	identityAPIVersion = "manifestAPIVersion"
	identityKind       = "manifestKind"
	identityNamespace  = "manifestNamespace"
	identityName       = "manifestName"
)

// otherObject says why the call does not ask about the one object the identity names, or
// "": when an identity names an object by its type (otherType), the rule must ask for
// that object by its namespace and name as the identity has them. A literal namespace, a
// name template that adds to the manifest's name, or a selector asks about others, whose
// absence says nothing of it.
func (c *kubernetesCall) otherObject(identity map[string]string) string {
	if identity[identityKind] == "" && identity[identityAPIVersion] == "" {
		return ""
	}
	names := fmt.Sprintf("the object names %s %s", identity[identityKind], identity[identityName])
	if ns := identity[identityNamespace]; ns != "" {
		names += " in namespace " + ns
	}
	switch {
	case c.p.name == nil:
		return names + ": the rule asks by a selector, not by its name, so an answer would be about other objects"
	case c.name != identity[identityName]:
		return fmt.Sprintf("%s, and the rule asks for %q: an answer would be about another object", names, c.name)
	case c.namespace != identity[identityNamespace]:
		return fmt.Sprintf("%s, and the rule asks in namespace %q: an answer would be about another object", names, c.namespace)
	}
	return ""
}

// otherType says why the provider's type is not the one the identity names, or "": a
// Secret looked up as a ConfigMap is not found, and would read as Gone while it exists.
func (p *kubernetesProvider) otherType(identity map[string]string) string {
	apiVersion, kind := identity[identityAPIVersion], identity[identityKind]
	if apiVersion == "" && kind == "" {
		return ""
	}
	if err := p.resolve(); err != nil {
		return "" // Unknown when asked
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" || gv.Group != p.resource.Group || kind != p.resource.Kind {
		return fmt.Sprintf("the object names a %s %s, not %s, the rule's resource: asked as %s it would not be found, whatever it is", apiVersion, kind, p.resource, p.resource)
	}
	return ""
}

func (c *kubernetesCall) Key() string {
	h := sha256.New()
	fmt.Fprintf(h, "kubernetes\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s", c.p.spec.Kubeconfig, c.p.spec.Context, c.p.spec.Resource, c.namespace, c.name, c.selector)
	return hex.EncodeToString(h.Sum(nil))
}

func (c *kubernetesCall) Do(ctx context.Context) Answer {
	p := c.p
	if err := p.resolve(); err != nil {
		return Unknown("%s %s: %v", p.spec.Resource, p.where, err)
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	r := p.resource
	var client dynamic.ResourceInterface = p.dyn.Resource(r.GroupVersionResource)
	if r.Namespaced && c.namespace != "" {
		client = p.dyn.Resource(r.GroupVersionResource).Namespace(c.namespace)
	}
	what := r.String()
	if r.Namespaced && c.namespace != "" {
		what += " in namespace " + c.namespace
	}
	if c.name != "" {
		if r.Namespaced && c.namespace == "" {
			return Unknown("%s is namespaced: the rule must name the namespace of %s", r, c.name)
		}
		ref := r.Ref(c.namespace, c.name, "")
		found, err := client.Get(ctx, c.name, metav1.GetOptions{})
		switch {
		case ctx.Err() != nil:
			return c.late(ref.String())
		case apierrors.IsNotFound(err) && namesObject(err, r.GroupResource(), c.name):
			return Answer{Verdict: finalizev1alpha1.VerdictGone, Evidence: fmt.Sprintf("%s not found %s", ref, p.where)}
		case apierrors.IsNotFound(err):
			return Unknown("getting %s %s: the 404 is not a NotFound of %s %s (its details name another object, or none: "+
				"the type may not be served any more): %v", ref, p.where, r, c.name, err)
		case err != nil:
			return Unknown("getting %s %s: %v", ref, p.where, err)
		}
		return Answer{Verdict: finalizev1alpha1.VerdictPresent, Evidence: fmt.Sprintf("%s exists %s (uid %s)", ref, p.where, found.GetUID()), Found: string(found.GetUID())}
	}
	// A page may come back empty with a continue token (the server filtered a page's worth
	// of objects out): the list is read on until a page has an item, or has no token.
	next := ""
	for pages := 1; ; pages++ {
		list, err := client.List(ctx, metav1.ListOptions{LabelSelector: c.selector, Limit: 1, Continue: next})
		if ctx.Err() != nil {
			return c.late(what)
		}
		if err != nil {
			return Unknown("listing %s with selector %q %s: %v", what, c.selector, p.where, err)
		}
		if len(list.Items) > 0 {
			first := list.Items[0]
			return Answer{Verdict: finalizev1alpha1.VerdictPresent, Evidence: fmt.Sprintf("%s matches %q %s", r.Ref(first.GetNamespace(), first.GetName(), "").String(), c.selector, p.where), Found: string(first.GetUID())}
		}
		if list.GetContinue() == "" {
			return Answer{Verdict: finalizev1alpha1.VerdictGone, Evidence: fmt.Sprintf("no %s matches %q %s", what, c.selector, p.where)}
		}
		if list.GetContinue() == next || pages == maxEmptyPages {
			return Unknown("listing %s with selector %q %s: %d empty pages, and the list does not end", what, c.selector, p.where, pages)
		}
		next = list.GetContinue()
	}
}

// maxEmptyPages bounds the empty pages one selector list reads before it gives up: a
// server that never ends a list gets an Unknown, not the whole deadline.
const maxEmptyPages = 100

// namesObject reports whether a NotFound is about the object asked for: the Status's
// details name it, its resource and its group (kube.IsNotFoundOf). The 404 of a path the
// server does not serve (a type or group that is not installed, a CRD deleted since
// discovery, an aggregated API without its server) names no object, and neither does
// what client-go makes of a 404 body that is not a Status.
func namesObject(err error, gr schema.GroupResource, name string) bool {
	return kube.IsNotFoundOf(err, gr, name)
}

// late is the answer when the deadline passed before the API server's answer was read:
// net/http may still hand over a response that raced the deadline, and a server whose
// lookup the disconnect aborted may answer anything, so a late answer is never used.
func (c *kubernetesCall) late(what string) Answer {
	return Unknown("%s %s: no answer within %s", what, c.p.where, c.p.timeout)
}
