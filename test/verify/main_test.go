// Package verify tests verified removal (`remove --policy`) against a real control plane
// with real providers: an HTTPS server with its own CA, real child processes, the example
// exec provider of docs/examples, and the kubernetes provider in another namespace and a
// second kubeconfig context.
package verify

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

var (
	cp *controlplane.ControlPlane
	// exampleProvider is docs/examples/exec-provider, built.
	exampleProvider string
	// binary is kubectl-finalize, built for the tests that run it as a process of its
	// own: what main sets up (its streams, klog's output) is tested only there.
	binary string
)

// finalizer is the finalizer the policies of these tests remove.
const finalizer = "db.example.com/finalizer"

func TestMain(m *testing.M) {
	// The test binary is also an exec provider: the first argument says how it behaves.
	if os.Getenv("KF_TEST_PROVIDER") == "1" {
		os.Exit(testProvider(os.Args[1:]))
	}
	controlplane.Main(m, controlplane.APIServer(), &cp, buildExampleProvider, cli.BuildInto(&binary))
}

// buildExampleProvider builds docs/examples/exec-provider.
func buildExampleProvider(dir string, _ *controlplane.Options) error {
	exampleProvider = filepath.Join(dir, "exec-provider")
	return cli.GoBuild(exampleProvider, "../../docs/examples/exec-provider")
}

// testProvider answers a VerifyRequest as args[0] says.
func testProvider(args []string) int {
	var req finalizev1alpha1.VerifyRequest
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "reading the request:", err)
		return 9
	}
	respond := func(verdict finalizev1alpha1.Verdict) {
		_ = json.NewEncoder(os.Stdout).Encode(finalizev1alpha1.VerifyResponse{
			TypeMeta: metav1.TypeMeta{APIVersion: finalizev1alpha1.SchemeGroupVersion.String(), Kind: "VerifyResponse"},
			UID:      req.UID, ResourceVersion: req.ResourceVersion, Finalizer: req.Finalizer, Verdict: verdict,
			Evidence: fmt.Sprintf("argv %q, interactive %v", args, req.Interactive),
		})
	}
	switch args[0] {
	case "Gone", "Present", "Unknown":
		respond(finalizev1alpha1.Verdict(args[0]))
	case "exit":
		fmt.Fprintln(os.Stderr, "the cloud CLI failed: AccessDenied")
		respond(finalizev1alpha1.VerdictGone)
		return 2
	case "data":
		// What the program was given of a Secret's values.
		var obj struct {
			Data     map[string]string `json:"data"`
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(req.Object.Raw, &obj)
		// A value it got is named by its digest: the value itself, were the program to
		// print it, would show as REDACTED.
		for k, v := range obj.Data {
			if b, err := base64.StdEncoding.DecodeString(v); err == nil && v != "REDACTED" {
				sum := sha256.Sum256(b)
				obj.Data[k] = "sha256:" + hex.EncodeToString(sum[:6])
			}
		}
		_ = json.NewEncoder(os.Stdout).Encode(finalizev1alpha1.VerifyResponse{
			TypeMeta: metav1.TypeMeta{APIVersion: finalizev1alpha1.SchemeGroupVersion.String(), Kind: "VerifyResponse"},
			UID:      req.UID, ResourceVersion: req.ResourceVersion, Finalizer: req.Finalizer, Verdict: finalizev1alpha1.VerdictUnknown,
			Evidence: fmt.Sprintf("data %v, last-applied %s", obj.Data, obj.Metadata.Annotations["kubectl.kubernetes.io/last-applied-configuration"]),
		})
	case "echo":
		// A cloud CLI that fails having printed its whole environment, then the token it
		// was given in two writes, as a program that flushes part of a line does.
		for _, kv := range os.Environ() {
			fmt.Fprintln(os.Stderr, kv)
		}
		fmt.Fprintln(os.Stderr, "SERVICE_API_TOKEN="+os.Getenv("SERVICE_API_TOKEN"))
		token := os.Getenv("API_TOKEN")
		fmt.Fprint(os.Stderr, "403 Forbidden for the token "+token[:len(token)/2])
		time.Sleep(50 * time.Millisecond)
		fmt.Fprintln(os.Stderr, token[len(token)/2:])
		return 3
	case "curl-v":
		// curl -v -u svc:$API_PASSWORD, as a script calls an API that wants basic auth:
		// it prints the request's headers on stderr, the password inside the base64 of
		// user:password, then fails.
		auth := base64.StdEncoding.EncodeToString([]byte("svc:" + os.Getenv("API_PASSWORD")))
		fmt.Fprintf(os.Stderr, "> GET /v1/instances/i-1 HTTP/1.1\n> Host: api.example.com\n> Authorization: Basic %s\n< HTTP/1.1 503 Service Unavailable\n", auth)
		return 22
	case "evidence":
		// A program that answers with the token it was given in its evidence.
		_ = json.NewEncoder(os.Stdout).Encode(finalizev1alpha1.VerifyResponse{
			TypeMeta: metav1.TypeMeta{APIVersion: finalizev1alpha1.SchemeGroupVersion.String(), Kind: "VerifyResponse"},
			UID:      req.UID, ResourceVersion: req.ResourceVersion, Finalizer: req.Finalizer, Verdict: finalizev1alpha1.VerdictUnknown,
			Evidence: fmt.Sprintf("the API refused the token %s (and %s)", os.Getenv("API_TOKEN"), os.Getenv("SERVICE_API_TOKEN")),
		})
	case "garbage":
		fmt.Println("it's gone, trust me")
	case "twice":
		respond(finalizev1alpha1.VerdictGone)
		respond(finalizev1alpha1.VerdictGone)
	case "sleep":
		time.Sleep(time.Minute)
	case "orphan":
		child := exec.Command("sleep", "60")
		child.Stdout = os.Stdout
		_ = child.Start()
		respond(finalizev1alpha1.VerdictGone)
	case "cli":
		// A cloud CLI: "cli [--rm] [--id ID] [ID]". --rm deletes the record first, so
		// the record is gone. Each run appends its arguments to $KF_TEST_RAN.
		if f, err := os.OpenFile(os.Getenv("KF_TEST_RAN"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintf(f, "%q\n", args[1:])
			_ = f.Close()
		}
		fs := flag.NewFlagSet("cli", flag.ContinueOnError)
		rm := fs.Bool("rm", false, "delete the record first")
		id := fs.String("id", "", "the record")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		if *id == "" {
			*id = fs.Arg(0)
		}
		switch {
		case *rm:
			respond(finalizev1alpha1.VerdictGone)
		case strings.Contains(*id, "deleted"):
			respond(finalizev1alpha1.VerdictGone)
		default:
			respond(finalizev1alpha1.VerdictPresent)
		}
	}
	return 0
}

// stuckConfigMap creates a configmap with the test finalizer and annotations, and
// deletes it.
func stuckConfigMap(t *testing.T, ns, name string, annotations map[string]string) {
	t.Helper()
	fixture.StuckConfigMap(t, cp.Kube(t), ns, name, annotations, finalizer)
}

// configMap creates a live configmap with the test finalizer: a control for the rules.
func configMap(t *testing.T, ns, name string, annotations map[string]string) {
	t.Helper()
	fixture.HeldConfigMap(t, cp.Kube(t), ns, name, annotations, finalizer)
}

// finalizers are the finalizers a configmap has now, or nil when it is gone.
func finalizers(t *testing.T, ns, name string) []string {
	t.Helper()
	cm, err := cp.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return cm.Finalizers
}

// writePolicy writes a policy of rules into a file.
func writePolicy(t *testing.T, rules string) string { return cli.WritePolicy(t, "", rules) }
