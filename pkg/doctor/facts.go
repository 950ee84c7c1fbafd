package doctor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// facts holds what the doctor read, each thing read at most once: the scan and its index,
// and the targeted reads each rule family makes (apiservice.go, webhook.go, storage.go,
// controller.go). One diagnosis uses it from one goroutine.
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

	apiServicesOnce sync.Once
	apiServices     map[string]*apiService // by "group/version"

	webhooksOnce sync.Once
	webhooks     []webhook

	services map[types.NamespacedName]*serviceState
	pods     map[string][]corev1.Pod
	events   map[string][]eventsv1.Event
	// warningsRead: the cluster-wide read of warnings was considered (controller.go).
	warningsRead bool

	// workloadsByName are the workloads named like each controller (workload.go).
	workloadsByName map[string]workloads
	// reviews are the answers of SubjectAccessReviews (access.go); reviewsRefused: a
	// review failed (refused, or any other error), and no more are asked.
	reviews        map[string]bool
	reviewsRefused bool
}

func newFacts(ctx context.Context, kc client.Interface, dyn dynamic.Interface, res *scan.Result) *facts {
	f := &facts{
		ctx: ctx, kube: kc, dyn: dyn, res: res, now: res.Now,
		byUID:       map[types.UID]*kube.Object{},
		byNamespace: map[string][]*kube.Object{},
		services:    map[types.NamespacedName]*serviceState{},
		pods:        map[string][]corev1.Pod{},
		events:      map[string][]eventsv1.Event{},

		workloadsByName: map[string]workloads{},
		reviews:         map[string]bool{},
	}
	for _, o := range res.Objects {
		f.byUID[o.Meta.UID] = o
		if o.Meta.Namespace != "" {
			f.byNamespace[o.Meta.Namespace] = append(f.byNamespace[o.Meta.Namespace], o)
		}
	}
	return f
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
