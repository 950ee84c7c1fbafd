package doctor

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/preset"
)

// The external resource behind a finalizer, when a preset knows where its operator
// keeps it.

// external reads the external resource behind fin when a preset knows where its operator
// keeps it: one read of the full object (and for some presets its namespace).
func (d *diagnoser) external(o *kube.Object, fin finalizev1alpha1.Finalizer) *finalizev1alpha1.External {
	p, ok := preset.ForFinalizer(fin.Name)
	if !ok {
		return nil
	}
	var client dynamic.ResourceInterface = d.f.dyn.Resource(o.Resource.GroupVersionResource)
	if o.Meta.Namespace != "" {
		client = d.f.dyn.Resource(o.Resource.GroupVersionResource).Namespace(o.Meta.Namespace)
	}
	full, err := client.Get(d.f.ctx, o.Meta.Name, metav1.GetOptions{})
	if err != nil {
		d.f.warnf("could not read %s to name its external resource: %v", o.Ref(), err)
		return nil
	}
	var ns *corev1.Namespace
	if p.NeedsNamespace && o.Meta.Namespace != "" {
		if ns, err = d.f.kube.CoreV1().Namespaces().Get(d.f.ctx, o.Meta.Namespace, metav1.GetOptions{}); err != nil {
			d.f.warnf("could not read namespace %s for its deletion policy: %v", o.Meta.Namespace, err)
			ns = nil
		}
	}
	ext := &finalizev1alpha1.External{Preset: p.Name, Identity: p.IdentityOf(full, fin.Name), Unnamed: p.IdentityUnusable(full, nil)}
	if ext.Unnamed == "" {
		ext.Unnamed = strings.Join(p.UnrecordedIdentity(full, fin.Name), "; ")
	}
	// Where the operator put it (the cluster a provider-kubernetes Object was applied to),
	// as the operator recorded it: the spec's reference may have changed since.
	if ref, ok := p.ScopeRecordOf(full); ok && ext.Unnamed == "" {
		rec, why := d.scopeRecord(ref)
		if why == "" {
			var scope string
			if scope, why = p.RecordedScope(full, rec, nil, false); why == "" {
				ext.Where = scope + ", as its " + ref.String() + " records"
			}
		}
		ext.Unnamed = why
	}
	ext.Retained, _ = p.Retained(full, ns, fin.Name)
	ext.Held, _ = p.Held(full, ns, fin.Name)
	return ext
}

// scopeRecord reads the object in which an operator records where it put an object's
// resource (preset.ScopeRecordOf), of a type the scan listed; nil when there is none, or
// why it cannot be read.
func (d *diagnoser) scopeRecord(ref preset.RecordRef) (*unstructured.Unstructured, string) {
	gr := schema.ParseGroupResource(ref.Resource)
	for _, r := range d.f.res.Resources {
		if r.GroupResource() != gr {
			continue
		}
		var client dynamic.ResourceInterface = d.f.dyn.Resource(r.GroupVersionResource)
		if ref.Namespace != "" {
			client = d.f.dyn.Resource(r.GroupVersionResource).Namespace(ref.Namespace)
		}
		rec, err := client.Get(d.f.ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && kube.IsNotFoundOf(err, gr, ref.Name):
			return nil, ""
		case err != nil:
			d.f.warnf("could not read %s to say where its operator put the resource: %v", ref, err)
			return nil, fmt.Sprintf("%s could not be read: %v", ref, err)
		}
		return rec, ""
	}
	return nil, fmt.Sprintf("%s is not served (or was not listed), so where its operator put the resource (%s) is not known", ref.Resource, ref)
}

// describeExternal says what to look up, for people.
func describeExternal(ext *finalizev1alpha1.External) string {
	var ids []string
	for k, v := range ext.Identity {
		ids = append(ids, k+"="+v)
	}
	sort.Strings(ids)
	s := "its external resource (preset " + ext.Preset + ") is "
	switch {
	case ext.Unnamed != "":
		s += "not named by the preset: " + ext.Unnamed
	case len(ids) == 0:
		s += "not named on the object yet"
	default:
		s += strings.Join(ids, ", ")
	}
	if ext.Where != "" {
		s += ", in " + ext.Where
	}
	switch {
	case ext.Held != "":
		s += "; its operator must not be bypassed (" + ext.Held + ")"
	case ext.Retained != "":
		s += "; it is meant to outlive the object (" + ext.Retained + "), so the finalizer guards no deletion"
	}
	return s
}
