package env

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/policy"
	"github.com/kubectl-finalize/kubectl-finalize/test/seed"
)

// TestMain lets the test binary be the cloud that startCloud starts (it runs
// os.Executable with "cloud --dir DIR").
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "cloud" {
		if err := ServeCloud(os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// TestACloudOutlivesAndStops starts the cloud as make demo does, asks it about the
// seeded databases, deletes one of them in it, and stops it as make demo-down does. (The
// demo's Try list runs against it in capture --check, make verify.)
func TestACloudOutlivesAndStops(t *testing.T) {
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

// TestThePolicyIsValidWithoutWarnings: the policy make demo writes is the kind the docs
// recommend: HTTPS with a CA file, status fields only, live controls.
func TestThePolicyIsValidWithoutWarnings(t *testing.T) {
	s := &seed.Seeder{}
	spec, errs := policy.Decode([]byte(policyYAML(s, "https://127.0.0.1:12345", "/demo/cloud/ca.pem")))
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
