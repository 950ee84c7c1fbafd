package controlplane

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// AuditLog is the path of an audit log kube-apiserver writes: one audit.k8s.io/v1 Event,
// as JSON, a line.
type AuditLog string

// AuditServiceAccounts is a Setup that has kube-apiserver record every request of a
// ServiceAccount (level Metadata, the stage of the response, written before the answer
// leaves: audit-log-mode blocking) in an audit log in the setup's folder, whose path it
// puts in *log. A test reads it to tell which requests of its ServiceAccount were made
// and which were refused.
func AuditServiceAccounts(log *AuditLog) Setup {
	return func(dir string, opts *Options) error {
		policy := filepath.Join(dir, "audit-policy.yaml")
		*log = AuditLog(filepath.Join(dir, "audit.log"))
		if opts.APIServerFlags == nil {
			opts.APIServerFlags = map[string]string{}
		}
		opts.APIServerFlags["audit-policy-file"] = policy
		opts.APIServerFlags["audit-log-path"] = string(*log)
		opts.APIServerFlags["audit-log-mode"] = "blocking"
		return os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: None
`), 0o600)
	}
}

// AuditEvent is what the tests read of an audit.k8s.io/v1 Event.
type AuditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	// ObjectRef is nil for a request of a non-resource URL (/api, /apis, /version).
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestURI string `json:"requestURI"`
}

// Refused reports whether the API server answered the request 401 or 403.
func (e *AuditEvent) Refused() bool {
	return e.ResponseStatus != nil && (e.ResponseStatus.Code == 401 || e.ResponseStatus.Code == 403)
}

// Size is the log's size: the offset from which Events reads what comes after.
func (l AuditLog) Size(t testing.TB) int64 {
	t.Helper()
	st, err := os.Stat(string(l))
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// Events are the events of user's requests (every request of every resource and
// non-resource URL) written after offset, in order. None means the log does not know
// the user: no refusal would show either.
func (l AuditLog) Events(t testing.TB, offset int64, user string) []AuditEvent {
	t.Helper()
	f, err := os.Open(string(l))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("an audit line of %s: %v", l, err)
		}
		if e.User.Username == user {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the audit log %s: %v", l, err)
	}
	return out
}
