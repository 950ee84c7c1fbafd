package stress

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/fakecloud"
)

// truth is the external world of the chaos run: instances that exist or not. Its
// provider endpoint answers for one object version, /verify/UID/RV/INSTANCE, and every
// answer it gives is logged, so that each removal can be traced to a Gone about the very
// uid and resourceVersion it was written against.
type truth struct {
	*httptest.Server
	caFile string
	mu     sync.Mutex
	gone   map[string]bool
	said   map[string]bool // uid/rv/instance -> answered Gone
	asked  int
}

func newTruth(t *testing.T) *truth {
	tr := &truth{gone: map[string]bool{}, said: map[string]bool{}}
	tr.Server, tr.caFile = fakecloud.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/verify/"), "/")
		if len(parts) != 3 {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
		tr.mu.Lock()
		gone := tr.gone[parts[2]]
		tr.asked++
		if gone {
			tr.said[strings.Join(parts, "/")] = true
		}
		tr.mu.Unlock()
		// It answers like a cloud API: JSON, a JSON error body with its 404.
		w.Header().Set("Content-Type", "application/json")
		if gone {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"NotFound","message":"no such instance"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"state":"available"}`))
	}))
	return tr
}

func (tr *truth) set(instance string, gone bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.gone[instance] = gone
}

// flip makes an instance that exists go, and one that is gone come back.
func (tr *truth) flip(instance string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.gone[instance] = !tr.gone[instance]
}

func (tr *truth) saidGone(uid types.UID, rv, instance string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.said[string(uid)+"/"+rv+"/"+instance]
}

// chaosRun is one chaos run: its namespace, its provider, its policy, the objects the
// actors pick from, the watch that sees every write, and what the actors did.
type chaosRun struct {
	seed   uint64
	ns     string
	kube   kubernetes.Interface
	cms    typedcorev1.ConfigMapInterface
	truth  *truth
	policy string
	names  []string
	watch  *chaosWatch
	counts chaosCounts
	// audits are the audit logs of the removers, one each.
	audits []string
}

// setUpChaos makes the world of a chaos run: half the instances gone, a policy whose
// provider asks the truth, a watch started before the first object, a live object the
// provider keeps being checked against, and the objects, each stuck on the finalizer
// under test and some of the others.
func setUpChaos(t *testing.T, seed uint64) *chaosRun {
	ns := cp.Namespace(t)
	kube := cp.Kube(t)
	run := &chaosRun{seed: seed, ns: ns, kube: kube, cms: kube.CoreV1().ConfigMaps(ns), truth: newTruth(t)}
	for i := range chaosInstances {
		run.truth.set(fmt.Sprintf("i-%02d", i), i%2 == 0)
	}
	run.policy = cli.WritePolicy(t, "", fmt.Sprintf(`- name: chaos
  finalizers: [%s]
  resources: [configmaps]
  rateLimit: {qps: 1000, burst: 1000}
  verify:
    http:
      url: "%s/verify/{.metadata.uid}/{.metadata.resourceVersion}/{.metadata.annotations.instance}"
      tls: {caFile: %q}
      timeout: 5s
`, chaosFinalizer, run.truth.URL, run.truth.caFile))

	// The watch starts before the first object: it sees every write.
	run.watch = watchConfigMaps(t, run.cms)

	// A live object keeps the rule's provider checked against something that exists.
	if _, err := run.cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "control", Finalizers: []string{chaosFinalizer},
		Annotations: map[string]string{"instance": "control-live"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = run.cms.Patch(context.Background(), "control", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	rng := rand.New(rand.NewPCG(seed, 0))
	run.names = make([]string, chaosObjects)
	for i := range run.names {
		run.names[i] = fmt.Sprintf("obj-%02d", i)
		run.create(rng, run.names[i])
	}
	t.Cleanup(func() {
		for _, name := range run.names {
			_, _ = run.cms.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
	return run
}

// create makes a namesake: an object called name, stuck on the finalizer under test and
// some of the others in a random order, pointing at a random instance.
func (r *chaosRun) create(rng *rand.Rand, name string) {
	finalizers := []string{chaosFinalizer}
	for _, e := range chaosExtras {
		if rng.IntN(2) == 0 {
			finalizers = append(finalizers, e)
		}
	}
	rng.Shuffle(len(finalizers), func(i, j int) { finalizers[i], finalizers[j] = finalizers[j], finalizers[i] })
	_, err := r.cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers,
		Annotations: map[string]string{"instance": fmt.Sprintf("i-%02d", rng.IntN(chaosInstances))}}}, metav1.CreateOptions{})
	if err == nil {
		_ = r.cms.Delete(context.Background(), name, metav1.DeleteOptions{})
		r.counts.op("create a namesake")
	}
}

// chaosWatch keeps every event of a watch of the run's configmaps.
type chaosWatch struct {
	mu     sync.Mutex
	events []watch.Event
	done   chan error
	stop   chan struct{}
}

// watchConfigMaps watches cms from the resourceVersion of a list made now.
func watchConfigMaps(t *testing.T, cms typedcorev1.ConfigMapInterface) *chaosWatch {
	start, err := cms.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(context.Background(), metav1.ListOptions{ResourceVersion: start.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	cw := &chaosWatch{done: make(chan error, 1), stop: make(chan struct{})}
	go func() {
		defer w.Stop()
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					cw.done <- errors.New("the watch ended early")
					return
				}
				if ev.Type == watch.Error {
					cw.done <- fmt.Errorf("the watch failed: %w", apierrors.FromObject(ev.Object))
					return
				}
				cw.mu.Lock()
				cw.events = append(cw.events, ev)
				cw.mu.Unlock()
			case <-cw.stop:
				cw.done <- nil
				return
			}
		}
	}()
	return cw
}

// finish creates the marker, waits (up to 10 s) for the watch to show it, so that the
// last writes reach the watch, stops the watch and returns every event it saw.
func (cw *chaosWatch) finish(t *testing.T, cms typedcorev1.ConfigMapInterface) []watch.Event {
	marker, err := cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: chaosMarker}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for waited := 0; waited < 100; waited++ {
		time.Sleep(100 * time.Millisecond)
		cw.mu.Lock()
		seen := slices.ContainsFunc(cw.events, func(ev watch.Event) bool {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			return ok && cm.UID == marker.UID
		})
		cw.mu.Unlock()
		if seen {
			break
		}
	}
	close(cw.stop)
	if err := <-cw.done; err != nil {
		// The watch goroutine is done: events is the test's alone from here.
		t.Fatalf("the run cannot be judged: %v", err)
	}
	return cw.events
}
