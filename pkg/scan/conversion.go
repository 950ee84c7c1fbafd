package scan

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// ConversionFailure is one failed call of a CRD's conversion webhook, as the API server
// reports it in the error of a list or get ("conversion webhook for db.example.com/v1,
// Kind=Database failed: Post \"https://db-webhook.ops.svc:443/convert?timeout=30s\":
// service \"db-webhook\" not found") and in a namespace's deletion conditions.
type ConversionFailure struct {
	// From is the group version the object is stored at, Kind its kind.
	From schema.GroupVersion
	Kind string
	// URL is the address the API server called, when it says.
	URL string
	// Service is the webhook's service ("namespace/name") when URL names one
	// (name.namespace.svc), else empty.
	Service string
	// Detail is what went wrong, as the API server says it.
	Detail string
}

const conversionMarker = "conversion webhook for "

var (
	conversionRE = regexp.MustCompile(`^([a-z0-9.-]+/v[0-9a-z]+), Kind=([A-Za-z0-9]+) ([\s\S]*)$`)
	calledRE     = regexp.MustCompile(`^(?i:post) "([^"]+)": ([\s\S]*)$`)
	prefaceRE    = regexp.MustCompile(`,\s+[^,]*(, Kind=[A-Za-z0-9]+)?:\s*$`)
)

// ConversionFailures finds every failed conversion a message reports, whatever else it
// says around them (a namespace condition joins several errors with ", ").
func ConversionFailures(msg string) []ConversionFailure {
	var out []ConversionFailure
	parts := strings.Split(msg, conversionMarker)
	for i, part := range parts {
		if i == 0 {
			continue
		}
		// A condition joins errors with ", "; the next one begins at the next marker,
		// maybe after a preface of its own ("storage is (re)initializing: failed to list
		// db.example.com/v2, Kind=Database: "), which is not this one's.
		if i+1 < len(parts) {
			part = prefaceRE.ReplaceAllString(part, "")
		}
		part = strings.TrimRight(strings.TrimSpace(part), ",")
		m := conversionRE.FindStringSubmatch(part)
		if m == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(m[1])
		if err != nil || gv.Group == "" {
			continue
		}
		f := ConversionFailure{From: gv, Kind: m[2], Detail: strings.TrimSpace(strings.TrimPrefix(m[3], "failed:"))}
		if c := calledRE.FindStringSubmatch(f.Detail); c != nil {
			f.URL, f.Detail = c[1], strings.TrimSpace(c[2])
			f.Service = serviceOfURL(f.URL)
		}
		out = append(out, f)
	}
	return out
}

// serviceOfURL is "namespace/name" for https://name.namespace.svc[:port]/..., the address
// the API server builds for a webhook's service.
func serviceOfURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	labels := strings.Split(u.Hostname(), ".")
	if len(labels) == 3 && labels[2] == "svc" {
		return labels[1] + "/" + labels[0]
	}
	return ""
}

// Problem says in a few words why the call failed, as observed.
func (f *ConversionFailure) Problem() string {
	d := f.Detail
	svc := "its service"
	if f.Service != "" {
		svc = "service " + f.Service
	}
	switch {
	case strings.Contains(d, "service \"") && strings.HasSuffix(strings.TrimSpace(d), "not found"):
		return svc + " does not exist"
	case strings.Contains(d, "no endpoints available for service"):
		return svc + " has no ready endpoints"
	case strings.Contains(d, "x509:") || strings.Contains(d, "tls:"):
		return "its TLS handshake fails: " + tlsPart(d)
	case strings.Contains(d, "connection refused"):
		return "the connection to " + f.where() + " is refused"
	case strings.Contains(d, "no such host"):
		return "the host name of " + f.where() + " does not resolve"
	case strings.Contains(d, "deadline exceeded") || strings.Contains(d, "Client.Timeout") || strings.Contains(d, "i/o timeout"):
		return f.where() + " does not answer in time"
	}
	return "the call fails: " + d
}

func (f *ConversionFailure) where() string {
	if f.URL != "" {
		if u, err := url.Parse(f.URL); err == nil {
			return u.Host
		}
	}
	return "the webhook"
}

// tlsPart is the TLS error from where it begins ("x509: certificate signed by unknown
// authority").
func tlsPart(d string) string {
	from := len(d)
	for _, p := range []string{"x509:", "tls:"} {
		if i := strings.Index(d, p); i >= 0 && i < from {
			from = i
		}
	}
	if from == len(d) {
		return d
	}
	return d[from:]
}

// conversionIncomplete is the incomplete entry of a type whose list failed in its CRD's
// conversion webhook, or false when err is not that.
func conversionIncomplete(r kube.Resource, err error) (finalizev1alpha1.IncompleteResource, bool) {
	fs := ConversionFailures(err.Error())
	if len(fs) == 0 {
		return finalizev1alpha1.IncompleteResource{}, false
	}
	f := fs[0]
	via := ""
	if f.Service != "" {
		via = " (service " + f.Service + ")"
	} else if f.URL != "" {
		via = " (" + f.URL + ")"
	}
	msg := fmt.Sprintf("the conversion webhook of CRD %s%s fails: %s; objects stored at %s cannot be listed at %s, so its objects are not scanned; the API server said: %s",
		r.Resource+"."+r.Group, via, f.Problem(), f.From, r.GroupVersion(), err)
	return finalizev1alpha1.IncompleteResource{GroupVersion: r.GroupVersion().String(), Resource: r.Resource,
		Reason: finalizev1alpha1.ReasonConversionWebhookUnavailable, Message: msg}, true
}
