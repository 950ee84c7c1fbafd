package policy

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestThePoliciesOfTheDocsAreValid: every policy in docs/ decodes and validates.
func TestThePoliciesOfTheDocsAreValid(t *testing.T) {
	block := regexp.MustCompile("(?s)```yaml\n(apiVersion: kubectl-finalize.github.io/v1alpha1\nkind: Policy\n.*?)```")
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../docs/deploy/base/policy.yaml")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs := []string{string(b)}
		if filepath.Ext(f) == ".md" {
			docs = nil
			for _, m := range block.FindAllStringSubmatch(string(b), -1) {
				docs = append(docs, m[1])
			}
		}
		for _, doc := range docs {
			n++
			spec, errs := Decode([]byte(doc))
			if len(errs) == 0 {
				_, errs, _ = Compile(spec)
			}
			if len(errs) > 0 {
				t.Errorf("%s: a policy is invalid: %v\n%s", f, errs, doc)
			}
		}
	}
	if n < 6 {
		t.Errorf("found only %d policies in docs/", n)
	}
}
