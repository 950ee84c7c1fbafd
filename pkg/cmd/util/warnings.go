package util

import (
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime/schema"

	finalizev1alpha1 "github.com/kubectl-finalize/kubectl-finalize/pkg/apis/finalize/v1alpha1"
)

// PrintWarnings writes each warning on w.
func PrintWarnings(w io.Writer, warnings []string) {
	for _, msg := range warnings {
		fmt.Fprintf(w, "Warning: %s\n", msg)
	}
}

// PrintResult writes warnings on errOut, prints the result, then warns about what could
// not be read, and returns the error that makes the command exit with status 3 if
// anything could not be.
func PrintResult(errOut io.Writer, warnings []string, incomplete []finalizev1alpha1.IncompleteResource, printResult func() error) error {
	PrintWarnings(errOut, warnings)
	if err := printResult(); err != nil {
		return err
	}
	return IncompleteWarning(errOut, incomplete)
}

// IncompleteWarning warns on w about what could not be read and returns the error that
// makes the command exit with status 3, or nil when nothing is missing.
func IncompleteWarning(w io.Writer, incomplete []finalizev1alpha1.IncompleteResource) error {
	if len(incomplete) == 0 {
		return nil
	}
	fmt.Fprintf(w, "Warning: the scan is incomplete; objects of these types may be stuck too:\n")
	for _, in := range incomplete {
		what := in.GroupVersion
		if in.Resource != "" {
			what = schema.FromAPIVersionAndKind(in.GroupVersion, "").GroupVersion().WithResource(in.Resource).GroupResource().String()
		}
		switch {
		case unreachable(in):
			what = fmt.Sprintf("context %s (every type)", in.Cluster)
		case in.Cluster != "":
			what = fmt.Sprintf("context %s: %s", in.Cluster, what)
		}
		fmt.Fprintf(w, "  %s: %s: %s\n", what, in.Reason, in.Message)
	}
	return incompleteError(errors.New("the scan is incomplete"))
}

// unreachable names the clusters that could not be read, for the incomplete warning.
func unreachable(in finalizev1alpha1.IncompleteResource) bool {
	return in.Reason == finalizev1alpha1.ReasonClusterUnreachable
}
