// Package unreadable tests what the scan, the doctor and remove do with an object the API
// server cannot read: bytes in etcd it cannot decode, written straight into etcd.
package unreadable

import (
	"testing"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	opts := controlplane.APIServer()
	opts.APIServerFlags = map[string]string{"feature-gates": "AllowUnsafeMalformedObjectDeletion=true"}
	controlplane.Main(m, opts, &cp)
}
