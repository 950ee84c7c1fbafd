package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Policy says which finalizers may be removed unattended, and how a provider verifies
// that what each one guards is gone. It is read from a file (--policy), strictly: an
// unknown field is an error.
type Policy struct {
	metav1.TypeMeta `json:",inline"`

	// MaxRemovals aborts a reconcile pass, before its first write, when it plans more
	// removals than this. Default 20.
	MaxRemovals *int32 `json:"maxRemovals,omitempty"`
	// MaxForceDeletions aborts a reconcile pass, before its first write, when it plans
	// more force deletions of pods than this, however few removals it plans in all.
	// Default 5: many machines gone at once (a zone, a rack) is when a person decides.
	MaxForceDeletions *int32 `json:"maxForceDeletions,omitempty"`
	// MinAge leaves objects terminating for less to their controller. Default 15m.
	MinAge *metav1.Duration `json:"minAge,omitempty"`
	// Exclude wins over every rule.
	Exclude *Exclude `json:"exclude,omitempty"`
	// Rules are tried in order; the first that matches a finalizer of an object decides.
	Rules []Rule `json:"rules"`
}

// Exclude names objects no rule may touch.
type Exclude struct {
	// Namespaces are names or globs. A namespace excluded here excludes the namespace
	// object itself and everything in it.
	Namespaces []string `json:"namespaces,omitempty"`
	// Resources are resource.group names or globs ("secrets", "*.example.com").
	Resources []string `json:"resources,omitempty"`
	// Selectors are label selectors; an object that matches any of them is excluded.
	Selectors []string `json:"selectors,omitempty"`
}

// Rule matches finalizers of objects and says how to verify them.
type Rule struct {
	// Name identifies the rule in reports, Events and audit lines.
	Name string `json:"name"`
	// Finalizers are exact names or globs; at least one, unless Preset gives them or the
	// rule sets WaitsForNode.
	Finalizers []string `json:"finalizers,omitempty"`
	// WaitsForNode makes the rule match pods whose deletion is overdue and waits for the
	// kubelet of their node, instead of finalizers: what it verifies is that the node's
	// machine is gone, and what it does is a force deletion of the pod (DELETE with
	// gracePeriodSeconds 0, preconditioned on its uid and resourceVersion). The Node
	// object's absence verifies alone; otherwise the rule's provider, if it names one, is
	// asked about the node ({identity.nodeName}, {identity.providerID} and the Node's
	// fields in templates). A pod of a Ready node is never deleted. Finalizers, Preset,
	// AllowSystem, AllowRetained and TrustIdentityFromAnyWriter do not apply; Resources,
	// if set, is [pods].
	WaitsForNode bool `json:"waitsForNode,omitempty"`
	// Preset names what a well-known operator does with its finalizers (`kubectl
	// finalize policy presets`): where the external identity lives ({identity.NAME} in
	// templates), and which settings retain the resource or hold the operator.
	Preset string `json:"preset,omitempty"`
	// Resources are resource.group names or globs. Without them the rule matches every
	// type, and a pass needs to list every type of the cluster.
	Resources []string `json:"resources,omitempty"`
	// Namespaces are names or globs. For a Namespace object, its own name is matched.
	// Without them the rule matches every namespace and cluster-scoped objects.
	Namespaces []string `json:"namespaces,omitempty"`
	// Selector is a label selector on the object.
	Selector string `json:"selector,omitempty"`
	// MinAge overrides the policy's minAge for this rule.
	MinAge *metav1.Duration `json:"minAge,omitempty"`
	// AllowSystem lets the rule remove a system finalizer (Finalizer.System: a name with
	// no domain, or one Kubernetes reserves), when its provider said Gone. Only in
	// reconcile; remove still asks for --allow-system.
	AllowSystem bool `json:"allowSystem,omitempty"`
	// AllowRetained lets the rule remove a finalizer whose external resource is meant to
	// outlive the object (verdict Retained).
	AllowRetained bool `json:"allowRetained,omitempty"`
	// TrustIdentityFromAnyWriter trusts a preset's identity values whoever last wrote
	// them. By default an identity read from an annotation, a label or status is trusted
	// only when the object's managedFields show that the operator, not a generic client
	// (kubectl, helm, Argo CD, a GitOps applier, a person), last wrote it: anyone who may
	// edit the object can change such a value, and a wrong one answers 404, which reads
	// as Gone. Setting it lets `kubectl annotate` with a typo remove a finalizer.
	TrustIdentityFromAnyWriter bool `json:"trustIdentityFromAnyWriter,omitempty"`
	// OperatorManagers name the field managers of the operator of the rule's preset,
	// exact names or globs, in place of the ones the preset names: an identity value is
	// trusted only when every manager that owns its field (managedFields) is one of them.
	// For a deployment whose operator writes under another name (a binary renamed, a
	// client that sets its own field manager). None may name a generic client (kubectl,
	// helm, a GitOps applier, curl). Needs a preset; not with trustIdentityFromAnyWriter.
	OperatorManagers []string `json:"operatorManagers,omitempty"`
	// Verify says which provider answers, and how.
	Verify Verify `json:"verify"`
	// Controls guard against a broken provider.
	Controls *Controls `json:"controls,omitempty"`
	// RateLimit bounds the requests to the rule's provider.
	RateLimit *RateLimit `json:"rateLimit,omitempty"`
}

// Controls guard a rule against a broken provider. Before any Gone of a rule is trusted,
// its provider is asked about a few live objects (not being deleted) that carry the same
// finalizer and match the rule. They must be Present: a provider that calls a live object
// gone (a typo in a URL answers 404 for everything) is broken, and nothing is removed
// under its rule.
type Controls struct {
	// Count is how many live objects are asked. Default 3; 0 turns the check off.
	Count *int32 `json:"count,omitempty"`
	// RequireLive, when true (the default), keeps the rule from acting when no live
	// object exists to check its provider with.
	RequireLive *bool `json:"requireLive,omitempty"`
}

// RateLimit bounds the requests a rule sends to its provider.
type RateLimit struct {
	// QPS is the sustained rate. Default 50.
	QPS float32 `json:"qps,omitempty"`
	// Burst is how many may go at once. Default 100.
	Burst int32 `json:"burst,omitempty"`
}

// Verify names exactly one provider; none, in a rule with WaitsForNode, when only the
// Node object's absence verifies.
type Verify struct {
	HTTP       *HTTPProvider       `json:"http,omitempty"`
	Exec       *ExecProvider       `json:"exec,omitempty"`
	Kubernetes *KubernetesProvider `json:"kubernetes,omitempty"`
}

// HTTPProvider asks an HTTP API whether the external resource exists. Templates are
// kubectl JSONPath expressions in braces over the full object ("{.status.id}"); each
// value is escaped for where it lands.
type HTTPProvider struct {
	// URL is templated in its path and query only: a template cannot change the host. A
	// value in the path is one segment, or part of one, and is sent as it is: a value
	// that would need escaping there (anything but ASCII letters, digits and "-._~$&+:=@":
	// a '/', '%', '?', '#', ';', a space, a control character) or is "." or ".." is
	// refused, and the verdict is Unknown. A value in the query is query-escaped; a control
	// character in it is refused.
	URL string `json:"url"`
	// PathValues are expressions of URL, written as there ("{.status.resourcePath}"),
	// whose values are paths: several segments separated by '/', each a segment as above,
	// none empty, "." or "..". Without it, a value holding '/' is refused.
	PathValues []string `json:"pathValues,omitempty"`
	// Method is GET (default), HEAD or POST.
	Method string `json:"method,omitempty"`
	// Headers are sent with each request.
	Headers []Header `json:"headers,omitempty"`
	// Query are parameters added to the URL's query, after those the URL itself has. A
	// credential the API wants in the query (an api_key) goes here, with ValueFrom: it is
	// never written in the URL, and wherever a URL is shown its value is REDACTED.
	Query []QueryParameter `json:"query,omitempty"`
	// Body is sent with POST, templated; each value is escaped as JSON string content.
	Body string `json:"body,omitempty"`
	// Gone are the statuses that mean the resource is gone. Default 404 and 410.
	Gone []int32 `json:"gone,omitempty"`
	// Present are the statuses that mean it exists. Default every 2xx.
	Present []int32 `json:"present,omitempty"`
	// Response, if set, reads a value from a JSON body answered with a Present status. A
	// status in Gone then needs a JSON body (unless GoneResponse says otherwise), and one
	// whose value at JSONPath is not one of Response.Gone contradicts itself: Unknown.
	Response *HTTPResponse `json:"response,omitempty"`
	// GoneResponse says what the API's own Gone answers look like, for an API whose 404
	// is not JSON like the rest of its answers. Without it, a Gone counts only in the
	// shape of the rule's controls' Present answers (their media type, JSON or not, and
	// their Server header), or, with no control's Present answer to compare with, as a
	// JSON body with a JSON media type. Anything else (a proxy's HTML page, an empty body
	// where the API answers JSON, another Server) is Unknown.
	GoneResponse *HTTPGoneResponse `json:"goneResponse,omitempty"`
	// TLS configures the server's CA and a client certificate.
	TLS *TLS `json:"tls,omitempty"`
	// Timeout bounds one verification, retries included. Default 10s.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Redirects says what a 3xx answer means. Refuse (the default): Unknown, with its
	// Location in the evidence; a redirect is never followed for a verdict, as a login
	// page or another resource's 404 says nothing about the one asked about. SameHost:
	// follow redirects on the URL's own scheme, host and port (at most 5), and name every
	// hop in the evidence; a redirect elsewhere is still Unknown.
	Redirects HTTPRedirects `json:"redirects,omitempty"`
}

// HTTPRedirects says whether an http provider follows redirects.
type HTTPRedirects string

// What an http provider does with a redirect.
const (
	RedirectsRefuse   HTTPRedirects = "Refuse"
	RedirectsSameHost HTTPRedirects = "SameHost"
)

// QueryParameter is one parameter of a URL's query: a templated value, or a secret from
// the environment or a file.
type QueryParameter struct {
	Name string `json:"name"`
	// Value is templated from the object and query-escaped. Credentials never go here:
	// use ValueFrom.
	Value string `json:"value,omitempty"`
	// ValueFrom reads the value from the environment of the process or a file. It is sent,
	// query-escaped, and shown nowhere: URLs in evidence, reports, Events, audit lines,
	// logs and errors carry NAME=REDACTED instead.
	ValueFrom *ValueSource `json:"valueFrom,omitempty"`
}

// Header is one HTTP header: a templated value, or a secret from the environment.
type Header struct {
	Name string `json:"name"`
	// Value is templated from the object. Credentials never go here: use ValueFrom.
	Value string `json:"value,omitempty"`
	// ValueFrom reads the value from the environment of the process or a file, so that
	// secrets never appear in the policy.
	ValueFrom *ValueSource `json:"valueFrom,omitempty"`
}

// ValueSource is an environment variable or a file. Its content is secret: it never
// appears in reports, Events, audit lines or logs. An environment variable is read once,
// when the provider is built; a file at every request, so a rotated token is picked up.
// A variable that is unset or empty, or a file that is unreadable or empty (whitespace
// counts as empty), is a provider that cannot run: nothing is sent, and the pass fails.
type ValueSource struct {
	Env  string `json:"env,omitempty"`
	File string `json:"file,omitempty"`
	// Prefix is put before the value ("Bearer ").
	Prefix string `json:"prefix,omitempty"`
}

// HTTPResponse reads a value from a JSON response body.
type HTTPResponse struct {
	// JSONPath selects one value of the body ("{.status}").
	JSONPath string `json:"jsonPath"`
	// Gone are the values that mean the resource is gone ("DELETED").
	Gone []string `json:"gone"`
	// Present, if set, are the values that mean it exists; any other value is Unknown.
	// Without it, every value but those in Gone means Present.
	Present []string `json:"present,omitempty"`
}

// HTTPGoneResponse is what an API's own Gone answers look like. Set at least one field.
// The Server header of the rule's controls' Present answers still applies.
type HTTPGoneResponse struct {
	// MediaType is the media type of a Gone answer, without parameters ("text/plain",
	// "application/problem+json"), compared case-insensitively. Empty: any, or none.
	MediaType string `json:"mediaType,omitempty"`
	// EmptyBody: a Gone answer has an empty body. Without it, a Gone answer's body must
	// not be empty, and must parse as JSON where its media type is JSON.
	EmptyBody bool `json:"emptyBody,omitempty"`
}

// TLS configures an HTTP provider's connection.
type TLS struct {
	// CAFile holds the CA certificates that sign the server's certificate; without it,
	// the system's.
	CAFile string `json:"caFile,omitempty"`
	// CertFile and KeyFile are a client certificate.
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
}

// ExecProvider runs a program that reads a VerifyRequest on stdin and writes a
// VerifyResponse on stdout (docs/providers.md).
type ExecProvider struct {
	// Command is the program and its arguments. No shell runs it; each argument after
	// the first may be templated and stays one argument. A value that starts an argument
	// and begins with '-' is refused (the program would read it as an option), as is a
	// value that holds a control character: the verdict is Unknown, and the program does
	// not run. A value after literal text ("--id={.status.id}") may begin with '-'.
	Command []string `json:"command"`
	// AllowLeadingDash lets a value that starts an argument begin with '-', for a
	// program that takes such values as they are.
	AllowLeadingDash bool `json:"allowLeadingDash,omitempty"`
	// AllowControlCharacters lets a value hold control characters (a tab, a line break),
	// for a program that expects them. A NUL byte is never passed.
	AllowControlCharacters bool `json:"allowControlCharacters,omitempty"`
	// Env is added to the environment the process inherits: the whole environment of
	// kubectl-finalize, the variables other rules read credentials from included. A
	// value is policy text, never a credential: a variable whose name says it holds one
	// (API_TOKEN, AWS_SECRET_ACCESS_KEY, ...) takes its value from valueFrom.
	Env []EnvVar `json:"env,omitempty"`
	// Timeout bounds one run; at the timeout the whole process group is killed. Default
	// 30s.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// SecretData, when true, sends a Secret's values to the program: the values of data
	// and stringData, and kubectl's last-applied-configuration annotation, which holds
	// them too. By default each of those values is replaced by REDACTED (the keys are
	// kept). Set it only for a program that needs the values to find the external
	// resource: the program then holds every value of every Secret the rule matches.
	SecretData bool `json:"secretData,omitempty"`
}

// EnvVar is one environment variable of an exec provider: a value, or a secret from the
// environment or a file.
type EnvVar struct {
	Name string `json:"name"`
	// Value is policy text, sent as it is (no template). Credentials never go here: use
	// ValueFrom.
	Value string `json:"value,omitempty"`
	// ValueFrom reads the value from the environment of the process or a file (read at
	// every run, so a rotated token is picked up), as a header's. It is registered with
	// the redactor: shown nowhere, whatever the program prints.
	ValueFrom *ValueSource `json:"valueFrom,omitempty"`
}

// KubernetesProvider looks for the objects the finalizer's work would delete: gone when
// none is found.
type KubernetesProvider struct {
	// Resource is a kubectl type ("instances.compute.example.com", "pods").
	Resource string `json:"resource"`
	// Namespace is templated; empty for a cluster-scoped type. It must be a namespace's
	// name as it is (an RFC 1123 label), or the verdict is Unknown.
	Namespace string `json:"namespace,omitempty"`
	// Name is templated. Exactly one of Name and Selector. It must be a name an object of
	// Resource can have, as it is, by the type's own rules (most types and every custom
	// resource: an RFC 1123 subdomain), or the verdict is Unknown: never trimmed, never
	// lower-cased.
	Name string `json:"name,omitempty"`
	// Selector is a templated label selector: gone when it selects nothing.
	Selector string `json:"selector,omitempty"`
	// Kubeconfig and Context point to another cluster (a workload cluster, a management
	// cluster). Without them, the cluster being reconciled.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
	// Timeout bounds one verification. Default 10s.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VerifyRequest is what an exec provider reads on stdin.
type VerifyRequest struct {
	metav1.TypeMeta `json:",inline"`

	// Rule is the policy rule that asks.
	Rule string `json:"rule"`
	// Finalizer is the finalizer whose work is in question.
	Finalizer string `json:"finalizer"`
	// UID and ResourceVersion of the object: the response echoes them.
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	// Interactive is always false: nobody answers a prompt.
	Interactive bool `json:"interactive"`
	// Identity holds the named values a preset found on the object.
	Identity map[string]string `json:"identity,omitempty"`
	// Object is the full object, as the API server returned it.
	Object runtime.RawExtension `json:"object"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VerifyResponse is what an exec provider writes on stdout: exactly one, and nothing else.
type VerifyResponse struct {
	metav1.TypeMeta `json:",inline"`

	// UID, ResourceVersion and Finalizer echo the request: a response that does not match
	// is Unknown.
	UID             string  `json:"uid"`
	ResourceVersion string  `json:"resourceVersion"`
	Finalizer       string  `json:"finalizer"`
	Verdict         Verdict `json:"verdict"`
	// Evidence says what was checked, for people: "aws rds describe-db-instances
	// db-123: DBInstanceNotFound".
	Evidence string `json:"evidence"`
}
