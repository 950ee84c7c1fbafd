package doctor

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/controller"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// facts holds what the doctor read, each thing read at most once: the scan and its index,
// and, in one store, the targeted reads each rule family makes. A family keys its reads
// by a key type of its own (apiServicesKey in apiservice.go, nodeKey in pod.go ...), so
// adding one adds no field here. One diagnosis uses it from one goroutine.
type facts struct {
	ctx  context.Context
	kube client.Interface
	dyn  dynamic.Interface
	res  *scan.Result
	now  time.Time
	// chunk is the page size of every list; 0 lists in one request.
	chunk int64

	byUID       map[types.UID]*kube.Object
	byNamespace map[string][]*kube.Object

	warnings []string

	// read holds the targeted reads, by their key (once).
	read map[any]any
	// workloads finds controllers' workloads, each name's once.
	workloads *controller.Finder
}

func newFacts(ctx context.Context, kc client.Interface, dyn dynamic.Interface, res *scan.Result) *facts {
	f := &facts{
		ctx: ctx, kube: kc, dyn: dyn, res: res, now: res.Now,
		byUID:       map[types.UID]*kube.Object{},
		byNamespace: map[string][]*kube.Object{},
		read:        map[any]any{},
	}
	f.workloads = &controller.Finder{Dynamic: dyn, Scan: res, Warnf: f.warnf}
	for _, o := range res.Objects {
		f.byUID[o.Meta.UID] = o
		if o.Meta.Namespace != "" {
			f.byNamespace[o.Meta.Namespace] = append(f.byNamespace[o.Meta.Namespace], o)
		}
	}
	return f
}

// once returns what key names, reading it with get the first time it is asked.
func once[K comparable, V any](f *facts, key K, get func() V) V {
	if v, ok := f.read[key]; ok {
		return v.(V)
	}
	v := get()
	f.read[key] = v
	return v
}

// each lists a collection in pages of f.chunk and calls fn with every item, a pointer
// into the page: what fn keeps, it copies. An expired continue token falls back to one
// full list (client-go's pager).
func (f *facts) each(list func(metav1.ListOptions) (runtime.Object, error), opts metav1.ListOptions, fn func(runtime.Object) error) error {
	p := pager.New(pager.SimplePageFunc(list))
	p.PageSize = f.chunk
	return p.EachListItem(f.ctx, opts, fn)
}

// warnf records a read that failed; the report prints it once.
func (f *facts) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !slices.Contains(f.warnings, msg) {
		f.warnings = append(f.warnings, msg)
	}
}
