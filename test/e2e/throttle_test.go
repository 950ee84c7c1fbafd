package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/test/cli"
)

// TestABusyOrFailingAPIServerIsWaitedFor: the API server answers a third of the
// requests with 429 and Retry-After, as API Priority and Fairness does when the plugin's
// priority level is busy, or with 500, 503 or 504 without one, as it does when etcd
// fails or times out. Every command retries: the scan finds exactly what it finds
// undisturbed, the doctor names the same causes, and a removal goes through once.
func TestABusyOrFailingAPIServerIsWaitedFor(t *testing.T) {
	seedStuck(t)
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-throttled-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const fin = "e2e.example.com/throttled"
	cms := kube.CoreV1().ConfigMaps(ns.Name)
	failures := []struct {
		code       int
		retryAfter string
	}{{429, "1"}, {500, ""}, {503, ""}, {504, ""}}
	// Every object is written before any is deleted: a create after an earlier object's
	// deletion, in a later second, would be its writer active since that deletion began,
	// and that object's cause would differ from the others'.
	for _, f := range failures {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db-%d", f.code), Finalizers: []string{fin}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range failures {
		if err := cms.Delete(ctx, fmt.Sprintf("db-%d", f.code), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	p, kubeconfig := proxied(t)
	env := []string{"KUBECONFIG=" + kubeconfig}
	bin := filepath.Join(binDir, "kubectl-finalize")
	causes := func(out string) []string {
		var d finalizev1alpha1.Diagnosis
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("doctor -o json: %v\n%s", err, out)
		}
		var got []string
		for _, rc := range d.RootCauses {
			got = append(got, rc.Reason)
		}
		slices.Sort(got)
		return got
	}
	// Each removal takes one object out of what the scan sees: compare without them.
	others := func(out string) string {
		var keep []string
		for line := range strings.SplitSeq(out, "\n") {
			if !strings.HasPrefix(line, "configmap/db-") {
				keep = append(keep, line)
			}
		}
		return strings.Join(keep, "\n")
	}
	scan := runCmd(t, bin, env, "scan", "-o", "name")
	doctor := runCmd(t, bin, env, "doctor", "-o", "json")
	if scan.Code != 0 || doctor.Code != 0 {
		t.Fatalf("undisturbed: scan %d, doctor %d\n%s%s", scan.Code, doctor.Code, scan.Stderr, doctor.Stderr)
	}

	for _, f := range failures {
		t.Run(strconv.Itoa(f.code), func(t *testing.T) {
			p.Fail(3, f.code, f.retryAfter)
			defer p.Fail(0, 0, "")
			failedScan := runCmd(t, bin, env, "scan", "-o", "name")
			if failedScan.Code != 0 || others(failedScan.Stdout) != others(scan.Stdout) {
				t.Errorf("scan: exit %d\n%s\nwant\n%s\n%s", failedScan.Code, failedScan.Stdout, scan.Stdout, failedScan.Stderr)
			}
			failedDoctor := runCmd(t, bin, env, "doctor", "-o", "json")
			if failedDoctor.Code != 0 || !slices.Equal(causes(failedDoctor.Stdout), causes(doctor.Stdout)) {
				t.Errorf("doctor: exit %d, causes %v, want %v\n%s", failedDoctor.Code, causes(failedDoctor.Stdout), causes(doctor.Stdout), failedDoctor.Stderr)
			}
			name := fmt.Sprintf("db-%d", f.code)
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			rm := runCmd(t, bin, env, "remove", "configmap/"+name, "-n", ns.Name, "--finalizer", fin, "--force-unverified", "--reason", "throttle test", "--yes", "--audit-log", audit)
			if rm.Code != 0 {
				t.Errorf("remove: exit %d\n%s%s", rm.Code, rm.Stdout, rm.Stderr)
			}
			if _, err := cms.Get(ctx, name, metav1.GetOptions{}); err == nil {
				t.Errorf("configmap/%s is still there after the removal", name)
			}
			if b, _ := os.ReadFile(audit); strings.Count(string(b), `"stage":"Intent"`) != 1 || strings.Count(string(b), `"stage":"Complete"`) != 1 {
				t.Errorf("audit lines:\n%s", b)
			}
			if p.Throttled() < 10 {
				t.Errorf("only %d requests were answered %d; the test disturbed too little to show anything", p.Throttled(), f.code)
			}
			for _, r := range []cli.Result{failedScan, failedDoctor, rm} {
				if strings.Contains(r.Stderr, "Warning") || strings.Contains(r.Stderr, "error") || strings.Contains(r.Stderr, "Too many requests") ||
					strings.Contains(r.Stderr, "etcdserver") || strings.Contains(r.Stderr, "unable to handle") || strings.Contains(r.Stderr, "Timeout") {
					t.Errorf("a %d reached the user instead of being retried:\n%s", f.code, r.Stderr)
				}
			}
			t.Logf("%d requests answered %d (Retry-After %q) and retried", p.Throttled(), f.code, f.retryAfter)
		})
	}
}
