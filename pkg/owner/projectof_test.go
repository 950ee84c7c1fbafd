package owner

import "testing"

// TestProjectOf: the last two labels of the domain, lower-cased, "" without a domain; and
// nothing allocated for a lower-case one.
func TestProjectOf(t *testing.T) {
	for in, want := range map[string]string{
		"resources-finalizer.argocd.argoproj.io":     "argoproj.io",
		"example.com/x":                              "example.com",
		"Kubernetes.IO/pvc-protection":               "kubernetes.io",
		"kubernetes":                                 "",
		"a.b.c.d/x":                                  "c.d",
		"finalizers.ack.services.k8s.aws/DBInstance": "k8s.aws",
	} {
		if got := projectOf(in); got != want {
			t.Errorf("projectOf(%q) = %q, want %q", in, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = projectOf("resources-finalizer.argocd.argoproj.io") }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
