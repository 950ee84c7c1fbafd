package doctor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// A copy of a remover that does not say which namespaces it watches runs for an object
// only when that is proven (#34 point 2, Workload.ScopeUnproven); each case here was
// Progressing or ControllerForbidden before.

// youngStuck is a Database in namespace a, written by db-operator two hours ago, whose
// deletion began a minute ago: inside the progress window.
func youngStuck() (*kube.Object, *scan.Result) {
	o := managedBy(stuck(databases, "a", "orders", "db.example.com/finalizer"), now.Add(-2*time.Hour))
	ts := metav1.NewTime(now.Add(-time.Minute))
	o.Meta.DeletionTimestamp = &ts
	res := result(o)
	res.Namespaces, res.Resources = []string{"a"}, nil
	return o, res
}

func withLabels(u *unstructured.Unstructured, labels map[string]string) *unstructured.Unstructured {
	u.SetLabels(labels)
	return u
}

func workloadKinds() map[schema.GroupVersionResource]string {
	return map[schema.GroupVersionResource]string{
		apiServicesResource.GroupVersionResource:                 "APIServiceList",
		{Group: "apps", Version: "v1", Resource: "deployments"}:  "DeploymentList",
		{Group: "apps", Version: "v1", Resource: "statefulsets"}: "StatefulSetList",
		{Group: "apps", Version: "v1", Resource: "daemonsets"}:   "DaemonSetList",
	}
}

// Two releases of one operator in one namespace, each scoped by its own configuration.
func TestTwoReleasesInOneNamespaceAreTwoInstalls(t *testing.T) {
	o, res := youngStuck()
	release := func(r string) map[string]string {
		return map[string]string{"app.kubernetes.io/name": "db-operator", "app.kubernetes.io/instance": r}
	}
	rep := diagnose(t, res,
		withLabels(deployment("operators", "team-b-db-operator", 1, 1, "tb"), release("team-b")),
		withLabels(deployment("operators", "team-c-db-operator", 1, 1, "tc"), release("team-c")))
	wantCause(t, rep, o, finalizev1alpha1.ReasonUnknown, "whether it runs for this object cannot be told",
		"other releases of the program run beside it (app.kubernetes.io/instance team-c)",
		"kubectl get -n operators deploy/team-b-db-operator -o yaml, kubectl get configmaps -n operators")
}

// The one install found, while StatefulSets could not be read: another install may be
// one of them.
func TestAnInstallIsNotTheOnlyOneWhenAKindWentUnread(t *testing.T) {
	o, res := youngStuck()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), workloadKinds(), deployment("ops", "db-operator", 1, 1, "db-operator"))
	dyn.PrependReactor("list", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "", errors.New("RBAC"))
	})
	rep, err := (&Doctor{Kube: kubefake.NewClientset(), Dynamic: dyn}).Diagnose(context.Background(), res)
	if err != nil {
		t.Fatal(err)
	}
	wantCause(t, rep, o, finalizev1alpha1.ReasonUnknown, "its StatefulSets could not be read, so whether the program is installed elsewhere too is not known")
}

// The install of the object's namespace may not act on it; another, elsewhere, may and
// may watch it: not proven forbidden. When that one may not act either, it is.
func TestForbiddenOnlyWhenEveryCopyThatMayRunIsForbidden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		denied []string
		reason string
		says   string
	}{
		{"a copy elsewhere may act", []string{"system:serviceaccount:a:tenant-a"}, finalizev1alpha1.ReasonProgressing,
			"ready, but not proven to run for this object: Deployment ops/db-operator"},
		{"no copy may act", []string{"system:serviceaccount:a:tenant-a", "system:serviceaccount:ops:db-operator"}, finalizev1alpha1.ReasonControllerForbidden,
			"ServiceAccount ops/db-operator (of Deployment ops/db-operator) may not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, res := youngStuck()
			kc := kubefake.NewClientset()
			kc.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
				sar.Status.Allowed = true
				for _, d := range tc.denied {
					if sar.Spec.User == d {
						sar.Status.Allowed = false
					}
				}
				return true, sar, nil
			})
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), workloadKinds(),
				deployment("a", "db-operator", 1, 1, "tenant-a"), deployment("ops", "db-operator", 1, 1, "db-operator"))
			rep, err := (&Doctor{Kube: kc, Dynamic: dyn}).Diagnose(context.Background(), res)
			if err != nil {
				t.Fatal(err)
			}
			wantCause(t, rep, o, tc.reason, tc.says)
			if c := rep.Cause(o); tc.reason == finalizev1alpha1.ReasonProgressing && strings.Contains(c.Message, "may not") {
				t.Errorf("a copy that may act is left out: %s", c.Message)
			}
		})
	}
}
