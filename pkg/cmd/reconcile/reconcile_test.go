package reconcile

import (
	"os"
	"strings"
	"testing"
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
