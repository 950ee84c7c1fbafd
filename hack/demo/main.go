// Command demo starts a local control plane with kube-controller-manager, seeds it with
// objects stuck in Terminating, starts a demo cloud (an HTTPS API on loopback that knows
// which of the demo's databases still exist), writes a policy whose rule asks that cloud,
// and prints how to point kubectl at it all.
//
//	go run ./hack/demo up   [--dir .demo]
//	go run ./hack/demo down [--dir .demo]
//
// capture runs the demo's commands on a fresh demo cluster and writes their real output,
// as text and as images, into docs/demo and the README; with --check it compares instead
// (make docs, make verify). Either way it then starts the demo cloud, writes the demo
// policy and runs the Try list's commands that use it, as printed, checking what each
// removed:
//
//	go run ./hack/demo capture [--out docs/demo] [--readme README.md] [--check]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/test/env"
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
		fail(up(abs, os.Stdout))
	case "cloud": // the detached demo cloud that up starts
		fail(env.ServeCloud(abs))
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

func up(dir string, out io.Writer) error {
	if err := down(dir); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := env.Start(ctx, env.Options{Dir: dir, Detached: true, Log: os.Stderr})
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.Rename(e.AdminKubeconfig, kubeconfig); err != nil {
		return err
	}
	printTry(out, dir, kubeconfig, e.BinDir, e.Policy, e.CloudURL, e.Seeder.DatabaseFinalizer())
	return nil
}

// printTry prints how to point kubectl at the demo, and what to try. Every command of
// the Try list works as printed: capture --check runs the ones that write.
func printTry(out io.Writer, dir, kubeconfig, binDir, policy, url, finalizer string) {
	fmt.Fprintf(out, `
The demo cluster runs (etcd, kube-apiserver, kube-controller-manager); logs are in %[1]s.
The demo cloud at %[5]s still has the databases live-db, orders-db, billing-db and
analytics-db; reports-2023-db and reports-2024-db are deleted. Policy %[4]s
lets kubectl-finalize remove a database's finalizer once that cloud says it is gone.

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
  # The demo cloud verifies before anything is removed:
  kubectl finalize reconcile --once --dry-run --policy %[4]s   # asks the cloud, writes nothing
  kubectl finalize remove database/reports-2023-db -n reporting --policy %[4]s \
    --finalizer %[6]s --yes --audit-log %[7]s
  kubectl finalize reconcile --once --policy %[4]s --audit-log %[7]s   # orders-db stays: it exists

Stop it with: make demo-down
`, dir, kubeconfig, binDir, policy, url, finalizer, filepath.Join(dir, "audit.jsonl"))
}

func down(dir string) error {
	if err := env.Stop(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}
