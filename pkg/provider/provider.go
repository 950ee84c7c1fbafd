// Package provider answers one question for a finalizer: is the external resource it
// protects gone? Each provider (http, exec, kubernetes) renders a request from the full
// object, asks, and turns the answer into a verdict with evidence. It fails closed: an
// error, a timeout, a malformed or unexpected answer is Unknown, never Gone.
package provider

import (
	"context"
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// Request is one question: is the external resource behind Finalizer of Object gone?
type Request struct {
	Rule      string
	Finalizer string
	// Object is the full object, as the API server returned it.
	Object *unstructured.Unstructured
	// Identity holds the named values a preset found on the object.
	Identity map[string]string
}

// Answer is a verdict and the evidence for it, for people.
type Answer struct {
	Verdict  finalizev1alpha1.Verdict
	Evidence string
	// CannotRun says the provider itself could not run: a credential source unset, empty
	// or unreadable, a CA file that cannot be read. No request went out, the verdict is
	// Unknown, and the rule cannot verify anything until it is fixed: the pass fails.
	CannotRun bool
	// Shape is what the http response the answer came from looked like; nil for the
	// other providers. A Gone counts only in the shape the rule's controls established
	// (GoneShapeMismatch).
	Shape *Shape
	// Found is the UID of the object a Present answer found (the kubernetes provider's);
	// empty for the others. A control vouches for where its operator put the resource
	// only when that is the very object the operator recorded (preset.InstanceOf).
	Found string
}

// Unknown is the answer when a provider cannot tell.
func Unknown(format string, args ...any) Answer {
	return Answer{Verdict: finalizev1alpha1.VerdictUnknown, Evidence: fmt.Sprintf(format, args...)}
}

// Provider verifies finalizers of one policy rule.
type Provider interface {
	// Prepare renders the request for one object. An error (a template that resolves to
	// nothing) means the provider cannot be asked about it: Unknown.
	Prepare(req *Request) (Call, error)
	// String describes the provider for people, secrets left out.
	String() string
}

// Call is one rendered request, ready to ask.
type Call interface {
	// Key identifies the rendered request: calls with the same key ask the same
	// question, and within one pass get one answer.
	Key() string
	// Do asks. Whatever goes wrong is Unknown with the reason as evidence.
	Do(ctx context.Context) Answer
}

// Options are what providers need besides their specification.
type Options struct {
	// Dynamic and Mapper reach the cluster being reconciled, for the kubernetes provider
	// without a kubeconfig of its own.
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// LookupEnv reads environment variables; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Environ is the environment an exec program inherits; nil means os.Environ.
	Environ func() []string
}

func (o *Options) lookupEnv(name string) (string, bool) {
	if o.LookupEnv != nil {
		return o.LookupEnv(name)
	}
	return os.LookupEnv(name)
}

func (o *Options) environ() []string {
	if o.Environ != nil {
		return o.Environ()
	}
	return os.Environ()
}

// New builds the provider a rule names. Its specification must have been validated
// (policy.Validate); New fails on what only shows at run time: a missing environment
// variable, an unreadable CA file, a kubeconfig context that does not exist.
func New(v *finalizev1alpha1.Verify, opts Options) (Provider, error) {
	if s := Of(v); s != nil {
		return s.New(opts)
	}
	return nil, errors.New("no provider: verify needs one of " + Names())
}
