// Package env is the public test environment: a control plane with
// kube-controller-manager, seeded with every scenario of test/seed, and the cloud its
// databases live in (test/fakecloud over HTTPS, with a CA of test/pki), with a policy
// whose rule asks that cloud. It is what `make demo` runs and what the demo's captures
// in the docs are taken from.
//
// Code outside test/ (hack/demo) uses this package and no other of test/: its exported
// names are kept stable for it, while the packages it is built on change with the tests
// that use them.
package env

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// Options says where an Env keeps its files and whether it outlives its process.
type Options struct {
	// Dir holds the control plane's state, kubeconfigs and logs, the cloud's files and
	// the policy.
	Dir string
	// Detached: the control plane and the cloud outlive this process, and Stop(Dir)
	// stops them. The cloud is this program run again as "PROGRAM cloud --dir DIR",
	// which must call ServeCloud(DIR).
	Detached bool
	// Log, if set, receives the progress of the start and the seeding.
	Log io.Writer
}

// Env is a running test environment.
type Env struct {
	*controlplane.ControlPlane
	// Seeder made the scenarios, and names what they are made of (DatabaseFinalizer).
	Seeder *seed.Seeder
	// CloudURL is the cloud's base URL; Policy is the file of the policy that asks it.
	CloudURL, Policy string
}

// Start starts the control plane, seeds every scenario, starts the cloud and writes the
// policy. An attached Env that fails to start is stopped; a detached one is left for
// Stop(opts.Dir), with its logs.
func Start(ctx context.Context, opts Options) (*Env, error) {
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Dir:         opts.Dir,
		Controllers: controlplane.DefaultControllers,
		Detached:    opts.Detached,
		Log:         opts.Log,
	})
	if err != nil {
		return nil, err
	}
	e := &Env{ControlPlane: cp}
	if err := e.start(ctx, opts); err != nil {
		if !opts.Detached {
			e.Stop()
		}
		return nil, fmt.Errorf("%w (logs in %s)", err, cp.Dir)
	}
	return e, nil
}

func (e *Env) start(ctx context.Context, opts Options) error {
	var err error
	if e.Seeder, err = seed.New(e.Config, ""); err != nil {
		return err
	}
	e.Seeder.Log = opts.Log
	if _, err := e.Seeder.All(ctx); err != nil {
		return fmt.Errorf("seeding: %w", err)
	}
	caFile := ""
	if e.CloudURL, caFile, err = startCloud(e.Dir, opts.Detached); err != nil {
		return err
	}
	e.Policy = filepath.Join(e.Dir, "policy.yaml")
	return os.WriteFile(e.Policy, []byte(policyYAML(e.Seeder, e.CloudURL, caFile)), 0o644)
}

// Stop stops an attached Env: the cloud, then the control plane.
func (e *Env) Stop() {
	_ = stopCloud(e.Dir)
	e.ControlPlane.Stop()
}

// Stop stops the detached Env of dir, if one runs there.
func Stop(dir string) error {
	return errors.Join(stopCloud(dir), controlplane.StopDir(dir))
}

// policyYAML is the environment's policy: the database operator's finalizer may go once
// the cloud says the database's instance is gone.
func policyYAML(s *seed.Seeder, url, caFile string) string {
	return fmt.Sprintf(`# The demo's policy (docs/policy.md): a database's finalizer may be removed once the demo
# cloud, asked about the instance in the database's status, answers 404.
apiVersion: kubectl-finalize.github.io/v1alpha1
kind: Policy
# The demo's objects are seconds old; in a real cluster keep the default, 15m, so that a
# controller that is merely slow is left to finish.
minAge: 0s
rules:
- name: demo-databases
  finalizers: [%[1]q]
  resources: [%[2]q]
  verify:
    http:
      url: "%[3]s/instances/{.status.instanceID}"
      tls: {caFile: %[4]q}
  # The cloud's Gone answers are trusted only after it called live databases that carry
  # the finalizer Present: healthy/live-db is one.
  controls: {count: 3, requireLive: true}
`, s.DatabaseFinalizer(), s.DatabaseCRD().Name(), url, caFile)
}
