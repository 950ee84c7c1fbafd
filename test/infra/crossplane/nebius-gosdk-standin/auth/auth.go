// Package auth is a stand-in for github.com/nebius/gosdk/auth (see ../go.mod).
package auth

// BearerToken is a token to send as "Authorization: Bearer TOKEN".
type BearerToken struct {
	Token string
}

// ServiceAccountReader reads service account credentials.
type ServiceAccountReader interface{ serviceAccountReader() }

type privateKeyParser struct{}

func (privateKeyParser) serviceAccountReader() {}

// NewPrivateKeyParser returns a reader of a service account's private key.
func NewPrivateKeyParser(privateKey []byte, publicKeyID, serviceAccountID string) ServiceAccountReader {
	return privateKeyParser{}
}
