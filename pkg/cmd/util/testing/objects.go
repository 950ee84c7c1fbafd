package testing

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/cmd/util"
)

// StuckConfigMap is a configmap deleted some time ago that still has finalizers.
func StuckConfigMap(ns, name string, deletedAgo time.Duration, finalizers ...string) *corev1.ConfigMap {
	ts := metav1.NewTime(time.Now().Add(-deletedAgo).Truncate(time.Second))
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
		ResourceVersion: "1", DeletionTimestamp: &ts, Finalizers: finalizers}}
}

// Namespace is a live namespace.
func Namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
}

// Result is what one run of a command printed and its exit code.
type Result struct {
	Stdout, Stderr string
	Code           int
	Err            error
}

// Run runs cmd with args the way main does, and renders its error the same way.
func Run(newCmd func(util.Factory, genericiooptions.IOStreams) *cobra.Command, f util.Factory, stdin string, args ...string) Result {
	streams, in, out, errOut := genericiooptions.NewTestIOStreams()
	in.WriteString(stdin)
	cmd := newCmd(f, streams)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	err := cmd.ExecuteContext(context.Background())
	util.PrintError(errOut, err)
	return Result{Stdout: out.String(), Stderr: errOut.String(), Code: util.ExitCode(err), Err: err}
}

// ListRecorder is a metadata client that remembers the options of every list.
type ListRecorder struct {
	metadata.Interface
	mu    sync.Mutex
	lists []metav1.ListOptions
}

// Lists are the options of every list sent so far.
func (r *ListRecorder) Lists() []metav1.ListOptions {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lists)
}

// Limits are the page sizes of every list sent so far.
func (r *ListRecorder) Limits() []int64 {
	var out []int64
	for _, l := range r.Lists() {
		out = append(out, l.Limit)
	}
	return out
}

func (r *ListRecorder) record(opts metav1.ListOptions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists = append(r.lists, opts)
}

// Resource implements metadata.Interface.
func (r *ListRecorder) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return &recordingResource{Getter: r.Interface.Resource(gvr), r: r}
}

type recordingResource struct {
	metadata.Getter
	r *ListRecorder
}

func (c *recordingResource) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	c.r.record(opts)
	return c.Getter.List(ctx, opts)
}

func (c *recordingResource) Namespace(ns string) metadata.ResourceInterface {
	return &recordingNamespaced{ResourceInterface: c.Getter.Namespace(ns), r: c.r}
}

type recordingNamespaced struct {
	metadata.ResourceInterface
	r *ListRecorder
}

func (c *recordingNamespaced) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	c.r.record(opts)
	return c.ResourceInterface.List(ctx, opts)
}
