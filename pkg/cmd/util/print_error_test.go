package util

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

func TestPrintError(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}
	refusedList := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/configmaps?limit=500", Err: refused.Err}
	cmd := &cobra.Command{Use: "scan"}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"own error", errors.New("something failed"), "error: something failed\n"},
		{"api error", apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("no")), "Error from server (Forbidden): secrets is forbidden: no\n"},
		{"wrapped api error keeps its context", fmt.Errorf("listing secrets: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("no"))), "error: listing secrets: secrets is forbidden: no\n"},
		{"refused", fmt.Errorf("discovery: %w", refused), "error: the connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?\n"},
		{"refused later", fmt.Errorf("the pass stopped before it removed anything: listing configmaps: %w", refusedList),
			"error: the pass stopped before it removed anything: listing configmaps: the connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?\n"},
		{"usage", UsageErrorf(cmd, "--older-than must be positive"), "error: --older-than must be positive\nSee 'scan -h' for help and examples\n"},
		{"silent", incompleteError(errors.New("partial")), ""},
		{"aggregate", utilerrors.NewAggregate([]error{errors.New("a"), errors.New("b")}), "error: a\nerror: b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			PrintError(&buf, tt.err)
			if buf.String() != tt.want {
				t.Fatalf("got %q, want %q", buf.String(), tt.want)
			}
		})
	}
}
