package doctor

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	ext.Retained, _ = p.Retained(full, ns, fin.Name)
	ext.Held, _ = p.Held(full, ns, fin.Name)
	return ext
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
	switch {
	case ext.Held != "":
		s += "; its operator must not be bypassed (" + ext.Held + ")"
	case ext.Retained != "":
		s += "; it is meant to outlive the object (" + ext.Retained + "), so the finalizer guards no deletion"
	}
	return s
}
