package doctor

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

func init() {
	register(family{causes: []Cause{
		{Reason: finalizev1alpha1.ReasonAPIServiceUnavailable, Priority: 0,
			Help: "an APIService is unavailable, so the namespace controller or the garbage collector cannot finish",
			Doc:  "a namespace reports `NamespaceDeletionDiscoveryFailure`, or the garbage collector waits while a group version cannot be discovered; the APIService and its `Available` condition are named"},
	}})
}

// apiServicesKey keys every APIService, by "group/version", listed once.
type apiServicesKey struct{}

// apiServiceFor returns the APIService of a group version ("metrics.k8s.io/v1beta1").
func (f *facts) apiServiceFor(gv string) *kube.APIService {
	return once(f, apiServicesKey{}, func() map[string]*kube.APIService {
		all := map[string]*kube.APIService{}
		err := f.each(func(opts metav1.ListOptions) (runtime.Object, error) {
			return f.dyn.Resource(apiServicesResource.GroupVersionResource).List(f.ctx, opts)
		}, metav1.ListOptions{}, func(obj runtime.Object) error {
			a := kube.ParseAPIService(obj.(*unstructured.Unstructured))
			all[a.GroupVersion()] = &a
			return nil
		})
		if err != nil {
			f.warnf("could not list apiservices.apiregistration.k8s.io, so unavailable APIServices are not named: %v", err)
		}
		return all
	})[gv]
}

// discoveryFailures are the group versions the scan could not discover.
func (f *facts) discoveryFailures() []string {
	var gvs []string
	for _, in := range f.res.Incomplete {
		if in.Reason == finalizev1alpha1.ReasonDiscoveryFailed {
			gvs = append(gvs, in.GroupVersion)
		}
	}
	return gvs
}

// apiServiceFindings name the unavailable APIService behind each failing group version.
func (d *diagnoser) apiServiceFindings(gvs []string, why string) []finding {
	var fs []finding
	for _, gv := range gvs {
		a := d.f.apiServiceFor(gv)
		name := apiServiceName(gv)
		state := "cannot be discovered"
		switch {
		case a != nil && !a.Reported:
			name = a.Name
			state = "cannot be discovered now, and has no Available condition yet"
		case a != nil && a.Available:
			// The aggregator's last word is older than this run's discovery, which failed.
			name = a.Name
			state = "cannot be discovered now, though its Available condition says " + a.Status
		case a != nil:
			name = a.Name
			state = a.State()
		}
		fd := rooted(finalizev1alpha1.ReasonAPIServiceUnavailable, finalizev1alpha1.Subject{Kind: "APIService", Name: name},
			fmt.Sprintf("%s: APIService %s %s", fmt.Sprintf(why, gv), name, state),
			fmt.Sprintf("restore the service behind APIService %s, or delete it if its API is no longer installed: kubectl delete apiservice %s", name, name),
			fmt.Sprintf("APIService %s %s; until it is available, no namespace can finish deleting and the garbage collector cannot be sure of %s", name, state, gv))
		fd.blockers = []finalizev1alpha1.Blocker{{Target: apiServicesResource.Ref("", name, ""), Message: "APIService " + state}}
		fs = append(fs, fd)
	}
	return fs
}

// apiServiceName is the conventional name of the APIService of a group version:
// "metrics.k8s.io/v1beta1" is served by "v1beta1.metrics.k8s.io".
func apiServiceName(gv string) string {
	g, v, ok := strings.Cut(gv, "/")
	if !ok {
		return gv
	}
	return v + "." + g
}

var groupVersionRE = regexp.MustCompile(`([a-z0-9]([a-z0-9.-]*[a-z0-9])?)/(v[0-9]+(alpha[0-9]+|beta[0-9]+)?)\b`)

// groupVersionsIn finds the group versions a condition message names, whatever its
// wording.
func groupVersionsIn(msg string) []string {
	var out []string
	for _, m := range groupVersionRE.FindAllStringSubmatch(msg, -1) {
		gv := m[1] + "/" + m[3]
		if strings.Contains(m[1], ".") && !slices.Contains(out, gv) {
			out = append(out, gv)
		}
	}
	sort.Strings(out)
	return out
}
