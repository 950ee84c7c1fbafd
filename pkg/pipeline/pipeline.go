// Package pipeline is the one path from a cluster to its stuck objects, shared by every
// command: scan (pkg/scan), the owner of every finalizer (pkg/owner) and, for doctor,
// remove and reconcile, the cause of every stuck object (pkg/doctor). Clients go in,
// results come out, progress goes through scan.Options.Progress.
package pipeline

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/client"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/doctor"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/owner"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/remove/plan"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/scan"
)

// Scan finds the stuck objects and names the owner of each of their finalizers. Ages are
// measured by opts.Clock, and without one by the API server's clock, measured now
// (plan.NewServerClock): the scan's Result carries it for what follows.
func Scan(ctx context.Context, c *client.Clients, opts scan.Options) (*scan.Result, error) {
	if opts.Clock == nil {
		opts.Clock = plan.NewServerClock(ctx, c.Kube)
	}
	s := &scan.Scanner{Discovery: c.Discovery, Metadata: c.Metadata, Kube: c.Kube}
	res, err := s.Scan(ctx, opts)
	if err != nil {
		return nil, err
	}
	owner.NewResolver(owner.Builtin(), res.Groups).Annotate(res.Objects)
	return res, nil
}

// Diagnose scans with the index the doctor needs, names the owners, and diagnoses every
// stuck object. The reads the doctor could not make are in Report.Warnings.
//
// An object's cause does not depend on how it was asked for (one answer per object):
// the scan reads the whole cluster whatever opts narrow, every stuck object is
// diagnosed from it, and the Report keeps the objects opts keep. Only when a type cannot
// be listed in every namespace (RBAC grants it in the namespaces asked for alone) are the
// causes measured from those namespaces, and a warning says so.
func Diagnose(ctx context.Context, c *client.Clients, opts scan.Options, d doctor.Options) (*doctor.Report, error) {
	opts.Index = true
	d.ChunkSize = opts.ChunkSize
	doc := &doctor.Doctor{Kube: c.Kube, Dynamic: c.Dynamic, Options: d}
	if !opts.Narrows() {
		res, err := Scan(ctx, c, opts)
		if err != nil {
			return nil, err
		}
		return doc.Diagnose(ctx, res)
	}
	res, err := Scan(ctx, c, opts.Wide())
	var narrow *scan.Result
	if err == nil {
		if narrow, err = res.Narrow(opts); err != nil {
			return nil, err
		}
	}
	if opts.NamespaceLimited() && ctx.Err() == nil && (err != nil || forbidden(narrow) != "" && readableThere(ctx, c, narrow, opts.NamespaceList())) {
		var why string
		switch {
		case err == nil:
			why = forbidden(narrow) + " may not be listed in every namespace"
		case apierrors.IsForbidden(err):
			why = "no type may be listed in every namespace"
		default:
			why = fmt.Sprintf("the scan of every namespace failed (%v)", err)
		}
		if res, err = Scan(ctx, c, opts); err != nil {
			return nil, err
		}
		rep, err := doc.Diagnose(ctx, res)
		if err != nil {
			return nil, err
		}
		rep.Warnings = append([]string{fmt.Sprintf("%s: the causes are measured from namespace %s alone, and may differ from those a cluster-wide diagnosis finds", why, strings.Join(res.Namespaces, ", "))}, rep.Warnings...)
		return rep, nil
	}
	if err != nil {
		return nil, err
	}
	rep, err := doc.Diagnose(ctx, res)
	if err != nil {
		return nil, err
	}
	return rep.Narrow(narrow), nil
}

// readableThere reports whether a type res could not list cluster-wide for lack of
// permission may be listed in one of namespaces: only then does reading those namespaces
// alone see more than the wide scan did (a user of the view ClusterRole may list Secrets
// nowhere, and keeps the causes measured cluster-wide).
func readableThere(ctx context.Context, c *client.Clients, res *scan.Result, namespaces []string) bool {
	for _, in := range res.Incomplete {
		if in.Reason != finalizev1alpha1.ReasonForbidden || in.Resource == "" {
			continue
		}
		gv, err := schema.ParseGroupVersion(in.GroupVersion)
		if err != nil {
			continue
		}
		for _, ns := range namespaces {
			if _, err := c.Metadata.Resource(gv.WithResource(in.Resource)).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
				return true
			}
		}
	}
	return false
}

// forbidden names the types res could not list for lack of permission, or "".
func forbidden(res *scan.Result) string {
	var out []string
	for _, in := range res.Incomplete {
		if in.Reason != finalizev1alpha1.ReasonForbidden || in.Resource == "" {
			continue
		}
		gr := in.Resource
		if gv, err := schema.ParseGroupVersion(in.GroupVersion); err == nil && gv.Group != "" {
			gr += "." + gv.Group
		}
		out = append(out, gr)
	}
	if len(out) > 3 {
		return fmt.Sprintf("%s and %d other types", strings.Join(out[:3], ", "), len(out)-3)
	}
	return strings.Join(out, ", ")
}
