package provider

import (
	"errors"
	"fmt"
	"os"
	"strings"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
)

// secretSource is a credential from valueFrom: an environment variable read when the
// provider is built, or a file read at every request.
type secretSource struct {
	// what names where the value goes, for errors: "header Authorization".
	what string
	src  *finalizev1alpha1.ValueSource
	env  string
}

// newSecretSource checks a credential source once: an environment variable that is
// unset or empty, a file that cannot be read or is empty, fail the provider's build.
func newSecretSource(what string, src *finalizev1alpha1.ValueSource, opts Options) (*secretSource, error) {
	s := &secretSource{what: what, src: src}
	if src.Env != "" {
		v, ok := opts.lookupEnv(src.Env)
		if !ok {
			return nil, fmt.Errorf("%s: environment variable %s is not set", what, src.Env)
		}
		if err := checkSecret(v); err != nil {
			return nil, fmt.Errorf("%s: environment variable %s %w", what, src.Env, err)
		}
		s.env = v
		return s, nil
	}
	if _, err := s.read(); err != nil {
		return nil, err
	}
	return s, nil
}

// read is the credential, without its prefix. A file is read each time, so a rotated
// token is picked up; a trailing line break is not part of it.
func (s *secretSource) read() (string, error) {
	if s.src.Env != "" {
		return s.env, nil
	}
	b, err := os.ReadFile(s.src.File)
	if err != nil {
		return "", fmt.Errorf("%s: the file cannot be read: %w", s.what, err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if err := checkSecret(v); err != nil {
		return "", fmt.Errorf("%s: file %s %w", s.what, s.src.File, err)
	}
	return v, nil
}

// checkSecret refuses a credential that cannot be one, and registers the one that can
// with the redactor, so that it is shown nowhere. An empty value would send
// "Authorization: Bearer ", which some APIs answer like an anonymous caller, with 404; a
// value shorter than redact.MinLength is no credential, and could not be redacted.
func checkSecret(v string) error {
	switch {
	case strings.TrimSpace(v) == "":
		return errors.New("is empty")
	case strings.ContainsAny(v, "\r\n\x00"):
		return errors.New("holds a line break or a NUL byte")
	}
	return redact.Register(v)
}
