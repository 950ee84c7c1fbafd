package seed

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Profile is the shape of a cluster for benchmarks: how many objects of what kinds, how
// many custom resource types, and how many stuck.
type Profile struct {
	// Objects is the number of objects created (namespaces and CRDs not counted).
	Objects int
	// CRDs is the number of custom resource types; with the types every cluster
	// serves, the cluster then has about CRDs+55 listable types.
	CRDs int
	// StuckEvery: one object in StuckEvery carries a finalizer and is deleted.
	StuckEvery int
	// PerNamespace is the number of objects per namespace.
	PerNamespace int
	// MinCRBytes and MaxCRBytes bound the payload of custom resources, drawn
	// log-uniformly. Zero means 1 KiB to 50 KiB.
	MinCRBytes, MaxCRBytes int
	// Workers create objects in parallel.
	Workers int
	// Seed makes the cluster the same from run to run.
	Seed uint64
}

// DefaultProfile is the cluster of `make bench`: 100,000 objects over about 300 types
// (250 of them custom), 0.5% stuck.
var DefaultProfile = Profile{Objects: 100_000, CRDs: 250, StuckEvery: 200, PerNamespace: 1000, Workers: 32, Seed: 1}

// ScaleStats is what seeding made.
type ScaleStats struct {
	Objects, Stuck, Namespaces, CRDs int
	// Bytes is the sum of the payloads written.
	Bytes    int64
	Duration time.Duration
}

// The mix of a profile, in parts per hundred: the kinds that dominate real clusters.
const (
	mixPods       = 20
	mixConfigMaps = 20
	mixSecrets    = 10
	mixEvents     = 25
	// the rest (25) are custom resources
)

// BenchFinalizer is the finalizer of the stuck objects of a scale profile.
const BenchFinalizer = "bench.kubectl-finalize.io/hold"

// Scale seeds cfg's cluster with p. Core objects are sent as protobuf, custom resources as
// JSON, by p.Workers in parallel, without client-side rate limiting.
func Scale(ctx context.Context, cfg *rest.Config, p Profile) (ScaleStats, error) {
	began := time.Now()
	if p.PerNamespace == 0 {
		p.PerNamespace = 1000
	}
	if p.Workers == 0 {
		p.Workers = 32
	}
	if p.MinCRBytes == 0 {
		p.MinCRBytes, p.MaxCRBytes = 1<<10, 50<<10
	}
	fast := rest.CopyConfig(cfg)
	fast.QPS, fast.Burst = -1, 0
	proto := rest.CopyConfig(fast)
	proto.ContentType = runtime.ContentTypeProtobuf
	proto.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(proto)
	if err != nil {
		return ScaleStats{}, err
	}
	dyn, err := dynamic.NewForConfig(fast)
	if err != nil {
		return ScaleStats{}, err
	}
	s := &Seeder{Kube: kube, Dynamic: dyn}
	st := ScaleStats{CRDs: p.CRDs, Namespaces: (p.Objects + p.PerNamespace - 1) / p.PerNamespace}

	crds := make([]CRD, p.CRDs)
	for i := range crds {
		crds[i] = CRD{Group: fmt.Sprintf("g%03d.bench.kubectl-finalize.io", i), Kind: fmt.Sprintf("Widget%03d", i),
			Plural: fmt.Sprintf("widget%03ds", i), Singular: fmt.Sprintf("widget%03d", i), Versions: []string{"v1"}}
	}
	if err := parallel(ctx, min(p.Workers, 16), len(crds), func(i int) error { return s.EnsureCRD(ctx, crds[i]) }); err != nil {
		return st, err
	}
	if err := parallel(ctx, p.Workers, st.Namespaces, func(i int) error {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%04d", i)}}, metav1.CreateOptions{})
		return ignoreExists(err)
	}); err != nil {
		return st, err
	}

	var bytes, stuck atomic.Int64
	err = parallel(ctx, p.Workers, p.Objects, func(i int) error {
		rng := rand.New(rand.NewPCG(p.Seed, uint64(i)))
		ns := fmt.Sprintf("bench-%04d", i/p.PerNamespace)
		name := fmt.Sprintf("o-%07d", i)
		meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/name": fmt.Sprintf("app-%d", i%97)}}
		isStuck := p.StuckEvery > 0 && i%p.StuckEvery == 0
		if isStuck {
			meta.Finalizers = []string{BenchFinalizer}
		}
		create := metav1.CreateOptions{FieldManager: "bench-operator"}
		var del func() error
		switch slot := i % 100; {
		case slot < mixPods:
			pod := &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{
				NodeName:   fmt.Sprintf("node-%03d", i%300),
				Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1", Args: []string{"--port=8080", "--log-level=info"}, Env: []corev1.EnvVar{{Name: "MODE", Value: "bench"}}}},
			}}
			if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, create); err != nil {
				return err
			}
			bytes.Add(int64(pod.Size()))
			del = func() error {
				return kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			}
		case slot < mixPods+mixConfigMaps:
			cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"config.yaml": payload(rng, 512, 16<<10)}}
			if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, create); err != nil {
				return err
			}
			bytes.Add(int64(cm.Size()))
			del = func() error { return kube.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}) }
		case slot < mixPods+mixConfigMaps+mixSecrets:
			sec := &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"token": []byte(payload(rng, 256, 4<<10))}}
			if _, err := kube.CoreV1().Secrets(ns).Create(ctx, sec, create); err != nil {
				return err
			}
			bytes.Add(int64(sec.Size()))
			del = func() error { return kube.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{}) }
		case slot < mixPods+mixConfigMaps+mixSecrets+mixEvents:
			now := metav1.Now()
			ev := &corev1.Event{ObjectMeta: meta, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("o-%07d", i-i%100)},
				Reason: "Pulled", Message: "Successfully pulled image registry.example.com/app:v1 in 1.2s", Type: corev1.EventTypeNormal,
				Source: corev1.EventSource{Component: "kubelet", Host: "node-001"}, FirstTimestamp: now, LastTimestamp: now, Count: 1}
			if _, err := kube.CoreV1().Events(ns).Create(ctx, ev, create); err != nil {
				return err
			}
			bytes.Add(int64(ev.Size()))
			del = func() error { return kube.CoreV1().Events(ns).Delete(ctx, name, metav1.DeleteOptions{}) }
		default:
			crd := crds[rng.IntN(len(crds))]
			spec := payload(rng, p.MinCRBytes, p.MaxCRBytes)
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": crd.Group + "/v1", "kind": crd.Kind,
				"spec": map[string]any{"blob": spec, "region": "eu-west-1"},
			}}
			u.SetName(name)
			u.SetNamespace(ns)
			u.SetLabels(meta.Labels)
			u.SetFinalizers(meta.Finalizers)
			r := dyn.Resource(crd.GVR()).Namespace(ns)
			if _, err := r.Create(ctx, u, create); err != nil {
				return err
			}
			bytes.Add(int64(len(spec)))
			del = func() error { return r.Delete(ctx, name, metav1.DeleteOptions{}) }
		}
		if isStuck {
			stuck.Add(1)
			return del()
		}
		return nil
	})
	st.Objects, st.Stuck, st.Bytes, st.Duration = p.Objects, int(stuck.Load()), bytes.Load(), time.Since(began)
	return st, err
}

// payload is a printable string of a length drawn log-uniformly in [lo, hi).
func payload(rng *rand.Rand, lo, hi int) string {
	n := int(math.Exp(math.Log(float64(lo)) + rng.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b strings.Builder
	b.Grow(n)
	for range n {
		b.WriteByte(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, workers, n int, f func(int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					cancel(fmt.Errorf("object %d: %w", i, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
