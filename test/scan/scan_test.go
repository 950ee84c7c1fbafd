package scan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// seeded holds what TestScanFindsExactlyTheStuckSet and the tests after it rely on.
type seeded struct {
	s         *seed.Seeder
	stuck     map[key]bool
	healthy   map[key]bool
	pagedNS   string
	multiNS   string
	versioned seed.CRD
}

var (
	world     *seeded
	worldOnce sync.Once
	worldErr  error
)

// seedWorld seeds every scenario of the demo (but the unavailable APIService, which has
// its own test) plus what the scan must also handle: a CRD served in two versions, more
// objects of one type than a page holds, and an object whose finalizers come from several
// managers. It runs once per package.
func seedWorld(t *testing.T) *seeded {
	t.Helper()
	worldOnce.Do(func() { world, worldErr = seedAll() })
	if worldErr != nil {
		t.Fatalf("seeding failed: %v", worldErr)
	}
	return world
}

func seedAll() (*seeded, error) {
	ctx := context.Background()
	s, err := seed.New(cp.Config, "scan")
	if err != nil {
		return nil, err
	}
	w := &seeded{s: s, stuck: map[key]bool{}, healthy: map[key]bool{}}
	var firstErr error
	add := func(sc seed.Scenario, err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
		for _, o := range sc.Stuck {
			w.stuck[key{o.Resource.GroupResource().String(), o.Namespace, o.Name}] = true
		}
		for _, o := range sc.Healthy {
			w.healthy[key{o.Resource.GroupResource().String(), o.Namespace, o.Name}] = true
		}
	}
	add(s.Healthy(ctx))
	add(s.OrphanedOperator(ctx))
	add(s.PVCInUse(ctx))
	add(s.ForegroundDeletion(ctx))
	add(s.CRDWaitingOnInstances(ctx))
	add(s.ClusterScoped(ctx))
	if firstErr != nil {
		return nil, firstErr
	}

	// A CRD served as v1 (stored, preferred) and v1beta1: a custom resource created
	// through v1beta1 must be listed once, at the preferred version.
	w.versioned = seed.CRD{Group: s.Group("versioned"), Kind: "Queue", Plural: "queues", Singular: "queue", Versions: []string{"v1", "v1beta1"}}
	if err := s.EnsureCRD(ctx, w.versioned); err != nil {
		return nil, err
	}
	ns := s.Name("versioned")
	if err := s.Namespace(ctx, ns); err != nil {
		return nil, err
	}
	beta := w.versioned.GVR()
	beta.Version = "v1beta1"
	q := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": w.versioned.Group + "/v1beta1", "kind": "Queue",
		"metadata": map[string]any{"namespace": ns, "name": "jobs", "finalizers": []any{w.versioned.Group + "/drain"}},
	}}
	if _, err := s.Dynamic.Resource(beta).Namespace(ns).Create(ctx, q, metav1.CreateOptions{FieldManager: "queue-operator"}); err != nil {
		return nil, err
	}
	queue := seed.Object{Resource: beta, Namespace: ns, Name: "jobs"}
	if err := s.Delete(ctx, queue, nil); err != nil {
		return nil, err
	}
	w.stuck[key{"queues." + w.versioned.Group, ns, "jobs"}] = true

	// 25 configmaps in one namespace, 7 of them stuck: with --chunk-size 5 the type
	// takes several pages.
	w.pagedNS = s.Name("paged")
	if err := s.Namespace(ctx, w.pagedNS); err != nil {
		return nil, err
	}
	for i := range 25 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i), Labels: map[string]string{"tier": "paged"}}}
		if i%4 == 0 {
			cm.Finalizers = []string{"paging.example.com/hold"}
		}
		if _, err := s.Kube.CoreV1().ConfigMaps(w.pagedNS).Create(ctx, cm, metav1.CreateOptions{FieldManager: "paging-controller"}); err != nil {
			return nil, err
		}
		if i%4 == 0 {
			if err := s.Kube.CoreV1().ConfigMaps(w.pagedNS).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
				return nil, err
			}
			w.stuck[key{"configmaps", w.pagedNS, cm.Name}] = true
		}
	}

	// Finalizers from four writers: a manifest applied with kubectl, two controllers,
	// and Argo CD's server adding a catalogued finalizer.
	w.multiNS = s.Name("multi")
	if err := s.Namespace(ctx, w.multiNS); err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared", Finalizers: []string{"example.org/from-manifest"}}}
	if _, err := s.Kube.CoreV1().ConfigMaps(w.multiNS).Create(ctx, cm, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		return nil, err
	}
	shared := seed.Object{Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Namespace: w.multiNS, Name: "shared"}
	for fin, manager := range map[string]string{
		s.Group("alpha") + "/a":                             "alpha-controller",
		s.Group("beta") + "/b":                              "beta-controller",
		"resources-finalizer.argocd.argoproj.io/foreground": "argocd-server",
	} {
		if err := s.AddFinalizer(ctx, shared, fin, manager); err != nil {
			return nil, err
		}
	}
	if err := s.Delete(ctx, shared, nil); err != nil {
		return nil, err
	}
	w.stuck[key{"configmaps", w.multiNS, "shared"}] = true
	return w, nil
}

func TestScanFindsExactlyTheStuckSet(t *testing.T) {
	w := seedWorld(t)
	want := oracle(t, cp.Config)
	for k := range w.stuck {
		if _, ok := want[k]; !ok {
			t.Fatalf("seeding is wrong: the oracle does not see %s as stuck", k)
		}
	}
	list, r := scanJSON(t, cp.AdminKubeconfig, 0, "--chunk-size", "5")
	if r.Stderr != "" {
		t.Errorf("a complete scan warns about nothing, got %q", r.Stderr)
	}
	got := map[key]*finalizev1alpha1.StuckObject{}
	for i := range list.Items {
		o := &list.Items[i]
		k := keyOf(o)
		if got[k] != nil {
			t.Errorf("%s listed twice", k)
		}
		got[k] = o
	}
	for k, fins := range want {
		o, ok := got[k]
		if !ok {
			t.Errorf("missed stuck %s (finalizers %v)", k, fins)
			continue
		}
		var names []string
		for _, f := range o.Finalizers {
			names = append(names, f.Name)
		}
		if !slices.Equal(names, fins) {
			t.Errorf("%s: finalizers %v, want %v", k, names, fins)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("listed %s, which is not stuck", k)
		}
		if w.healthy[k] {
			t.Errorf("listed healthy %s", k)
		}
	}
	if len(list.Incomplete) != 0 {
		t.Errorf("incomplete: %+v", list.Incomplete)
	}
	// Longest-terminating first.
	for i := 1; i < len(list.Items); i++ {
		if list.Items[i].DeletionTimestamp.Before(&list.Items[i-1].DeletionTimestamp) {
			t.Errorf("items %d and %d are not sorted by deletionTimestamp", i-1, i)
		}
	}
	// The CRD served in two versions is listed at the preferred one.
	if q := got[key{"queues." + w.versioned.Group, w.s.Name("versioned"), "jobs"}]; q == nil || q.Target.APIVersion != w.versioned.Group+"/v1" || q.Target.Kind != "Queue" {
		t.Errorf("queue: %+v, want apiVersion %s/v1", q, w.versioned.Group)
	}
}

func TestScanNamesTheOwnerOfEachFinalizer(t *testing.T) {
	w := seedWorld(t)
	list, _ := scanJSON(t, cp.AdminKubeconfig, 0)
	byKey := map[key]*finalizev1alpha1.StuckObject{}
	for i := range list.Items {
		byKey[keyOf(&list.Items[i])] = &list.Items[i]
	}
	type want struct {
		owner   string
		source  finalizev1alpha1.OwnerSource
		addedBy string
		system  bool
		field   string
	}
	s := w.s
	tests := []struct {
		object    key
		finalizer string
		want      want
	}{
		{key{"databases." + s.Group("db"), s.Name("orphaned-operator"), "orders-db"}, s.DatabaseFinalizer(),
			want{"database-operator", "managedFields", "database-operator", false, "metadata.finalizers"}},
		{key{"namespaces", "", s.Name("orphaned-operator")}, "kubernetes",
			want{"namespace controller (kube-controller-manager)", "catalog", "", true, "spec.finalizers"}},
		{key{"persistentvolumeclaims", s.Name("storage"), "data"}, "kubernetes.io/pvc-protection",
			want{"pvc-protection controller (kube-controller-manager)", "catalog", "", true, "metadata.finalizers"}},
		{key{"deployments.apps", s.Name("foreground"), "web"}, "foregroundDeletion",
			want{"garbage collector (kube-controller-manager)", "catalog", "", true, "metadata.finalizers"}},
		{key{"configmaps", s.Name("foreground"), "web-config"}, s.ConfigExporterFinalizer(),
			want{"config-exporter", "managedFields", "config-exporter", false, "metadata.finalizers"}},
		{key{"customresourcedefinitions.apiextensions.k8s.io", "", "gadgets." + s.Group("toys")}, "customresourcecleanup.apiextensions.k8s.io",
			want{"CRD finalizer controller (kube-apiserver)", "catalog", "", true, "metadata.finalizers"}},
		{key{"loadbalancers." + s.Group("lb"), "", s.Name("edge-lb")}, s.Group("lb") + "/release",
			want{"lb-operator", "managedFields", "lb-operator", false, "metadata.finalizers"}},
		{key{"configmaps", w.multiNS, "shared"}, "example.org/from-manifest",
			want{"", "unknown", "kubectl-client-side-apply", false, "metadata.finalizers"}},
		{key{"configmaps", w.multiNS, "shared"}, s.Group("alpha") + "/a",
			want{"alpha-controller", "managedFields", "alpha-controller", false, "metadata.finalizers"}},
		{key{"configmaps", w.multiNS, "shared"}, s.Group("beta") + "/b",
			want{"beta-controller", "managedFields", "beta-controller", false, "metadata.finalizers"}},
		{key{"configmaps", w.multiNS, "shared"}, "resources-finalizer.argocd.argoproj.io/foreground",
			want{"argocd-application-controller", "catalog", "argocd-server", false, "metadata.finalizers"}},
		// Written into a manifest by a generic client: the API group's controller owns it.
		{key{"queues." + w.versioned.Group, s.Name("versioned"), "jobs"}, w.versioned.Group + "/drain",
			want{"queue-operator", "managedFields", "queue-operator", false, "metadata.finalizers"}},
	}
	for _, tt := range tests {
		o := byKey[tt.object]
		if o == nil {
			t.Errorf("%s not listed", tt.object)
			continue
		}
		var f *finalizev1alpha1.Finalizer
		for i := range o.Finalizers {
			if o.Finalizers[i].Name == tt.finalizer {
				f = &o.Finalizers[i]
			}
		}
		if f == nil {
			t.Errorf("%s: finalizer %s not listed: %+v", tt.object, tt.finalizer, o.Finalizers)
			continue
		}
		got := want{f.Owner, f.OwnerSource, f.AddedBy, f.System, f.Field}
		if got != tt.want {
			t.Errorf("%s %s:\n got %+v\nwant %+v", tt.object, tt.finalizer, got, tt.want)
		}
	}
}

func TestScanFilters(t *testing.T) {
	w := seedWorld(t)
	s := w.s
	names := func(list *finalizev1alpha1.StuckObjectList) []string {
		var out []string
		for i := range list.Items {
			k := keyOf(&list.Items[i])
			out = append(out, k.String())
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"namespace: its objects and the namespace itself, nothing cluster-scoped", []string{"-n", s.Name("orphaned-operator")},
			[]string{"databases." + s.Group("db") + " " + s.Name("orphaned-operator") + "/orders-db", "namespaces /" + s.Name("orphaned-operator")}},
		{"short name", []string{"pvc", "-n", s.Name("storage")}, []string{"persistentvolumeclaims " + s.Name("storage") + "/data"}},
		{"singular of a custom resource", []string{"database", "-n", s.Name("orphaned-operator")}, []string{"databases." + s.Group("db") + " " + s.Name("orphaned-operator") + "/orders-db"}},
		{"kind", []string{"Gadget"}, []string{"gadgets." + s.Group("toys") + " " + s.Name("gadgets") + "/gadget-1"}},
		{"resource.group, cluster-scoped", []string{"loadbalancers." + s.Group("lb")}, []string{"loadbalancers." + s.Group("lb") + " /" + s.Name("edge-lb")}},
		{"comma-separated types", []string{"pvc,deployments.apps", "-n", s.Name("foreground")}, []string{"deployments.apps " + s.Name("foreground") + "/web"}},
		{"label selector", []string{"-l", "tier=paged", "--chunk-size", "2"}, func() []string {
			var out []string
			for i := 0; i < 25; i += 4 {
				out = append(out, fmt.Sprintf("configmaps %s/cm-%02d", w.pagedNS, i))
			}
			return out
		}()},
		{"finalizer glob", []string{"--finalizer", "*.argoproj.io/*"}, []string{"configmaps " + w.multiNS + "/shared"}},
		{"older than everything seeded", []string{"--older-than", "1h"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, _ := scanJSON(t, cp.AdminKubeconfig, 0, tt.args...)
			if got := names(list); !slices.Equal(got, tt.want) {
				t.Errorf("scan %v:\n got %q\nwant %q", tt.args, got, tt.want)
			}
		})
	}
}

func TestScanInvalidInvocation(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"scan", "nosuchthings"}, `error: the server doesn't have a resource type "nosuchthings"`},
		{[]string{"scan", "--older-than", "-5m"}, "error: --older-than must not be negative, got -5m0s"},
		{[]string{"scan", "--concurrency", "0"}, "error: --concurrency must be at least 1, got 0"},
		{[]string{"scan", "-o", "table"}, `error: unable to match a printer suitable for the output format "table"`},
		{[]string{"scan", "-A", "-n", "default"}, "error: --namespace and --all-namespaces cannot be used together"},
		{[]string{"scan", "--older-than", "soon"}, `error: invalid argument "soon" for "--older-than" flag`},
	}
	for _, tt := range tests {
		r := cli.Run(t, cp.AdminKubeconfig, tt.args...)
		if r.Code != 2 || !strings.HasPrefix(r.Stderr, tt.want) || r.Stdout != "" {
			t.Errorf("%v: code %d, stdout %q, stderr %q; want 2 and stderr starting %q", tt.args, r.Code, r.Stdout, r.Stderr, tt.want)
		}
	}
}

func TestScanOutputFormats(t *testing.T) {
	w := seedWorld(t)
	ns := w.s.Name("storage")
	r := cli.Run(t, cp.AdminKubeconfig, "scan", "-n", ns, "-o", "name")
	if r.Code != 0 || r.Stdout != "persistentvolumeclaim/data\n" {
		t.Errorf("-o name: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	r = cli.Run(t, cp.AdminKubeconfig, "scan", "-n", ns, "-o", "jsonpath={.items[*].finalizers[*].owner}")
	if r.Code != 0 || r.Stdout != "pvc-protection controller (kube-controller-manager)" {
		t.Errorf("-o jsonpath: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	r = cli.Run(t, cp.AdminKubeconfig, "scan", "-n", ns, "-o", "yaml")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "apiVersion: kubectl-finalize.github.io/v1alpha1\nincomplete: []\nitems:\n") {
		t.Errorf("-o yaml: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	r = cli.Run(t, cp.AdminKubeconfig, "scan", "-n", ns, "--no-headers")
	if r.Code != 0 || strings.Contains(r.Stdout, "NAMESPACE") || !strings.Contains(r.Stdout, "persistentvolumeclaims/data") {
		t.Errorf("--no-headers: %d %q", r.Code, r.Stdout)
	}
	// Nothing found: nothing on stdout, kubectl's message on stderr.
	r = cli.Run(t, cp.AdminKubeconfig, "scan", "-n", "default")
	if r.Code != 0 || r.Stdout != "" || r.Stderr != "No stuck objects found in namespace default.\n" {
		t.Errorf("empty scan: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	r = cli.Run(t, cp.AdminKubeconfig, "scan", "-n", "default", "-o", "json")
	if r.Code != 0 || r.Stderr != "" || !strings.Contains(r.Stdout, `"items": []`) {
		t.Errorf("empty scan as json: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
}

func TestScanWithAnUnavailableAPIService(t *testing.T) {
	w := seedWorld(t)
	ctx := t.Context()
	s, err := seed.New(cp.Config, "apisvc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UnavailableAPIService(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Later tests expect complete scans: wait until discovery forgets the group.
		ctx := context.Background()
		_ = s.Dynamic.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}).
			Delete(ctx, s.MetricsAPIService(), metav1.DeleteOptions{})
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			_, err := discovery.ServerPreferredResources(cp.Kube(t).Discovery())
			return err == nil, nil
		})
	})
	gv := "v1beta1"
	group := s.Group("metrics")
	// The aggregator marks the APIService unavailable once it has tried its service.
	var list *finalizev1alpha1.StuckObjectList
	var r cli.Result
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		r = cli.Run(t, cp.AdminKubeconfig, "scan", "-o", "json")
		return r.Code == 3, nil
	}); err != nil {
		t.Fatalf("scan never reported the unavailable APIService: code %d, stderr %q", r.Code, r.Stderr)
	}
	list, r = scanJSON(t, cp.AdminKubeconfig, 3)
	want := finalizev1alpha1.IncompleteResource{GroupVersion: group + "/" + gv, Reason: "DiscoveryFailed"}
	found := false
	for _, in := range list.Incomplete {
		if in.GroupVersion == want.GroupVersion && in.Reason == want.Reason && in.Resource == "" && in.Message != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("incomplete %+v lacks %+v", list.Incomplete, want)
	}
	if !strings.Contains(r.Stderr, "Warning: the scan is incomplete") || !strings.Contains(r.Stderr, group+"/"+gv) {
		t.Errorf("stderr does not name the failing group: %q", r.Stderr)
	}
	// Everything else is still listed.
	got := map[key]bool{}
	for i := range list.Items {
		got[keyOf(&list.Items[i])] = true
	}
	for k := range w.stuck {
		if !got[k] {
			t.Errorf("with an APIService down, %s is no longer listed", k)
		}
	}
	if !got[key{"namespaces", "", s.Name("metrics-consumer")}] {
		t.Errorf("the namespace deleted behind the APIService is not listed")
	}
}

func TestScanAsAUserWhoMayNotListSecrets(t *testing.T) {
	w := seedWorld(t)
	ctx := t.Context()
	admin := cp.Kube(t)
	// Read access to every listable type but secrets, as an auditor role might have.
	lists, err := discovery.ServerPreferredResources(admin.Discovery())
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "scan-everything-but-secrets"}}
	for _, l := range lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || (gv.Group == "" && r.Name == "secrets") {
				continue
			}
			role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{gv.Group}, Resources: []string{r.Name}, Verbs: []string{"get", "list"}})
		}
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "auditor"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "auditor"}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A stuck secret the auditor cannot see.
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token", Finalizers: []string{"vault.example.com/revoke"}}}
	ns := w.s.Name("multi")
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.CoreV1().Secrets(ns).Delete(ctx, "token", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	kubeconfig := userKubeconfig(t, "auditor")
	var list *finalizev1alpha1.StuckObjectList
	var r cli.Result
	// RBAC takes a moment to see the new binding.
	for range 50 {
		r = cli.Run(t, kubeconfig, "scan", "-o", "json")
		if r.Code == 3 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	list, r = scanJSON(t, kubeconfig, 3)
	var forbidden []finalizev1alpha1.IncompleteResource
	for _, in := range list.Incomplete {
		if in.Reason == finalizev1alpha1.ReasonForbidden {
			forbidden = append(forbidden, in)
		}
	}
	if len(forbidden) != 1 || forbidden[0].GroupVersion != "v1" || forbidden[0].Resource != "secrets" || !strings.Contains(forbidden[0].Message, "forbidden") {
		t.Fatalf("incomplete %+v: want exactly secrets (v1) Forbidden", list.Incomplete)
	}
	if !strings.Contains(r.Stderr, "secrets: Forbidden: ") {
		t.Errorf("stderr does not name secrets: %q", r.Stderr)
	}
	got := map[key]bool{}
	for i := range list.Items {
		got[keyOf(&list.Items[i])] = true
	}
	for k := range w.stuck {
		if !got[k] {
			t.Errorf("the auditor's scan misses %s", k)
		}
	}
	if got[key{"secrets", ns, "token"}] {
		t.Errorf("a secret the auditor may not list is listed")
	}
	// The admin sees it, and the table names its owner by API group or as unknown.
	adminList, _ := scanJSON(t, cp.AdminKubeconfig, 0, "secrets")
	if len(adminList.Items) != 1 || adminList.Items[0].Target.Name != "token" {
		t.Errorf("admin scan of secrets: %+v", adminList.Items)
	}
}
