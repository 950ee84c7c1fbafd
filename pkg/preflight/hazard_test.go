package preflight

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every hazard family is looked for once, and every reason a family gives is declared
// (Reason): a reason that is not would sort first in a report (rank 0) and be missing
// from --help and docs/preflight.md.
func TestEveryHazardIsLookedForAndDeclared(t *testing.T) {
	seen := map[string]bool{}
	for _, h := range hazards {
		name := fmt.Sprintf("%T", h)
		if seen[name] {
			t.Errorf("%s is looked for twice", name)
		}
		seen[name] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	given := regexp.MustCompile(`Reason: finalizev1alpha1\.Hazard(\w+)|reason: finalizev1alpha1\.Hazard(\w+)`)
	found := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range given.FindAllStringSubmatch(string(src), -1) {
			found++
			if _, ok := reasons[m[1]+m[2]]; !ok {
				t.Errorf("%s gives %s, which no family declares", name, m[1]+m[2])
			}
		}
	}
	if found < len(reasons) {
		t.Errorf("%d hazards given, want at least one of each of the %d reasons", found, len(reasons))
	}
}
