package util

import (
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/doctor"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Scan runs a scan with a progress line on a terminal, and names the owner of every
// finalizer. doctor, remove and reconcile scan through it too.
func Scan(ctx context.Context, f *Factory, errOut io.Writer, opts scan.Options) (*scan.Result, error) {
	dc, err := f.DiscoveryClient()
	if err != nil {
		return nil, err
	}
	mc, err := f.MetadataClient()
	if err != nil {
		return nil, err
	}
	kc, err := f.KubeClient()
	if err != nil {
		return nil, err
	}
	progress := NewProgress(errOut)
	opts.Progress = func(p scan.Progress) {
		progress.Update(fmt.Sprintf("scanning: %d/%d resource types, %d objects, %d stuck", p.TypesDone, p.TypesTotal, p.ObjectsSeen, p.Stuck), p.TypesDone == p.TypesTotal)
	}
	s := &scan.Scanner{Discovery: dc, Metadata: mc, Kube: kc}
	res, err := s.Scan(ctx, opts)
	progress.Done()
	if err != nil {
		return nil, err
	}
	owner.NewResolver(owner.Builtin(), res.Groups).Annotate(res.Objects)
	return res, nil
}

// IncompleteWarning warns on w about what could not be read and returns the error that
// makes the command exit with status 3, or nil when nothing is missing.
func IncompleteWarning(w io.Writer, incomplete []finalizev1alpha1.IncompleteResource) error {
	if len(incomplete) == 0 {
		return nil
	}
	fmt.Fprintf(w, "Warning: the scan is incomplete; objects of these types may be stuck too:\n")
	for _, in := range incomplete {
		what := in.GroupVersion
		if in.Resource != "" {
			what = schema.FromAPIVersionAndKind(in.GroupVersion, "").GroupVersion().WithResource(in.Resource).GroupResource().String()
		}
		fmt.Fprintf(w, "  %s: %s: %s\n", what, in.Reason, in.Message)
	}
	return IncompleteError(errors.New("the scan is incomplete"))
}

// ResolveType resolves a kubectl type argument (plural, singular, kind or short name,
// optionally with version and group) to its group and resource.
func ResolveType(mapper meta.RESTMapper, arg string) (schema.GroupResource, error) {
	fullySpecified, gr := schema.ParseResourceArg(arg)
	if fullySpecified != nil {
		if r, err := mapper.ResourceFor(*fullySpecified); err == nil {
			return r.GroupResource(), nil
		}
	}
	if r, err := mapper.ResourceFor(gr.WithVersion("")); err == nil {
		return r.GroupResource(), nil
	}
	gvk, gk := schema.ParseKindArg(arg)
	if gvk != nil {
		if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			return m.Resource.GroupResource(), nil
		}
	}
	if m, err := mapper.RESTMapping(gk); err == nil {
		return m.Resource.GroupResource(), nil
	}
	return schema.GroupResource{}, fmt.Errorf("the server doesn't have a resource type %q", arg)
}

// Diagnose scans with the index the doctor needs and diagnoses every stuck object. The
// reads the doctor could not do are warned about on errOut.
func Diagnose(ctx context.Context, f *Factory, errOut io.Writer, opts scan.Options) (*doctor.Report, error) {
	opts.Index = true
	res, err := Scan(ctx, f, errOut, opts)
	if err != nil {
		return nil, err
	}
	kube, err := f.KubeClient()
	if err != nil {
		return nil, err
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		return nil, err
	}
	rep := (&doctor.Doctor{Kube: kube, Dynamic: dyn}).Diagnose(ctx, res)
	for _, w := range rep.Warnings {
		fmt.Fprintf(errOut, "Warning: %s\n", w)
	}
	return rep, nil
}

// ResolveResource resolves a kubectl type argument to the resource a command works on:
// its preferred version, kind and scope.
func ResolveResource(mapper meta.RESTMapper, typ string) (scan.Resource, error) {
	gr, err := ResolveType(mapper, typ)
	if err != nil {
		return scan.Resource{}, err
	}
	gvr, err := mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		return scan.Resource{}, err
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return scan.Resource{}, err
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return scan.Resource{}, err
	}
	return scan.Resource{GroupVersionResource: gvr, Kind: gvk.Kind, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}, nil
}
