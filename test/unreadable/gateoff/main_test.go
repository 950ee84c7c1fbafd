// Package gateoff tests what the scan, the doctor and remove do with an object the API
// server cannot read on an API server without the AllowUnsafeMalformedObjectDeletion
// feature gate (its default), which encrypts Secrets at rest: a Secret whose encryption
// key is no longer in its encryption configuration.
package gateoff

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

var cp *controlplane.ControlPlane

// encryption encrypts Secrets with one aescbc key, "current", and reads nothing else: a
// Secret written with any other key (one rotated away) cannot be read.
const encryption = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - name: current
        secret: c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/IDEyMzQ= # decrypt_test.go's currentKey
`

func TestMain(m *testing.M) {
	controlplane.Main(m, controlplane.APIServer(), &cp, func(dir string, opts *controlplane.Options) error {
		path := filepath.Join(dir, "encryption.yaml")
		if err := os.WriteFile(path, []byte(encryption), 0o600); err != nil {
			return err
		}
		opts.APIServerFlags = map[string]string{"encryption-provider-config": path}
		return nil
	})
}
