package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
	"github.com/kubectl-finalize/kubectl-finalize/pkg/redact"
)

func (p *httpProvider) isPresent(code int) bool {
	if len(p.present) == 0 {
		return code >= 200 && code < 300
	}
	return slices.Contains(p.present, int32(code))
}

// readBody reads a body, at most MaxResponseBytes of it; what cannot be read in full is
// an Unknown.
func (p *httpProvider) readBody(body io.Reader, shown string) ([]byte, *Answer) {
	b, err := io.ReadAll(io.LimitReader(body, MaxResponseBytes+1))
	var a Answer
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		a = Unknown("%s: the body did not arrive in full within %s", shown, p.timeout)
	case err != nil:
		a = Unknown("%s: reading the body: %v", shown, err)
	case len(b) > MaxResponseBytes:
		a = Unknown("%s: the body is larger than %d bytes", shown, MaxResponseBytes)
	default:
		return b, nil
	}
	return nil, &a
}

// decodeJSON decodes a body, numbers kept as they were written.
func decodeJSON(b []byte) (any, error) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	err := dec.Decode(&doc)
	return doc, err
}

// readGone checks that an answer with a status in gone is the API's own: what the rule's
// goneResponse declares, or, where the rule reads a field of a JSON body, JSON; and a
// JSON body whose field the rule reads must not say the resource is anything but gone.
// The shape it returns is compared with the controls' Present answers by the verifier
// (GoneShapeMismatch).
func (p *httpProvider) readGone(body io.Reader, shown string, shape Shape) Answer {
	var b []byte
	if shape.body != bodyNone {
		var fail *Answer
		if b, fail = p.readBody(body, shown); fail != nil {
			return *fail
		}
		shape.body = classify(b)
	}
	notOwn := func(why string) Answer { return Unknown("%s: not the API's own answer: %s", shown, why) }
	switch {
	case p.goneResponse != nil:
		if why := goneResponseMismatch(p.goneResponse, shape); why != "" {
			return notOwn(why)
		}
		shape.Declared = true
	case p.jsonPath != nil && (!isJSONMediaType(shape.MediaType) || shape.body != bodyJSON):
		return notOwn(fmt.Sprintf("the rule reads %s of a JSON body, and this answer is %s", p.response.JSONPath, shape))
	}
	if p.jsonPath != nil && shape.body == bodyJSON {
		// The field the rule reads, where the body has it, must say gone too.
		if doc, err := decodeJSON(b); err == nil {
			if results, err := p.jsonPath.FindResults(doc); err == nil {
				for _, r := range results {
					for _, v := range r {
						if value := fmt.Sprint(v.Interface()); !slices.Contains(p.response.Gone, value) {
							return Unknown("%s, but %s = %q, which is not one of response.gone: the answer contradicts itself", shown, p.response.JSONPath, truncate(value, 64))
						}
					}
				}
			}
		}
	}
	return Answer{Verdict: finalizev1alpha1.VerdictGone, Evidence: shown, Shape: p.shape(shape)}
}

// readResponse reads a value of a JSON body, at most MaxResponseBytes of it.
func (p *httpProvider) readResponse(body io.Reader, shown string, shape Shape) Answer {
	b, fail := p.readBody(body, shown)
	if fail != nil {
		return *fail
	}
	doc, err := decodeJSON(b)
	if err != nil {
		return Unknown("%s: the body is not JSON: %v", shown, err)
	}
	shape.body = classify(b)
	results, err := p.jsonPath.FindResults(doc)
	if err != nil || len(results) != 1 || len(results[0]) != 1 {
		return Unknown("%s: %s does not select one value of the body", shown, p.response.JSONPath)
	}
	value := fmt.Sprint(results[0][0].Interface())
	// Redacted before it is cut short, or the start of a secret would show.
	shown = fmt.Sprintf("%s, %s = %q", shown, p.response.JSONPath, truncate(redact.String(value), 64))
	switch {
	case slices.Contains(p.response.Gone, value):
		return Answer{Verdict: finalizev1alpha1.VerdictGone, Evidence: shown, Shape: p.shape(shape)}
	case len(p.response.Present) == 0 || slices.Contains(p.response.Present, value):
		return Answer{Verdict: finalizev1alpha1.VerdictPresent, Evidence: shown, Shape: p.shape(shape)}
	}
	return Unknown("%s, which means neither gone nor present", shown)
}
