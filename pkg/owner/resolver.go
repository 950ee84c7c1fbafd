package owner

import (
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// Resolver names the owner of each finalizer.
type Resolver struct {
	catalog *Catalog
	// groups are the served API groups, longest first, so the most specific match wins.
	groups []string
}

// NewResolver returns a resolver that uses the catalogue and the served API groups.
func NewResolver(catalog *Catalog, groups []string) *Resolver {
	g := make([]string, 0, len(groups))
	for _, name := range groups {
		if name != "" {
			g = append(g, name)
		}
	}
	sort.SliceStable(g, func(i, j int) bool { return len(g[i]) > len(g[j]) })
	return &Resolver{catalog: catalog, groups: g}
}

// Resolve describes finalizer name, found in field of obj.
func (r *Resolver) Resolve(obj *metav1.ObjectMeta, field, name string) finalizev1alpha1.Finalizer {
	f := finalizev1alpha1.Finalizer{Name: name, Field: field, OwnerSource: finalizev1alpha1.OwnerSourceUnknown, System: IsSystem(name)}
	writers := Writers(obj.ManagedFields, field, name)
	controller := ""
	for _, w := range writers {
		if !IsGenericManager(w) {
			controller = w
			break
		}
	}
	switch {
	case controller != "":
		f.AddedBy = controller
	case len(writers) > 0:
		f.AddedBy = writers[0]
	}

	if e, ok := r.catalog.Lookup(name); ok {
		f.Owner, f.OwnerSource = e.Owner, finalizev1alpha1.OwnerSourceCatalog
		return f
	}
	// A likely misspelling of a catalogued finalizer is nobody's to remove, whoever
	// wrote it: the writer of a misspelled finalizer (a GitOps applier, an ApplicationSet
	// from its template) is not a controller that knows the name.
	if e, _ := r.catalog.Resembling(name); e != nil {
		f.Resembles = e.Finalizer
		return f
	}
	// Who added a finalizer is not who removes it: a writer is its owner only when its
	// writes are a controller's (Reconciles), not an applier's, a restore's or a person's.
	for _, w := range writers {
		if !IsGenericManager(w) && Reconciles(obj.ManagedFields, w) {
			f.Owner, f.OwnerSource = w, finalizev1alpha1.OwnerSourceManagedFields
			return f
		}
	}
	if g := r.matchGroup(name); g != "" {
		f.Owner, f.OwnerSource = g, finalizev1alpha1.OwnerSourceAPIGroup
	}
	return f
}

// matchGroup returns the served API group the finalizer's domain names: the domain equals
// the group, or lies inside it (widgets.db.example.com in db.example.com), the most
// specific group first. A group inside the domain (sql.example.com for example.com/x)
// does not own it: a parent domain says nothing about which of its groups' controllers
// added the finalizer.
func (r *Resolver) matchGroup(finalizer string) string {
	domain := domainOf(finalizer)
	if domain == "" {
		return ""
	}
	for _, g := range r.groups {
		if domain == g || strings.HasSuffix(domain, "."+g) {
			return g
		}
	}
	return ""
}

// domainOf is the DNS part of a finalizer name: before the first "/", or the whole name if
// it has no "/" but has a dot. Names like "kubernetes" or "orphan" have none.
func domainOf(finalizer string) string {
	domain, _, found := strings.Cut(finalizer, "/")
	if !found && !strings.Contains(finalizer, ".") {
		return ""
	}
	if !strings.Contains(domain, ".") {
		return ""
	}
	return domain
}

// Annotate fills in the owner of every finalizer of every object.
func (r *Resolver) Annotate(objs []*kube.Object) {
	for _, o := range objs {
		for i, f := range o.Finalizers {
			o.Finalizers[i] = r.Resolve(&o.Meta, f.Field, f.Name)
		}
	}
}
