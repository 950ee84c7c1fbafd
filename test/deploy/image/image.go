// Package image gives the deploy tests the image the CronJob and the Deployment run,
// loaded into the test node's runtime.
//
// STAND-IN: until the release image is built by the release tooling (ko, as
// .goreleaser.yaml does) against a locally built base, Release packs the static binary
// of ./cmd/kubectl-finalize with hack/image: user 65532:65532, the binary as entrypoint.
package image

import (
	"context"
	"sync"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

// Ref is the reference pods use for the image; it is present on the node, so pods need
// no pull (imagePullPolicy IfNotPresent or Never).
const Ref = "kubectl-finalize.test/kubectl-finalize:dev"

var (
	once sync.Once
	err  error
)

// Release builds the image once per test process and loads it into cp's node; it
// returns the reference pods use.
func Release(ctx context.Context, cp *controlplane.ControlPlane) (string, error) {
	once.Do(func() { err = cp.Node.GoImage(ctx, Ref, "./cmd/kubectl-finalize") })
	return Ref, err
}
