// Command image builds the release image the way a release does, where neither gcr.io
// nor ghcr.io can be reached, and writes it as an image archive the test node imports:
//
//  1. hack/release/base.sh builds the base (the parts of distroless static-debian12:nonroot
//     a static Go binary uses) from this machine's Debian packages;
//  2. a registry (go-containerregistry's pkg/registry) serves on 127.0.0.1 for this run
//     only, and the base is pushed to it;
//  3. `goreleaser release` (not a snapshot: a snapshot sends ko's image to a Docker daemon,
//     and only a release publishes it) runs the kos entry of .goreleaser.yaml, through the
//     configuration internal/derive cuts to linux/GOARCH with the loopback base and
//     repository, the GitHub release disabled and nothing else published, at -tag
//     (GORELEASER_CURRENT_TAG);
//  4. the image goreleaser pushed is read back from the registry and written to -out,
//     named <-name>:<-tag>.
//
// docs/releasing.md says how this differs from the release's image.
//
//	cd hack/release && go run ./image -root ../.. -out ../../bin/release/image.tar
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kubectl-finalize/kubectl-finalize/hack/release/internal/derive"
)

type options struct {
	root, config, out, tag, name, goarch string
}

func main() {
	var o options
	flag.StringVar(&o.root, "root", ".", "the repository's root")
	flag.StringVar(&o.config, "config", ".goreleaser.yaml", "the release configuration, relative to -root")
	flag.StringVar(&o.out, "out", "", "where to write the image archive (required)")
	flag.StringVar(&o.tag, "tag", "v0.0.0-snapshot", "the version released (GORELEASER_CURRENT_TAG): the image's tag and what `kubectl-finalize version` prints")
	flag.StringVar(&o.name, "name", "kubectl-finalize.test/kubectl-finalize", "the repository the archive names the image by")
	flag.StringVar(&o.goarch, "goarch", runtime.GOARCH, "the platform built: linux/GOARCH")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	began := time.Now()
	err := run(ctx, o)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "image: %s:%s (linux/%s) written to %s in %s\n", o.name, o.tag, o.goarch, o.out, time.Since(began).Round(100*time.Millisecond))
}

func run(ctx context.Context, o options) error {
	if o.out == "" {
		return errors.New("-out is required")
	}
	root, err := filepath.Abs(o.root)
	if err != nil {
		return err
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "release-image-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()

	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(l) }()
	defer func() { _ = srv.Close() }()
	host := l.Addr().String()

	// The base, as an index of one platform, as distroless's is an index (of several).
	baseDir := filepath.Join(tmp, "base")
	if err := command(ctx, root, nil, filepath.Join(root, "hack", "release", "base.sh"), baseDir, o.goarch); err != nil {
		return fmt.Errorf("building the base: %w", err)
	}
	baseIndex, err := layout.ImageIndexFromPath(baseDir)
	if err != nil {
		return err
	}
	base, err := name.NewTag(host + "/distroless/static-debian12:nonroot")
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(base, baseIndex, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("pushing the base: %w", err)
	}

	src, err := os.ReadFile(filepath.Join(root, o.config))
	if err != nil {
		return err
	}
	repo := host + "/kubectl-finalize"
	cfg, err := derive.Image(src, derive.ImageOptions{GOARCH: o.goarch, Base: base.String(), Repository: repo, Dist: filepath.Join(tmp, "dist")})
	if err != nil {
		return fmt.Errorf("%s: %w", o.config, err)
	}
	cfgPath := filepath.Join(tmp, "goreleaser.image.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return err
	}
	// validate: the tag is not on HEAD and the tree may hold uncommitted work; archive:
	// goreleaser makes a default archive when a configuration has none.
	env := []string{"GORELEASER_CURRENT_TAG=" + o.tag}
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "remote").Output(); err != nil || len(out) == 0 {
		// goreleaser asks git for the remote's URL (it never contacts it); a release runs
		// in a clone of GitHub's repository, a working copy may have no remote.
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=remote.origin.url", "GIT_CONFIG_VALUE_0=https://github.com/kubectl-finalize/kubectl-finalize.git")
	}
	err = command(ctx, root, env,
		"go", "tool", "-modfile=hack/release/go.mod", "goreleaser", "release", "--clean", "--config", cfgPath, "--skip=validate,archive")
	if err != nil {
		return fmt.Errorf("goreleaser: %w", err)
	}

	built, err := name.NewTag(repo + ":" + o.tag)
	if err != nil {
		return err
	}
	img, err := hostImage(ctx, built, o.goarch)
	if err != nil {
		return err
	}
	named, err := name.NewTag(o.name + ":" + o.tag)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	// Written beside and renamed, so a reader never sees half an archive.
	part := out + ".part"
	if err := tarball.WriteToFile(part, named, img); err != nil {
		return err
	}
	return os.Rename(part, out)
}

// hostImage reads the image goreleaser published at ref: ko publishes an index when it
// builds several platforms (the release) and the image itself when it builds one.
func hostImage(ctx context.Context, ref name.Reference, goarch string) (v1.Image, error) {
	desc, err := remote.Get(ref, remote.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	if desc.MediaType.IsImage() {
		return desc.Image()
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == goarch {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("%s has no linux/%s image: %+v", ref, goarch, m.Manifests)
}

func command(ctx context.Context, dir string, env []string, bin string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}
