package provider

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

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

// credentialQueryParameter reports whether a query parameter's name says it carries a
// credential. Such a parameter is never written in a policy's URL (policy check refuses
// it), and its value is REDACTED wherever a URL is shown.
func credentialQueryParameter(name string) bool { return credentialQueryRE.MatchString(name) }

// credentialHeader reports whether a header's name says it carries a credential: its
// value comes from valueFrom, never from the policy text.
func credentialHeader(name string) bool { return credentialNameRE.MatchString(name) }

// credentialEnv reports whether an environment variable's name says it holds a
// credential, by the rules of headers (API_TOKEN, AWS_SECRET_ACCESS_KEY, PGPASSWORD): an
// exec provider's env entry of such a name comes from valueFrom, and such a variable the
// program inherits is registered with the redactor.
func credentialEnv(name string) bool { return credentialNameRE.MatchString(name) }

// credentialHint is what policy check says of a credential in the policy text.
const credentialHint = "credentials come from valueFrom (an environment variable or a file), never from the policy text"

// checkValueFrom checks a credential's source: an environment variable or a file.
func checkValueFrom(c Checks, path *field.Path, src *finalizev1alpha1.ValueSource) {
	if (src.Env == "") == (src.File == "") {
		c.Add(field.Invalid(path, field.OmitValueType{}, "set exactly one of env and file"))
	}
}

// checkSecretOrValue checks a header's or a query parameter's value: exactly one of a
// templated value and valueFrom, and never a value in the policy text for a name that
// carries credentials.
func checkSecretOrValue(c Checks, path *field.Path, what, name, value string, from *finalizev1alpha1.ValueSource, credential bool) {
	switch {
	case value != "" && from != nil:
		c.Add(field.Invalid(path, name, "set value or valueFrom, not both"))
	case from != nil:
		checkValueFrom(c, path.Child("valueFrom"), from)
	case value == "":
		c.Add(field.Required(path.Child("value"), "set value or valueFrom"))
	case credential:
		c.Add(field.Forbidden(path.Child("value"), fmt.Sprintf("%s %s carries credentials: %s", what, name, credentialHint)))
	default:
		c.Template(path.Child("value"), value)
	}
}
