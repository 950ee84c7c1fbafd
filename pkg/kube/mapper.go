package kube

import (
	"regexp"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
)

// NewRESTMapper is the RESTMapper of the commands: kubectl's, a RESTMapper of dc's
// discovery behind kubectl's shortcut expander, which resolves plurals, singulars, kinds
// and short names as kubectl does. It also keeps the short names two types share, which
// kubectl resolves to the first in discovery order with a warning, so that ResolveType
// refuses them (SharedShortName).
func NewRESTMapper(dc discovery.CachedDiscoveryInterface) meta.RESTMapper {
	m := &shortNames{shared: map[string][]string{}}
	m.RESTMapper = restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(dc), dc, m.warned)
	return m
}

// shortNames is a shortcut expander that keeps what it warned about.
type shortNames struct {
	meta.RESTMapper
	mu     sync.Mutex
	shared map[string][]string
}

// sharedShortName is the warning of client-go's shortcut expander (restmapper
// shortcut.go, expandResourceShortcut) about a short name that more than one type has.
var sharedShortName = regexp.MustCompile(`^short name "([^"]*)" could also match lower priority resource (\S+)$`)

func (m *shortNames) warned(msg string) {
	if sub := sharedShortName.FindStringSubmatch(msg); sub != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		if !slices.Contains(m.shared[sub[1]], sub[2]) {
			m.shared[sub[1]] = append(m.shared[sub[1]], sub[2])
		}
	}
}

// SharedShortName returns the types other than the one it was expanded to that have the
// short name name ("echoes.b.example.com"), once the expander was asked about it.
func (m *shortNames) SharedShortName(name string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.shared[name])
}
