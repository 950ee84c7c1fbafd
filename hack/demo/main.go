// Command demo starts a local control plane with kube-controller-manager, seeds it with
// objects stuck in Terminating, and prints how to point kubectl at it.
//
//	go run ./hack/demo up   [--dir .demo]
//	go run ./hack/demo down [--dir .demo]
//
// capture runs the demo's commands on a fresh demo cluster and writes their real output,
// as text and as images, into docs/demo and the README; with --check it compares instead
// (make docs, make verify):
//
//	go run ./hack/demo capture [--out docs/demo] [--readme README.md] [--check]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

func main() {
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	dir := fs.String("dir", ".demo", "Folder for the demo cluster's state, kubeconfig and logs.")
	out := fs.String("out", "docs/demo", "capture: the folder of the captures.")
	readme := fs.String("readme", "README.md", "capture: the README that shows some of them.")
	check := fs.Bool("check", false, "capture: compare with the committed captures instead of writing them.")
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: demo up|down [--dir DIR] | capture [--out DIR] [--readme FILE] [--check]")
		os.Exit(2)
	}
	_ = fs.Parse(os.Args[2:])
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fail(err)
	}
	switch os.Args[1] {
	case "up":
		fail(up(abs))
	case "down":
		fail(down(abs))
	case "capture":
		fail(capture(*out, *readme, *check))
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q: want up, down or capture\n", os.Args[1])
		os.Exit(2)
	}
}

func fail(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

func up(dir string) error {
	if err := down(dir); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Dir:         dir,
		Controllers: controlplane.DefaultControllers,
		Detached:    true,
		Log:         os.Stderr,
	})
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.Rename(cp.AdminKubeconfig, kubeconfig); err != nil {
		return err
	}
	s, err := seed.New(cp.Config, "")
	if err != nil {
		return err
	}
	s.Log = os.Stderr
	if _, err := s.All(ctx); err != nil {
		return fmt.Errorf("seeding: %w (logs in %s)", err, dir)
	}
	kubectl := filepath.Join(cp.BinDir, "kubectl")
	fmt.Printf(`
The demo cluster runs (etcd, kube-apiserver, kube-controller-manager); logs are in %[1]s.

  export KUBECONFIG=%[2]s
  export PATH=%[3]s:$PWD/bin:$PATH      # kubectl v1.36.3 and kubectl-finalize

Try:
  kubectl get namespaces                          # two of them are Terminating
  kubectl get databases,pvc,deploy,cm -A          # stuck objects among healthy ones
  kubectl finalize scan                           # every stuck object, longest first
  kubectl finalize scan -o wide
  kubectl finalize scan -o json | jq '.items[].target.name'
  kubectl finalize doctor                         # why, grouped by root cause
  kubectl finalize doctor ns/orphaned-operator    # the chain behind one namespace
  kubectl finalize doctor pvc/data -n storage

Stop it with: make demo-down
`, dir, kubeconfig, filepath.Dir(kubectl))
	return nil
}

func down(dir string) error {
	if err := controlplane.StopDir(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}
