package doctor

import (
	"strings"
	"testing"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// TestAnUnnamedResourceSaysWhy: an object of a family its preset does not name the
// resource of is not said to be "not named on the object yet": the preset's reason is
// given (#38).
func TestAnUnnamedResourceSaysWhy(t *testing.T) {
	got := describeExternal(&finalizev1alpha1.External{Preset: "crossplane-managed",
		Unnamed: "preset crossplane-managed does not verify provider-helm objects (API group helm.crossplane.io): ..."})
	if !strings.Contains(got, "not named by the preset: preset crossplane-managed does not verify provider-helm objects") || strings.Contains(got, "not named on the object yet") {
		t.Errorf("describeExternal = %q", got)
	}
}
