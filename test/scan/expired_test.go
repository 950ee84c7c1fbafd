package scan

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

// pausingTransport holds back the first paged configmap list until etcd has compacted
// past it, and records the status of every configmap list.
type pausingTransport struct {
	next     http.RoundTripper
	pause    func()
	once     sync.Once
	mu       sync.Mutex
	statuses []int
}

func (p *pausingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/configmaps") {
		return resp, err
	}
	p.mu.Lock()
	p.statuses = append(p.statuses, resp.StatusCode)
	p.mu.Unlock()
	if req.URL.Query().Get("continue") == "" && resp.StatusCode == http.StatusOK {
		p.once.Do(p.pause)
	}
	return resp, err
}

// TestScanRelistsWhenTheRealAPIServerExpiresTheContinueToken makes kube-apiserver answer a
// continue request with 410 Gone, and checks that the type is listed again from the start
// and nothing is missed or listed twice.
func TestScanRelistsWhenTheRealAPIServerExpiresTheContinueToken(t *testing.T) {
	ctx := t.Context()
	compacting, err := controlplane.Start(ctx, controlplane.Options{APIServerFlags: map[string]string{
		"etcd-compaction-interval": "1s",
		// Pages then come from etcd, where compaction expires continue tokens.
		"watch-cache": "false",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer compacting.Stop()
	kube := kubernetes.NewForConfigOrDie(compacting.Config)
	ns := "paged"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Finalizers: []string{"example.com/hold"}}}
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// While the first page waits, keep writing so that etcd's revision moves on and the
	// compactor (every second, to the revision of the interval before) passes the page's.
	advance := func() {
		deadline := time.Now().Add(4 * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			_, _ = kube.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "churn-"}}, metav1.CreateOptions{})
			time.Sleep(50 * time.Millisecond)
		}
	}
	cfg := rest.CopyConfig(compacting.Config)
	pt := &pausingTransport{pause: advance}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { pt.next = rt; return pt })

	s := &scan.Scanner{
		Discovery: discovery.NewDiscoveryClientForConfigOrDie(compacting.Config),
		Metadata:  metadata.NewForConfigOrDie(cfg),
		Kube:      kube,
	}
	res, err := s.Scan(ctx, scan.Options{ChunkSize: 2, Resources: []schema.GroupResource{{Resource: "configmaps"}}})
	if err != nil {
		t.Fatal(err)
	}
	saw410 := false
	for _, code := range pt.statuses {
		saw410 = saw410 || code == http.StatusGone
	}
	if !saw410 {
		t.Fatalf("kube-apiserver never expired the continue token (statuses %v); the test did not test anything", pt.statuses)
	}
	if len(res.Incomplete) != 0 {
		t.Errorf("incomplete: %+v", res.Incomplete)
	}
	seen := map[string]int{}
	for _, o := range res.Objects {
		seen[o.Meta.Name]++
	}
	for i := range 6 {
		if n := seen[fmt.Sprintf("cm-%d", i)]; n != 1 {
			t.Errorf("cm-%d listed %d times, want once", i, n)
		}
	}
	t.Logf("configmap list statuses: %v", pt.statuses)
}
