// Package gosdk is a stand-in for github.com/nebius/gosdk (see go.mod): the API
// provider-kubernetes v1.3.1 calls, failing at once. No test authenticates to Nebius.
package gosdk

import (
	"context"
	"errors"

	"github.com/nebius/gosdk/auth"
)

// ErrStandIn is what every call returns.
var ErrStandIn = errors.New("github.com/nebius/gosdk is a stand-in in this build (the Go module proxy does not serve it): Nebius authentication is not available")

// SDK is never made.
type SDK struct{}

// Option configures New.
type Option interface{ option() }

// Credentials are what WithCredentials takes.
type Credentials interface{ credentials() }

type credentialsOption struct{}

func (credentialsOption) option() {}

type serviceAccount struct{}

func (serviceAccount) credentials() {}

// WithCredentials is an Option.
func WithCredentials(Credentials) Option { return credentialsOption{} }

// ServiceAccountReader takes a reader of service account credentials.
func ServiceAccountReader(auth.ServiceAccountReader) Credentials { return serviceAccount{} }

// New fails: no Nebius SDK is built in.
func New(context.Context, ...Option) (*SDK, error) { return nil, ErrStandIn }

// BearerToken fails: no Nebius SDK is built in.
func (*SDK) BearerToken(context.Context) (auth.BearerToken, error) {
	return auth.BearerToken{}, ErrStandIn
}
