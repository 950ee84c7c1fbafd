// Package image gives the deploy tests the image the CronJob and the Deployment run: the
// release image, built by the release tooling (goreleaser running the kos entry of
// .goreleaser.yaml, so ko) against a base built here instead of distroless, loaded into
// the test node's runtime. hack/release/image builds it; docs/releasing.md says how it
// differs from the published one.
//
// Building it takes a while, so `make` builds it once and names the archive in
// KUBECTL_FINALIZE_IMAGE for every package; without it, the first package's process
// builds it into the control plane's folder.
package image

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

// ArchiveEnv names the environment variable holding the path of an image archive
// hack/release/image wrote.
const ArchiveEnv = "KUBECTL_FINALIZE_IMAGE"

var (
	buildOnce, importOnce sync.Once
	archive, ref          string
	buildErr, importErr   error
)

// Build returns the release image's archive and the reference it names the image by
// (kubectl-finalize.test/kubectl-finalize:<version>): $KUBECTL_FINALIZE_IMAGE, or an
// archive built once per test process into cp's folder.
func Build(ctx context.Context, cp *controlplane.ControlPlane) (string, string, error) {
	buildOnce.Do(func() {
		archive = os.Getenv(ArchiveEnv)
		if archive == "" {
			archive = filepath.Join(cp.Dir, "release-image.tar")
			buildErr = build(ctx, archive)
			if buildErr != nil {
				return
			}
		}
		ref, buildErr = RepoTag(archive)
	})
	return archive, ref, buildErr
}

// Release builds the image once per test process and loads it into cp's node; it returns
// the reference pods use. The image is present on the node, so pods need no pull
// (imagePullPolicy IfNotPresent or Never). It runs as 65532:65532 with kubectl-finalize
// as its entrypoint: a pod's args are kubectl-finalize's.
func Release(ctx context.Context, cp *controlplane.ControlPlane) (string, error) {
	importOnce.Do(func() {
		var path string
		if path, _, importErr = Build(ctx, cp); importErr == nil {
			importErr = cp.Node.ImportImage(ctx, path)
		}
	})
	return ref, importErr
}

// build runs hack/release/image, writing the archive to out.
func build(ctx context.Context, out string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./image", "-root", root, "-out", out)
	cmd.Dir = filepath.Join(root, "hack", "release")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the release image (hack/release/image; set %s to an archive it wrote to skip this): %w\n%s", ArchiveEnv, err, b)
	}
	return nil
}

// RepoTag returns the one reference an image archive (docker save format) names.
func RepoTag(archive string) (string, error) {
	b, err := ReadFile(archive, "manifest.json")
	if err != nil {
		return "", err
	}
	var m []struct{ RepoTags []string }
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("%s: manifest.json: %w", archive, err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 {
		return "", fmt.Errorf("%s: want one image with one tag, have %+v", archive, m)
	}
	return m[0].RepoTags[0], nil
}

// ReadFile returns the file name of the archive (a tar file).
func ReadFile(archive, name string) ([]byte, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s holds no %s", archive, name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", archive, err)
		}
		if strings.TrimPrefix(h.Name, "./") == name {
			return io.ReadAll(tr)
		}
	}
}

// repoRoot is the folder above the working directory holding .goreleaser.yaml.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, ".goreleaser.yaml")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New(".goreleaser.yaml was not found above the working directory")
		}
		dir = parent
	}
}
