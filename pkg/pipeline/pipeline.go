// Package pipeline is the one path from a cluster to its stuck objects, shared by every
// command: scan (pkg/scan), the owner of every finalizer (pkg/owner) and, for doctor,
// remove and reconcile, the cause of every stuck object (pkg/doctor). Clients go in,
// results come out, progress goes through scan.Options.Progress.
package pipeline

import (
	"context"

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
func Diagnose(ctx context.Context, c *client.Clients, opts scan.Options, d doctor.Options) (*doctor.Report, error) {
	opts.Index = true
	res, err := Scan(ctx, c, opts)
	if err != nil {
		return nil, err
	}
	d.ChunkSize = opts.ChunkSize
	return (&doctor.Doctor{Kube: c.Kube, Dynamic: c.Dynamic, Options: d}).Diagnose(ctx, res)
}
