package image_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
	"github.com/kubectl-finalize/kubectl-finalize/test/deploy/image"
	"github.com/kubectl-finalize/kubectl-finalize/test/fixture"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.Main(m, controlplane.WithNodes(1), &cp) }

// built returns the image's archive and reference, failing t when it cannot be built.
func built(t *testing.T) (archive, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	began := time.Now()
	archive, ref, err := image.Build(ctx, cp)
	if err != nil {
		t.Fatalf("the release image: %v", err)
	}
	t.Logf("%s from %s (%s)", ref, archive, time.Since(began).Round(time.Millisecond))
	return archive, ref
}

// imageConfig is the part of an OCI image config the tests read.
type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Env        []string          `json:"Env"`
		WorkingDir string            `json:"WorkingDir"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// manifest reads the archive's one image: its config and its layers' paths.
func manifest(t *testing.T, archive string) (imageConfig, []string) {
	t.Helper()
	cfg, _, layers := archiveImage(t, archive)
	return cfg, layers
}

// archiveImage reads the archive's one image: its config, decoded and as written, and
// its layers' paths.
func archiveImage(t *testing.T, archive string) (imageConfig, []byte, []string) {
	t.Helper()
	b, err := image.ReadFile(archive, "manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(b, &m); err != nil || len(m) != 1 {
		t.Fatalf("manifest.json: %v %s", err, b)
	}
	b, err = image.ReadFile(archive, m[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	var cfg imageConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("%s: %v", m[0].Config, err)
	}
	return cfg, b, m[0].Layers
}

// koEntry is the image entry of .goreleaser.yaml, what a release builds.
type koEntry struct {
	Build  string            `json:"build"`
	User   string            `json:"user"`
	Labels map[string]string `json:"labels"`
}

func releaseKo(t *testing.T) koEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Kos []koEntry `json:"kos"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Kos) != 1 {
		t.Fatalf(".goreleaser.yaml has %d kos entries; this test knows one", len(cfg.Kos))
	}
	return cfg.Kos[0]
}

func TestConfigIsTheRelease(t *testing.T) {
	archive, _ := built(t)
	cfg, _ := manifest(t, archive)
	checkConfig(t, cfg)
}

// checkConfig: the image runs as .goreleaser.yaml's kos entry says, with ko's entrypoint
// and the base's environment, for this machine's platform.
func checkConfig(t *testing.T, cfg imageConfig) {
	t.Helper()
	ko := releaseKo(t)
	if cfg.Config.User != "65532:65532" || cfg.Config.User != ko.User {
		t.Errorf("user %q, want 65532:65532 (.goreleaser.yaml says %q)", cfg.Config.User, ko.User)
	}
	// ko puts the binary at /ko-app/<the main package's name>.
	if want := []string{"/ko-app/kubectl-finalize"}; !slices.Equal(cfg.Config.Entrypoint, want) || len(cfg.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want %q and no cmd: a pod's args are kubectl-finalize's", cfg.Config.Entrypoint, cfg.Config.Cmd, want)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	if len(ko.Labels) == 0 {
		t.Fatal(".goreleaser.yaml's kos entry has no labels")
	}
	for k, v := range ko.Labels {
		if cfg.Config.Labels[k] != v {
			t.Errorf("label %s=%q, want %q (labels %v)", k, cfg.Config.Labels[k], v, cfg.Config.Labels)
		}
	}
	// From the base, as distroless sets them (Go's crypto/x509 reads SSL_CERT_FILE); ko
	// appends /ko-app to PATH.
	for _, want := range []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/ko-app"} {
		if !slices.Contains(cfg.Config.Env, want) {
			t.Errorf("env %q lacks %s", cfg.Config.Env, want)
		}
	}
}

// entry is a file of the image's merged layers.
type entry struct {
	header *tar.Header
	body   []byte
}

// files reads every layer of the archive's image, later layers over earlier ones.
func files(t *testing.T, archive string) map[string]entry {
	t.Helper()
	_, layers := manifest(t, archive)
	all := map[string]entry{}
	for _, l := range layers {
		b, err := image.ReadFile(archive, l)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = bytes.NewReader(b)
		if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			if r, err = gzip.NewReader(r); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
		}
		tr := tar.NewReader(r)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			body, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("%s: %s: %v", l, h.Name, err)
			}
			// ko writes absolute names (/ko-app/...), hack/image relative ones.
			all[strings.Trim(strings.TrimPrefix(h.Name, "./"), "/")] = entry{h, body}
		}
	}
	return all
}

func TestFilesOfTheBase(t *testing.T) {
	archive, _ := built(t)
	fs := files(t, archive)
	for name, check := range map[string]func(entry) bool{
		"ko-app/kubectl-finalize": func(e entry) bool {
			return e.header.Typeflag == tar.TypeReg && e.header.Mode&0o111 != 0 && bytes.HasPrefix(e.body, []byte("\x7fELF"))
		},
		"etc/ssl/certs/ca-certificates.crt": func(e entry) bool {
			return bytes.Count(e.body, []byte("-----BEGIN CERTIFICATE-----")) > 100
		},
		"usr/share/zoneinfo/Etc/UTC":       func(e entry) bool { return bytes.HasPrefix(e.body, []byte("TZif")) },
		"usr/share/zoneinfo/Europe/Berlin": func(e entry) bool { return bytes.HasPrefix(e.body, []byte("TZif")) },
		"usr/share/zoneinfo/UTC":           func(e entry) bool { return e.header.Typeflag == tar.TypeSymlink && e.header.Linkname == "Etc/UTC" },
		"etc/passwd": func(e entry) bool {
			return strings.Contains(string(e.body), "\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
		},
		"etc/group": func(e entry) bool { return strings.Contains(string(e.body), "\nnonroot:x:65532:\n") },
		"home/nonroot": func(e entry) bool {
			return e.header.Typeflag == tar.TypeDir && e.header.Uid == 65532 && e.header.Gid == 65532
		},
		"tmp": func(e entry) bool { return e.header.Typeflag == tar.TypeDir && e.header.Mode&0o1777 == 0o1777 },
		"etc/nsswitch.conf": func(e entry) bool {
			return strings.Contains(string(e.body), "hosts:          files dns")
		},
	} {
		e, ok := fs[name]
		if !ok {
			t.Errorf("the image has no %s; it has %d entries: %v...", name, len(fs), slices.Sorted(maps.Keys(fs))[:min(20, len(fs))])
			continue
		}
		if !check(e) {
			t.Errorf("%s: unexpected %+v (%d bytes)", name, *e.header, len(e.body))
		}
	}
	// No shell, as in distroless: the pod's args can only go to kubectl-finalize.
	for _, name := range []string{"bin/sh", "usr/bin/sh", "bin/busybox"} {
		if _, ok := fs[name]; ok {
			t.Errorf("the image has %s", name)
		}
	}
}

func TestPodRunsTheReleaseReadOnly(t *testing.T) {
	_, ref := built(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if _, err := image.Release(ctx, cp); err != nil {
		t.Fatalf("loading the release image: %v", err)
	}
	_, version, ok := strings.Cut(ref, ":")
	if !ok {
		t.Fatalf("reference %q has no tag", ref)
	}
	ns := cp.Namespace(t)
	c := cp.Kube(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "version"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "kubectl-finalize", Image: ref, ImagePullPolicy: corev1.PullNever, Args: []string{"version"},
				// The securityContext docs/deploy gives the CronJob: the kubelet refuses to
				// start an image whose user is root (runAsNonRoot), and nothing is written.
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot:             ptr.To(true),
					ReadOnlyRootFilesystem:   ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	cp.NetworkOverlay(&pod.Spec)
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := fixture.WaitPodDone(t, c, ns, pod.Name, 2*time.Minute)
	log := fixture.PodLog(t, c, ns, pod.Name)
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod %s: %+v\nlog: %s\nevents:\n%s", done.Status.Phase, done.Status.ContainerStatuses, log, fixture.Events(c, ns))
	}
	if want := "kubectl-finalize " + version + "\n"; log != want {
		t.Errorf("log %q, want %q", log, want)
	}
}

// TestTheRuntimeHoldsTheArchive: the image pods run is the one the archive holds, read
// back from the node's containerd after image.Release imported it: the image the
// runtime names by the release's reference has the archive's config (the same digest,
// so the same user, entrypoint, platform, labels and layers' diff IDs) and the archive's
// layers, all of them in the runtime's content store.
func TestTheRuntimeHoldsTheArchive(t *testing.T) {
	archive, ref := built(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if _, err := image.Release(ctx, cp); err != nil {
		t.Fatalf("loading the release image: %v", err)
	}
	wantCfg, wantCfgBytes, layers := archiveImage(t, archive)
	wantDigest := digestOf(wantCfgBytes)

	// images ls prints REF TYPE DIGEST SIZE PLATFORMS LABELS, the size in two words
	// ("12.3 MiB").
	out, err := cp.Node.Ctr(ctx, "images", "ls", "name=="+ref)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "REF ") {
		t.Fatalf("ctr images ls name==%s: want a header and one image:\n%s", ref, out)
	}
	row := strings.Fields(lines[1])
	if len(row) < 6 || row[0] != ref {
		t.Fatalf("ctr images ls name==%s: unexpected row %q", ref, lines[1])
	}
	target, platforms := row[2], row[5]
	if want := "linux/" + runtime.GOARCH; platforms != want {
		t.Errorf("the runtime lists %s for platforms %s, want %s", ref, platforms, want)
	}

	// The image's target: a manifest, or an index naming one for linux/GOARCH.
	m := manifestAt(ctx, t, target)
	if len(m.Manifests) > 0 {
		var found []string
		for _, d := range m.Manifests {
			if d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
				found = append(found, d.Digest)
			}
		}
		if len(found) != 1 {
			t.Fatalf("the runtime's index %s of %s: %d manifests for linux/%s, want one: %+v", target, ref, len(found), runtime.GOARCH, m.Manifests)
		}
		m = manifestAt(ctx, t, found[0])
	}
	if m.Config.Digest != wantDigest {
		t.Errorf("the runtime's %s has config %s, the archive's is %s: not the same image", ref, m.Config.Digest, wantDigest)
	}
	raw, err := cp.Node.Ctr(ctx, "content", "get", m.Config.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if got := digestOf(raw); got != m.Config.Digest || !bytes.Equal(raw, wantCfgBytes) {
		t.Errorf("the runtime's config blob %s has digest %s (%d bytes), want the archive's %s (%d bytes)", m.Config.Digest, got, len(raw), wantDigest, len(wantCfgBytes))
	}
	var cfg imageConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("the runtime's config %s: %v", m.Config.Digest, err)
	}
	checkConfig(t, cfg)
	if cfg.Config.User != wantCfg.Config.User || !slices.Equal(cfg.Config.Entrypoint, wantCfg.Config.Entrypoint) ||
		cfg.OS != wantCfg.OS || cfg.Architecture != wantCfg.Architecture {
		t.Errorf("the runtime's config %+v, the archive's %+v", cfg, wantCfg)
	}
	t.Logf("%s in the node's containerd: target %s, config %s (user %s, entrypoint %q, %s/%s), as in the archive",
		ref, target, m.Config.Digest, cfg.Config.User, cfg.Config.Entrypoint, cfg.OS, cfg.Architecture)

	// The layers: the archive's blobs, in its order, each in the runtime's content store.
	var want []string
	for _, l := range layers {
		b, err := image.ReadFile(archive, l)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, digestOf(b))
	}
	out, err = cp.Node.Ctr(ctx, "content", "ls", "-q")
	if err != nil {
		t.Fatal(err)
	}
	stored := strings.Fields(string(out))
	var got []string
	for _, l := range m.Layers {
		got = append(got, l.Digest)
		if !slices.Contains(stored, l.Digest) {
			t.Errorf("layer %s of %s is not in the runtime's content store", l.Digest, ref)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the runtime's layers of %s %v, the archive's %v", ref, got, want)
	}
}

// ociManifest is the part of an image manifest or index (OCI or Docker's) the test reads.
type ociManifest struct {
	MediaType string `json:"mediaType"`
	Config    struct {
		Digest string `json:"digest"`
	} `json:"config"`
	Layers []struct {
		Digest string `json:"digest"`
	} `json:"layers"`
	Manifests []struct {
		Digest   string `json:"digest"`
		Platform struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
		} `json:"platform"`
	} `json:"manifests"`
}

// manifestAt decodes the manifest or index digest of the node's content store.
func manifestAt(ctx context.Context, t *testing.T, digest string) ociManifest {
	t.Helper()
	var v ociManifest
	b, err := cp.Node.Ctr(ctx, "content", "get", digest)
	if err != nil {
		t.Fatal(err)
	}
	if got := digestOf(b); got != digest {
		t.Fatalf("content %s of the node's containerd has digest %s", digest, got)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("content %s of the node's containerd: %v\n%s", digest, err, b)
	}
	return v
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return fmt.Sprintf("sha256:%s", hex.EncodeToString(sum[:]))
}
