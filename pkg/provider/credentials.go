package provider

import "regexp"

// The names that say a value is a credential, in one place: a policy never holds the
// value of such a header, query parameter or exec environment variable (policy check
// refuses it and points to valueFrom), and an exec provider's inherited environment
// variable of such a name is registered with the redactor.

// credentialQueryRE matches the names of query parameters that carry credentials: API
// keys, tokens, passwords, the signatures of presigned URLs (X-Amz-Signature,
// X-Goog-Signature, Azure's sig). "code" is left out: it names a region, a country or an
// error as often as an OAuth code, and an OAuth code is not how a lookup authenticates.
var credentialQueryRE = regexp.MustCompile(`(?i)^(key|sig|auth|jwt|pwd|pass|session|sessionid|session_id)$|token|secret|passw(or)?d|passphrase|credential|signature|authorization|api[-_]?key|(access|secret|private|subscription|auth|app|application|client|master|account|signing|functions?)[-_]?key`)

// credentialNameRE matches headers that carry credentials, and environment variables
// that hold them. Besides the standard headers: tokens (X-Auth-Token, Private-Token,
// X-Vault-Token, GITHUB_TOKEN), API keys (X-Api-Key, and any name ending in -key or _key:
// Ocp-Apim-Subscription-Key, X-Functions-Key, AWS_SECRET_ACCESS_KEY), passwords
// (PGPASSWORD), signatures, sessions and JWTs.
var credentialNameRE = regexp.MustCompile(`(?i)^(authorization|proxy-authorization|cookie)$|token|secret|passw(or)?d|passphrase|api[-_]?key|[-_]key$|^key$|auth|credential|signature|(^|[-_])sig$|session|jwt`)

// CredentialQueryParameter reports whether a query parameter's name says it carries a
// credential. Such a parameter is never written in a policy's URL (policy check refuses
// it), and its value is REDACTED wherever a URL is shown.
func CredentialQueryParameter(name string) bool { return credentialQueryRE.MatchString(name) }

// CredentialHeader reports whether a header's name says it carries a credential: its
// value comes from valueFrom, never from the policy text.
func CredentialHeader(name string) bool { return credentialNameRE.MatchString(name) }

// CredentialEnv reports whether an environment variable's name says it holds a
// credential, by the rules of headers (API_TOKEN, AWS_SECRET_ACCESS_KEY, PGPASSWORD): an
// exec provider's env entry of such a name comes from valueFrom, and such a variable the
// program inherits is registered with the redactor.
func CredentialEnv(name string) bool { return credentialNameRE.MatchString(name) }
