package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestImageHasTheFilesUserAndEntrypoint(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "app")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil { //nolint:gosec // an executable
		t.Fatal(err)
	}
	certs := filepath.Join(dir, "certs")
	if err := os.MkdirAll(filepath.Join(certs, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(certs, "sub", "ca.crt"), []byte("pem"), 0o644); err != nil { //nolint:gosec // a public file
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	err := run(options{
		tag: "example.test/app:1", out: out, layoutDir: filepath.Join(dir, "layout"),
		user: "65532:65532", platform: "linux/arm64", chown: "0:0",
		adds:       list{bin + ":/ko-app/app", certs + ":/etc/ssl"},
		entrypoint: list{"/ko-app/app"}, passwd: list{"nonroot:65532:65532"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("example.test/app:1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/ko-app/app"}) || cf.OS != "linux" || cf.Architecture != "arm64" {
		t.Errorf("config user %q entrypoint %v platform %s/%s", cf.Config.User, cf.Config.Entrypoint, cf.OS, cf.Architecture)
	}
	files := map[string]*tar.Header{}
	bodies := map[string]string{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		b, _ := io.ReadAll(tr)
		bodies[h.Name] = string(b)
	}
	for _, want := range []string{"ko-app", "ko-app/app", "etc", "etc/ssl", "etc/ssl/sub", "etc/ssl/sub/ca.crt", "etc/passwd", "etc/group"} {
		if files[want] == nil {
			t.Errorf("the image lacks %s; it has %v", want, keys(files))
		}
	}
	if h := files["ko-app/app"]; h != nil && h.Mode != 0o755 {
		t.Errorf("ko-app/app mode %o, want 755", h.Mode)
	}
	if p := bodies["etc/passwd"]; p != "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n" {
		t.Errorf("etc/passwd %q", p)
	}
	if _, err := layout.FromPath(filepath.Join(dir, "layout")); err != nil {
		t.Errorf("the OCI layout: %v", err)
	}
}

func keys(m map[string]*tar.Header) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// The release image's base (hack/release/base.sh) needs empty folders with their own
// mode and owner (/tmp, /home/nonroot), tzdata's aliases kept as links, and its own PATH.
func TestFoldersLinksAndPath(t *testing.T) {
	dir := t.TempDir()
	zones := filepath.Join(dir, "zoneinfo")
	if err := os.MkdirAll(filepath.Join(zones, "Etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(zones, "Etc", "UTC"), []byte("TZif"), 0o644); err != nil { //nolint:gosec // a public file
		t.Fatal(err)
	}
	if err := os.Symlink("Etc/UTC", filepath.Join(zones, "UTC")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	err := run(options{
		tag: "example.test/base:1", out: out, platform: "linux/amd64", chown: "0:0", symlinks: true,
		adds: list{zones + ":/usr/share/zoneinfo"},
		dirs: list{"/tmp:1777:0:0", "/home/nonroot:700:65532:65532"},
		env:  list{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("example.test/base:1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}; !slices.Equal(cf.Config.Env, want) {
		t.Errorf("env %v, want %v", cf.Config.Env, want)
	}
	files := map[string]*tar.Header{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
	}
	for name, check := range map[string]func(*tar.Header) bool{
		"tmp": func(h *tar.Header) bool { return h.Typeflag == tar.TypeDir && h.Mode == 0o1777 && h.Uid == 0 },
		"home/nonroot": func(h *tar.Header) bool {
			return h.Typeflag == tar.TypeDir && h.Mode == 0o700 && h.Uid == 65532 && h.Gid == 65532
		},
		"usr/share/zoneinfo/Etc/UTC": func(h *tar.Header) bool { return h.Typeflag == tar.TypeReg },
		"usr/share/zoneinfo/UTC":     func(h *tar.Header) bool { return h.Typeflag == tar.TypeSymlink && h.Linkname == "Etc/UTC" },
	} {
		if h := files[name]; h == nil || !check(h) {
			t.Errorf("%s: %+v; the image has %v", name, h, keys(files))
		}
	}
}
