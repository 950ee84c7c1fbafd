package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// TestMain lets the test binary be the demo cloud that startCloud starts (it runs
// os.Executable with "cloud --dir DIR").
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "cloud" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestCloudOutlivesAndStops starts the cloud as make demo does, asks it about the demo's
// databases, deletes one of them in it, and stops it as make demo-down does. (The Try
// list's commands run against it in capture --check, make verify.)
func TestCloudOutlivesAndStops(t *testing.T) {
	dir := t.TempDir()
	url, caFile, err := startCloud(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stopCloud(dir) })
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	status := func(id string) int {
		t.Helper()
		resp, err := client.Get(url + "/instances/" + id)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for id, want := range map[string]int{
		seed.InstanceID("orders-db"): 200, seed.InstanceID("live-db"): 200,
		seed.InstanceID("reports-2023-db"): 404, seed.InstanceID("reports-2024-db"): 404,
	} {
		if got := status(id); got != want {
			t.Errorf("GET /instances/%s: %d, want %d", id, got, want)
		}
	}
	// The instances file is read at each request: a line deleted is a database deleted.
	instances := filepath.Join(dir, cloudDir, cloudInstance)
	b, _ := os.ReadFile(instances)
	if err := os.WriteFile(instances, bytes.ReplaceAll(b, []byte(seed.InstanceID("orders-db")+"\n"), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := status(seed.InstanceID("orders-db")); got != 404 {
		t.Errorf("orders-db deleted from the cloud: %d, want 404", got)
	}
	if err := stopCloud(dir); err != nil {
		t.Fatal(err)
	}
	if resp, err := client.Get(url + "/instances/x"); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("the cloud still answers after stopCloud: %s", resp.Status)
	}
	if err := stopCloud(dir); err != nil {
		t.Fatalf("stopping a stopped cloud: %v", err)
	}
}

// TestDemoPolicyIsValidWithoutWarnings: the policy make demo writes is the kind the
// docs recommend: HTTPS with a CA file, status fields only, live controls.
func TestDemoPolicyIsValidWithoutWarnings(t *testing.T) {
	s := &seed.Seeder{}
	spec, errs := policy.Decode([]byte(demoPolicy(s, "https://127.0.0.1:12345", "/demo/cloud/ca.pem")))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	p, errs, warnings := policy.Compile(spec)
	if len(errs) > 0 || len(warnings) > 0 {
		t.Fatalf("errors %v, warnings %v", errs.ToAggregate(), warnings)
	}
	if len(p.Rules) != 1 || p.Rules[0].Controls == 0 || !p.Rules[0].RequireLive {
		t.Fatalf("want one rule with live controls: %+v", p.Rules)
	}
}

// TestTryListNamesTheRealFiles: the printed commands name the policy and audit log in
// the demo's folder, and the three that use the policy come in the order they work.
func TestTryListNamesTheRealFiles(t *testing.T) {
	var out bytes.Buffer
	printTry(&out, "/d", "/d/kubeconfig", "/bins", "/d/policy.yaml", "https://127.0.0.1:1", "db.example/finalizer")
	var got []string
	for _, c := range tryCommands(out.String()) {
		if strings.Contains(c, "--policy") {
			got = append(got, c)
		}
	}
	want := []string{
		"kubectl finalize reconcile --once --dry-run --policy /d/policy.yaml",
		"kubectl finalize remove database/reports-2023-db -n reporting --policy /d/policy.yaml --finalizer db.example/finalizer --yes --audit-log /d/audit.jsonl",
		"kubectl finalize reconcile --once --policy /d/policy.yaml --audit-log /d/audit.jsonl",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the policy commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTryCommandsJoinsAndDropsComments(t *testing.T) {
	printed := "x\nTry:\n  kubectl a   # one\n  # a header\n  kubectl b \\\n    --c d\n\nStop it with: make demo-down\n"
	if got, want := tryCommands(printed), []string{"kubectl a", "kubectl b --c d"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestCheckTryCatchesADryRunThatWrites runs checkTry against a fake kubectl: a demo
// that behaves passes, one whose dry run removes a finalizer fails.
func TestCheckTryCatchesADryRunThatWrites(t *testing.T) {
	dir := t.TempDir()
	var printed bytes.Buffer
	printTry(&printed, dir, filepath.Join(dir, "kubeconfig"), "/bins", filepath.Join(dir, "policy.yaml"), "https://127.0.0.1:1", "db.example/finalizer")
	audit := filepath.Join(dir, "audit.jsonl")
	fake := func(dryRunWrites bool) kubectlFunc {
		dbs := []string{"analytics-db", "billing-db", "live-db", "orders-db", "reports-2023-db", "reports-2024-db"}
		drop := func(name string) {
			dbs = slices.DeleteFunc(dbs, func(s string) bool { return s == name })
			f, _ := os.OpenFile(audit, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			defer f.Close()
			_, _ = f.WriteString(`{"object":"` + name + `"}` + "\n")
		}
		return func(args ...string) (string, int, error) {
			line := strings.Join(args, " ")
			switch {
			case strings.HasPrefix(line, "get databases"):
				return strings.Join(dbs, "\n"), 0, nil
			case strings.Contains(line, "--dry-run"):
				if dryRunWrites {
					drop("reports-2024-db")
				}
				return "reports-2023-db WouldRemove 404 Not Found\nreports-2024-db WouldRemove\norders-db 200 OK Kept", 0, nil
			case strings.Contains(line, "remove"):
				drop("reports-2023-db")
				return "reports-2023-db: finalizer removed", 0, nil
			case strings.Contains(line, "reconcile"):
				drop("reports-2024-db")
				return "reports-2024-db Removed\norders-db Kept", 0, nil
			}
			return "", 1, nil
		}
	}
	if err := checkTry(printed.String(), fake(false)); err != nil {
		t.Fatalf("a demo that behaves: %v", err)
	}
	if err := os.Remove(audit); err != nil {
		t.Fatal(err)
	}
	if err := checkTry(printed.String(), fake(true)); err == nil || !strings.Contains(err.Error(), "--dry-run") {
		t.Fatalf("a dry run that removes a finalizer must fail the check: %v", err)
	}
}
