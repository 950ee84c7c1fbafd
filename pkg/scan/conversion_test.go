package scan

import (
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// What kube-apiserver v1.36 says when a CRD's conversion webhook fails, as a list error and
// inside a namespace condition.
const (
	convMissing   = `conversion webhook for db.example.com/v1, Kind=Database failed: Post "https://db-webhook.ops.svc:443/convert?timeout=30s": service "db-webhook" not found`
	convNoEnds    = `conversion webhook for db.example.com/v1, Kind=Database failed: Post "https://db-webhook.ops.svc:443/convert?timeout=30s": no endpoints available for service "db-webhook"`
	convTLS       = `conversion webhook for db.example.com/v1, Kind=Database failed: Post "https://127.0.0.1:8443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`
	convRefused   = `conversion webhook for db.example.com/v1, Kind=Database failed: Post "https://127.0.0.1:8443/convert?timeout=30s": dial tcp 127.0.0.1:8443: connect: connection refused`
	nsConditionOf = `Failed to delete all resource types, 2 remaining: ` + convMissing + `, conversion webhook for cache.example.com/v1alpha1, Kind=Cache failed: Post "https://cache.ops.svc:443/convert?timeout=30s": no endpoints available for service "cache"`
)

func TestConversionFailuresSayWhatFailed(t *testing.T) {
	cases := []struct {
		name, msg, from, kind, service, problem string
	}{
		{"service missing", convMissing, "db.example.com/v1", "Database", "ops/db-webhook", "service ops/db-webhook does not exist"},
		{"no endpoints", convNoEnds, "db.example.com/v1", "Database", "ops/db-webhook", "service ops/db-webhook has no ready endpoints"},
		{"TLS", convTLS, "db.example.com/v1", "Database", "", "its TLS handshake fails: tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{"refused", convRefused, "db.example.com/v1", "Database", "", "the connection to 127.0.0.1:8443 is refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := ConversionFailures(c.msg)
			if len(fs) != 1 {
				t.Fatalf("%d failures in %q", len(fs), c.msg)
			}
			f := fs[0]
			if f.From.String() != c.from || f.Kind != c.kind || f.Service != c.service || f.Problem() != c.problem {
				t.Errorf("got %s %s %q %q", f.From, f.Kind, f.Service, f.Problem())
			}
		})
	}
	fs := ConversionFailures(nsConditionOf)
	if len(fs) != 2 || fs[0].Problem() != "service ops/db-webhook does not exist" || fs[1].Kind != "Cache" || fs[1].Problem() != "service ops/cache has no ready endpoints" {
		t.Errorf("a condition that joins two failures: %+v", fs)
	}
	// Once the API server's watch cache of a type cannot initialize, every namespace's
	// list of it fails, with a preface before the conversion error.
	reinit := `Failed to delete all resource types, 2 remaining: ` + convMissing + `, storage is (re)initializing: failed to list tls.example.com/v2, Kind=Gizmo: ` +
		`conversion webhook for tls.example.com/v1, Kind=Gizmo failed: Post "https://127.0.0.1:38925/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`
	fs = ConversionFailures(reinit)
	if len(fs) != 2 || fs[0].Detail != `service "db-webhook" not found` || fs[1].Kind != "Gizmo" || fs[1].Problem() != "its TLS handshake fails: tls: failed to verify certificate: x509: certificate signed by unknown authority" {
		t.Errorf("a condition with a cache's preface: %+v", fs)
	}
	if fs := ConversionFailures("Failed to delete all resource types, 1 remaining: etcd is slow"); len(fs) != 0 {
		t.Errorf("no conversion failure: %+v", fs)
	}
}

func TestAListThatFailsInAConversionWebhookSaysSo(t *testing.T) {
	f := newFixture([]runtime.Object{obj("v1", "ConfigMap", "a", "stuck", time.Hour, "example.com/x")})
	f.meta.PrependReactor("list", "databases", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New(convMissing))
	})
	res := f.scan(t, Options{})
	if len(res.Incomplete) != 1 {
		t.Fatalf("incomplete %+v", res.Incomplete)
	}
	in := res.Incomplete[0]
	if in.Reason != finalizev1alpha1.ReasonConversionWebhookUnavailable || in.Resource != "databases" || in.GroupVersion != "db.example.com/v1" {
		t.Errorf("incomplete %+v", in)
	}
	for _, want := range []string{"the conversion webhook of CRD databases.db.example.com (service ops/db-webhook) fails: service ops/db-webhook does not exist", convMissing} {
		if !strings.Contains(in.Message, want) {
			t.Errorf("message %q lacks %q", in.Message, want)
		}
	}
}
