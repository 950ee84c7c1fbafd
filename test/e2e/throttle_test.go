package e2e

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// TestAThrottledAPIServerIsWaitedFor: the API server answers 429 with Retry-After, as API
// Priority and Fairness does when the plugin's priority level is busy, to a third of the
// requests. Every command waits as told and retries: the scan finds exactly what it finds
// unthrottled, the doctor names the same causes, and a removal goes through once.
func TestAThrottledAPIServerIsWaitedFor(t *testing.T) {
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
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "db", Finalizers: []string{fin}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
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
	scan := runCmd(t, bin, env, "scan", "-o", "name")
	doctor := runCmd(t, bin, env, "doctor", "-o", "json")
	if scan.code != 0 || doctor.code != 0 {
		t.Fatalf("unthrottled: scan %d, doctor %d\n%s%s", scan.code, doctor.code, scan.stderr, doctor.stderr)
	}

	p.Throttle(3)
	throttledScan := runCmd(t, bin, env, "scan", "-o", "name")
	if throttledScan.code != 0 || throttledScan.stdout != scan.stdout {
		t.Errorf("throttled scan: exit %d\n%s\nwant\n%s\n%s", throttledScan.code, throttledScan.stdout, scan.stdout, throttledScan.stderr)
	}
	throttledDoctor := runCmd(t, bin, env, "doctor", "-o", "json")
	if throttledDoctor.code != 0 || !slices.Equal(causes(throttledDoctor.stdout), causes(doctor.stdout)) {
		t.Errorf("throttled doctor: exit %d, causes %v, want %v\n%s", throttledDoctor.code, causes(throttledDoctor.stdout), causes(doctor.stdout), throttledDoctor.stderr)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	rm := runCmd(t, bin, env, "remove", "configmap/db", "-n", ns.Name, "--finalizer", fin, "--force-unverified", "--reason", "throttle test", "--yes", "--audit-log", audit)
	if rm.code != 0 {
		t.Errorf("throttled remove: exit %d\n%s%s", rm.code, rm.stdout, rm.stderr)
	}
	if _, err := cms.Get(ctx, "db", metav1.GetOptions{}); err == nil {
		t.Errorf("configmap/db is still there after a throttled removal")
	}
	if p.Throttled() < 10 {
		t.Errorf("only %d requests were throttled; the test throttled too little to show anything", p.Throttled())
	}
	for _, r := range []result{throttledScan, throttledDoctor, rm} {
		if strings.Contains(r.stderr, "TooManyRequests") || strings.Contains(r.stderr, "Too many requests") {
			t.Errorf("a 429 reached the user instead of being retried:\n%s", r.stderr)
		}
	}
	t.Logf("%d requests answered 429 and retried", p.Throttled())
}
