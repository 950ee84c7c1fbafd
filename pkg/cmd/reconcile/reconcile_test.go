package reconcile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/reconcile"
)

// TestLeaseIdentitiesAreUnique: two replicas on one node see one hostname and may both
// be PID 1; their identities must still differ, or each takes the other's Lease for its
// own and both run passes.
func TestLeaseIdentitiesAreUnique(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	a, b := leaseIdentity(), leaseIdentity()
	if a == b {
		t.Fatalf("two identities in one process are both %q", a)
	}
	for _, id := range []string{a, b} {
		if !strings.HasPrefix(id, host+"_") {
			t.Errorf("identity %q does not start with the hostname %q", id, host)
		}
	}
}

// TestTheRunNoticesAChangedPolicy: a continuous run compares the policy file with the
// text it loaded before each pass: the same text goes on; another, or none, stops it.
func TestTheRunNoticesAChangedPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	const text = "apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\nrules: []\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	o := &Options{PolicyFile: path, policyText: []byte(text)}
	if err := o.policyChanged(); err != nil {
		t.Errorf("the same policy: %v", err)
	}
	if err := os.WriteFile(path, []byte(text+"maxRemovals: 100\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := o.policyChanged(); !errors.Is(err, reconcile.ErrPolicyChanged) {
		t.Errorf("a changed policy: %v, want ErrPolicyChanged", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := o.policyChanged(); !errors.Is(err, reconcile.ErrPolicyChanged) {
		t.Errorf("a policy gone: %v, want ErrPolicyChanged", err)
	}
}
