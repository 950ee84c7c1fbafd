package owner

import (
	"fmt"
	"regexp"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
)

// Entry is one well-known finalizer.
type Entry struct {
	// Finalizer is the exact name or a glob ("external-attacher/*").
	Finalizer string
	// Owner is the controller expected to remove the finalizer.
	Owner string
	// Project is who ships that controller.
	Project string
	// ControlPlane: the owner is part of Kubernetes' control plane (kube-controller-manager,
	// kube-apiserver, cloud-controller-manager), which runs as no workload of the cluster.
	// It says who removes the finalizer (the doctor, preflight), not whether the finalizer
	// is system: that is IsSystem's, by name, and every such entry's name is system
	// (TestEveryControlPlaneEntryIsSystemByName).
	ControlPlane bool
	// Purpose is what must happen before the finalizer may go.
	Purpose string
	// Source is where upstream defines the finalizer.
	Source string
	// Workloads name the Deployments, StatefulSets or DaemonSets the owner runs as (by
	// name or app.kubernetes.io/name label), when Owner is not itself such a name.
	Workloads []string
	// Managers are field managers that are the owner when they wrote the finalizer,
	// though they apply manifests for people elsewhere (pkg/owner IsGenericManager):
	// Flux's kustomize-controller writes finalizers.fluxcd.io on its own Kustomizations.
	Managers []string
	// Locate says how to find out where the owner runs, or whether it can run at all,
	// when neither a field manager nor a workload name identifies it.
	Locate string

	pattern glob.Pattern
}

var workloadNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// WorkloadNames are the names (or app.kubernetes.io/name labels) of the workloads the
// owner runs as: Workloads, else Owner when it is such a name. A description ("the
// Crossplane provider of this managed resource") names no workload.
func (e *Entry) WorkloadNames() []string {
	if len(e.Workloads) > 0 {
		return e.Workloads
	}
	if workloadNameRE.MatchString(e.Owner) {
		return []string{e.Owner}
	}
	return nil
}

// Catalog finds the entry of a finalizer: exact names first, then globs in order.
type Catalog struct {
	exact map[string]*Entry
	globs []*Entry
	// byProject holds the exact entries by projectOf their name: the candidates of
	// Resembling, which runs for every finalizer of every stuck object.
	byProject map[string][]*Entry
}

// newCatalog builds a catalogue. Duplicate exact names are an error.
func newCatalog(entries []Entry) (*Catalog, error) {
	c := &Catalog{exact: map[string]*Entry{}, byProject: map[string][]*Entry{}}
	for i := range entries {
		e := entries[i]
		p, err := glob.Compile(e.Finalizer)
		if err != nil {
			return nil, fmt.Errorf("catalogue entry %d: %w", i, err)
		}
		e.pattern = p
		if p.Literal() {
			if _, dup := c.exact[e.Finalizer]; dup {
				return nil, fmt.Errorf("catalogue entry %q is listed twice", e.Finalizer)
			}
			c.exact[e.Finalizer] = &e
			if project := projectOf(e.Finalizer); project != "" {
				c.byProject[project] = append(c.byProject[project], &e)
			}
			continue
		}
		c.globs = append(c.globs, &e)
	}
	return c, nil
}

// Builtin returns the catalogue of well-known finalizers.
func Builtin() *Catalog { return builtinCatalog }

var builtinCatalog = func() *Catalog {
	c, err := newCatalog(builtin)
	if err != nil {
		panic(err)
	}
	return c
}()

// Lookup returns the entry for a finalizer.
func (c *Catalog) Lookup(finalizer string) (*Entry, bool) {
	if e, ok := c.exact[finalizer]; ok {
		return e, true
	}
	for _, e := range c.globs {
		if e.pattern.Match(finalizer) {
			return e, true
		}
	}
	return nil, false
}

// Len is the number of entries.
func (c *Catalog) Len() int { return len(c.exact) + len(c.globs) }
