package overlay

import (
	"os"
	"testing"
)

// TestRepoPathFindsTheRepository: the path names a file of the repository, whatever the
// build's -trimpath (make builds with it).
func TestRepoPathFindsTheRepository(t *testing.T) {
	if _, err := os.Stat(RepoPath("docs", "deploy", "cronjob", "kustomization.yaml")); err != nil {
		t.Fatal(err)
	}
}
