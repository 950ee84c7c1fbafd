package policy

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/words"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// Kind is the kind of a policy document.
const Kind = "Policy"

// Load reads, decodes and validates the policy in file. Problems come back as an
// *InvalidError that names each one.
func Load(file string) (*Policy, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	spec, errs := Decode(data)
	if spec == nil {
		return nil, &InvalidError{File: file, Errors: errs}
	}
	// Fields that decoded are validated too: every problem is reported at once.
	p, more, warnings := Compile(spec)
	if errs = append(errs, more...); len(errs) > 0 {
		return nil, &InvalidError{File: file, Errors: errs, Warnings: warnings}
	}
	p.File, p.Warnings = file, warnings
	return p, nil
}

// Decode decodes a policy document strictly: a field that is unknown, repeated or of the
// wrong type is an error, and so is another apiVersion or kind. When the document is
// JSON or YAML of the right shape, what decoded comes back with the errors, so that it
// can be validated too; otherwise the policy is nil.
func Decode(data []byte) (*finalizev1alpha1.Policy, field.ErrorList) {
	document := field.NewPath("<document>")
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, field.ErrorList{field.Required(document, "the policy is empty")}
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(document, field.OmitValueType{}, "not YAML: "+strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))}
	}
	spec := &finalizev1alpha1.Policy{}
	strictErrs, err := sigsjson.UnmarshalStrict(js, spec)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(document, field.OmitValueType{}, strings.TrimPrefix(err.Error(), "json: "))}
	}
	var errs field.ErrorList
	for _, e := range strictErrs {
		if m := strictFieldRE.FindStringSubmatch(e.Error()); m != nil {
			errs = append(errs, field.Invalid(field.NewPath(m[2]), field.OmitValueType{}, m[1]+" field"))
			continue
		}
		errs = append(errs, field.Invalid(document, field.OmitValueType{}, strings.TrimPrefix(e.Error(), "json: ")))
	}
	if spec.APIVersion != finalizev1alpha1.SchemeGroupVersion.String() {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), spec.APIVersion, []string{finalizev1alpha1.SchemeGroupVersion.String()}))
	}
	if spec.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), spec.Kind, []string{Kind}))
	}
	return spec, errs
}

// strictFieldRE reads the path out of a strict decoding error.
var strictFieldRE = regexp.MustCompile(`^(?:json: )?(unknown|duplicate) field "(.*)"$`)

// InvalidError is a policy that cannot be used, with every problem found.
type InvalidError struct {
	File     string
	Errors   field.ErrorList
	Warnings []string
}

func (e *InvalidError) Error() string {
	lines := []string{fmt.Sprintf("%s: the policy is invalid (%d %s):", e.File, len(e.Errors), words.Noun(len(e.Errors), "problem"))}
	for _, err := range e.Errors {
		lines = append(lines, "  "+err.Error())
	}
	return strings.Join(lines, "\n")
}
