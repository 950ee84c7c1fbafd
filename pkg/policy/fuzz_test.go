package policy

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/kube"
)

// FuzzDecodeAndCompile feeds arbitrary documents to the policy loader: it never panics
// nor takes long, a document it accepts compiles to a policy, and matching against that
// policy never panics either.
func FuzzDecodeAndCompile(f *testing.F) {
	f.Add([]byte(valid))
	f.Add([]byte(fiftyRules()))
	f.Add([]byte(header + "rules: []\n"))
	f.Add([]byte(header + "rules:\n- name: x\n  finalizers: ['*']\n  verify: {exec: {command: [a, '{.metadata.name}']}}\n"))
	f.Add([]byte("{}"))
	// Every policy the documentation shows.
	for _, pattern := range []string{"../../docs/*.yaml", "../../docs/examples/*/*.yaml", "../preset/testdata/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	widgets := kube.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "db.example.com", Version: "v1", Resource: "databases"}, Namespaced: true}
	f.Fuzz(func(t *testing.T, doc []byte) {
		began := time.Now()
		defer func() {
			if d := time.Since(began); d > 5*time.Second {
				t.Fatalf("loading a %d-byte document took %s", len(doc), d)
			}
		}()
		spec, errs := Decode(doc)
		if spec == nil {
			if len(errs) == 0 {
				t.Fatal("no policy and no error")
			}
			return
		}
		p, more, _ := Compile(spec)
		if len(errs)+len(more) > 0 {
			return
		}
		if p == nil {
			t.Fatal("a valid policy compiled to nothing")
		}
		for _, fin := range []string{"db.example.com/finalizer", "kubernetes", ""} {
			p.Match(SubjectOf(widgets, "prod-eu", "orders", map[string]string{"team": "data"}), fin)
			p.MatchesFinalizer(fin)
		}
	})
}
