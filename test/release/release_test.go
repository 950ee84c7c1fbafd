// Package release tests what a release ships: the krew manifest template rendered
// against the snapshot archives of `make verify-release`, validated by krew's rules, and
// the archive installed the way krew installs it, then run through kubectl.
//
// It needs the archives: KUBECTL_FINALIZE_DIST names goreleaser's dist folder, and
// `make verify-release` sets it.
package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"text/template"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

// manifest is the part of krew's Plugin (krew.googlecontainertools.github.com/v1alpha2)
// that krew validates.
type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string     `json:"version"`
		Homepage         string     `json:"homepage"`
		ShortDescription string     `json:"shortDescription"`
		Description      string     `json:"description"`
		Caveats          string     `json:"caveats"`
		Platforms        []platform `json:"platforms"`
	} `json:"spec"`
}

type platform struct {
	Selector *metav1.LabelSelector `json:"selector"`
	URI      string                `json:"uri"`
	Sha256   string                `json:"sha256"`
	Bin      string                `json:"bin"`
	Files    []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"files"`
}

func dist(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBECTL_FINALIZE_DIST")
	if dir == "" {
		t.Skip("needs the snapshot archives: make verify-release builds them and runs this test")
	}
	return dir
}

// render renders plugins/finalize.yaml as krew-release-bot does, with the sha256 of each
// snapshot archive.
func render(t *testing.T, dir, tag string) []byte {
	t.Helper()
	tpl, err := os.ReadFile("../../plugins/finalize.yaml")
	if err != nil {
		t.Fatal(err)
	}
	funcs := template.FuncMap{"addURIAndSha": func(uriTemplate, tag string) (string, error) {
		var uri bytes.Buffer
		if err := template.Must(template.New("uri").Parse(uriTemplate)).Execute(&uri, map[string]string{"TagName": tag}); err != nil {
			return "", err
		}
		b, err := os.ReadFile(filepath.Join(dir, path.Base(uri.String())))
		if err != nil {
			return "", fmt.Errorf("the manifest names an archive goreleaser did not build: %w", err)
		}
		sum := sha256.Sum256(b)
		return fmt.Sprintf("uri: %s\n    sha256: %s", uri.String(), hex.EncodeToString(sum[:])), nil
	}}
	t2, err := template.New("finalize.yaml").Funcs(funcs).Parse(string(tpl))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := t2.Execute(&out, map[string]string{"TagName": tag}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// snapshotTag is the tag goreleaser put in the snapshot's archive names.
func snapshotTag(t *testing.T, dir string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, "kubectl-finalize_*_linux_amd64.tar.gz"))
	if len(matches) != 1 {
		t.Fatalf("want one linux/amd64 archive in %s, got %v", dir, matches)
	}
	return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(matches[0]), "kubectl-finalize_"), "_linux_amd64.tar.gz")
}

var (
	safeName = regexp.MustCompile(`^[\w-]+$`)
	sha256RE = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// validate applies krew's rules for a plugin manifest (internal/index/validation of
// sigs.k8s.io/krew, which the Go module proxy does not serve, and the plugin naming
// guide) and returns every problem.
func validate(m *manifest, file string) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" {
		bad("apiVersion %q", m.APIVersion)
	}
	if m.Kind != "Plugin" {
		bad("kind %q", m.Kind)
	}
	name := strings.TrimSuffix(filepath.Base(file), ".yaml")
	if !safeName.MatchString(m.Metadata.Name) || m.Metadata.Name != name {
		bad("the plugin is named %q; the file says %q", m.Metadata.Name, name)
	}
	sd := m.Spec.ShortDescription
	switch {
	case sd == "":
		bad("no shortDescription")
	case strings.ContainsAny(sd, "\r\n"):
		bad("a line break in shortDescription")
	case len(sd) > 50:
		bad("shortDescription is %d characters; the naming guide wants it short (at most 50)", len(sd))
	case strings.Contains(strings.ToLower(sd), "kubectl"), strings.Contains(strings.ToLower(sd), "plugin"):
		bad("shortDescription %q repeats kubectl or plugin", sd)
	}
	if !semver.IsValid(m.Spec.Version) || !strings.HasPrefix(m.Spec.Version, "v") {
		bad("version %q is not a v-prefixed semantic version", m.Spec.Version)
	}
	if m.Spec.Homepage == "" || m.Spec.Description == "" {
		bad("homepage and description are expected")
	}
	if len(m.Spec.Platforms) == 0 {
		bad("no platform")
	}
	for i, p := range m.Spec.Platforms {
		switch {
		case p.URI == "":
			bad("platforms[%d]: no uri", i)
		case !sha256RE.MatchString(p.Sha256):
			bad("platforms[%d]: sha256 %q", i, p.Sha256)
		case p.Bin == "":
			bad("platforms[%d]: no bin", i)
		case p.Files != nil && len(p.Files) == 0:
			bad("platforms[%d]: files is empty", i)
		case p.Selector == nil || (len(p.Selector.MatchLabels) == 0 && len(p.Selector.MatchExpressions) == 0):
			bad("platforms[%d]: no selector", i)
		}
		if p.Selector != nil {
			for k := range p.Selector.MatchLabels {
				if k != "os" && k != "arch" {
					bad("platforms[%d]: selector key %q", i, k)
				}
			}
		}
	}
	return errs
}

func TestTheKrewManifest(t *testing.T) {
	dir := dist(t)
	tag := snapshotTag(t, dir)
	rendered := render(t, dir, tag)
	m := &manifest{}
	if err := yaml.UnmarshalStrict(rendered, m); err != nil {
		t.Fatalf("the rendered manifest: %v\n%s", err, rendered)
	}
	if errs := validate(m, "../../plugins/finalize.yaml"); len(errs) > 0 {
		t.Fatalf("krew would refuse the manifest:\n  %s\n%s", strings.Join(errs, "\n  "), rendered)
	}
	// Every platform of the manifest has its binary at the top of its archive.
	seen := map[string]bool{}
	for _, p := range m.Spec.Platforms {
		goos, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		seen[goos+"/"+arch] = true
		files := archiveFiles(t, filepath.Join(dir, path.Base(p.URI)))
		for _, want := range []string{p.Bin, "LICENSE", "kubectl_complete-finalize"} {
			if _, ok := files[want]; !ok {
				t.Errorf("%s/%s: %s is not in %s (it holds %v)", goos, arch, want, path.Base(p.URI), files)
			}
		}
		if mode := files[p.Bin]; goos != "windows" && mode&0o111 == 0 {
			t.Errorf("%s/%s: %s is not executable (%v)", goos, arch, p.Bin, mode)
		}
	}
	for _, want := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"} {
		if !seen[want] {
			t.Errorf("no platform %s", want)
		}
	}
}

// TestChecksumsAndSBOMs checks that checksums.txt holds the sha256 of every archive and
// SBOM, and that each archive has an SPDX SBOM naming the modules the binary is built
// from, at the versions of go.mod.
func TestChecksumsAndSBOMs(t *testing.T) {
	dir := dist(t)
	sums, err := os.ReadFile(filepath.Join(dir, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("checksums.txt: %q is not \"SHA256  FILE\"", line)
		}
		listed[file] = sum
	}
	goMod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", goMod, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, r := range mf.Require {
		if r.Mod.Path == "k8s.io/client-go" || r.Mod.Path == "github.com/spf13/cobra" {
			want[r.Mod.Path] = r.Mod.Version
		}
	}
	tgz, _ := filepath.Glob(filepath.Join(dir, "kubectl-finalize_*.tar.gz"))
	zips, _ := filepath.Glob(filepath.Join(dir, "kubectl-finalize_*.zip"))
	archives := slices.Concat(tgz, zips)
	if len(archives) != 6 {
		t.Errorf("%d archives in %s, want 6: %v", len(archives), dir, archives)
	}
	for _, a := range archives {
		name := filepath.Base(a)
		for _, f := range []string{name, name + ".sbom.json"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if sum := sha256.Sum256(b); listed[f] != hex.EncodeToString(sum[:]) {
				t.Errorf("checksums.txt says %q for %s, its sha256 is %x", listed[f], f, sum)
			}
		}
		var doc struct {
			SPDXVersion string `json:"spdxVersion"`
			Packages    []struct {
				Name    string `json:"name"`
				Version string `json:"versionInfo"`
			} `json:"packages"`
		}
		b, err := os.ReadFile(a + ".sbom.json")
		if err != nil {
			continue // reported above
		}
		if err := json.Unmarshal(b, &doc); err != nil || doc.SPDXVersion != "SPDX-2.3" {
			t.Errorf("%s.sbom.json is not an SPDX 2.3 document (%v, %q)", name, err, doc.SPDXVersion)
			continue
		}
		got := map[string]string{}
		for _, p := range doc.Packages {
			got[p.Name] = p.Version
		}
		for mod, v := range want {
			if got[mod] != v {
				t.Errorf("%s.sbom.json: %s at %q, go.mod requires %s", name, mod, got[mod], v)
			}
		}
	}
}

// archiveFiles lists the files of an archive with their modes.
func archiveFiles(t *testing.T, file string) map[string]os.FileMode {
	t.Helper()
	out := map[string]os.FileMode{}
	if strings.HasSuffix(file, ".zip") {
		r, err := zip.OpenReader(file)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for _, f := range r.File {
			out[f.Name] = f.Mode()
		}
		return out
	}
	walkTar(t, file, func(h *tar.Header, _ io.Reader) { out[h.Name] = h.FileInfo().Mode() })
	return out
}

// walkTar calls visit with each entry of a .tar.gz archive and its content, in order.
func walkTar(t *testing.T, archive string, visit func(h *tar.Header, content io.Reader)) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		visit(h, tr)
	}
}

// TestTheArchiveInstallsAndRunsThroughKubectl installs the archive of this machine the
// way krew does (extract, link bin onto PATH) and runs it through the real kubectl.
func TestTheArchiveInstallsAndRunsThroughKubectl(t *testing.T) {
	dir := dist(t)
	tag := snapshotTag(t, dir)
	archive := filepath.Join(dir, fmt.Sprintf("kubectl-finalize_%s_%s_%s.tar.gz", tag, runtime.GOOS, runtime.GOARCH))
	root := t.TempDir()
	store := filepath.Join(root, "store", "finalize", tag)
	extract(t, archive, store)
	bin := filepath.Join(root, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"kubectl-finalize", "kubectl_complete-finalize"} {
		if err := os.Symlink(filepath.Join(store, f), filepath.Join(bin, f)); err != nil {
			t.Fatal(err)
		}
	}
	bins, err := controlplane.BinDir("")
	if err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (string, string) {
		cmd := exec.Command(filepath.Join(bins, "kubectl"), args...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+"/usr/bin:/bin", "KUBECONFIG="+filepath.Join(root, "none"))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		return stdout.String(), stderr.String()
	}
	if out, errOut := kubectl("finalize", "version"); out != "kubectl-finalize "+tag+"\n" {
		t.Errorf("kubectl finalize version: %q %q", out, errOut)
	}
	if out, _ := kubectl("finalize", "--version"); out != "kubectl-finalize "+tag+"\n" {
		t.Errorf("kubectl finalize --version: %q", out)
	}
	if out, errOut := kubectl("plugin", "list"); !strings.Contains(out, filepath.Join(bin, "kubectl-finalize")) || strings.Contains(strings.ToLower(out+errOut), "warning") {
		t.Errorf("kubectl plugin list: %q %q", out, errOut)
	}
	if out, _ := kubectl("finalize", "-h"); !strings.Contains(out, "kubectl finalize [command]") {
		t.Errorf("kubectl finalize -h does not say kubectl finalize: %q", out)
	}
	if out, _ := kubectl("__complete", "finalize", "re"); !strings.Contains(out, "reconcile") || !strings.Contains(out, "remove") {
		t.Errorf("completion through the shipped script: %q", out)
	}
}

func extract(t *testing.T, archive, into string) {
	t.Helper()
	walkTar(t, archive, func(h *tar.Header, content io.Reader) {
		target := filepath.Join(into, filepath.Clean("/"+h.Name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, h.FileInfo().Mode())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, content); err != nil { //nolint:gosec // the test's own archive
			t.Fatal(err)
		}
		w.Close()
	})
}

// TestValidateCatchesBadManifests shows the rules catch what krew refuses; it needs no
// archives.
func TestValidateCatchesBadManifests(t *testing.T) {
	good := func() *manifest {
		m := &manifest{APIVersion: "krew.googlecontainertools.github.com/v1alpha2", Kind: "Plugin"}
		m.Metadata.Name = "finalize"
		m.Spec.Version, m.Spec.Homepage, m.Spec.Description = "v1.2.3", "https://example.com", "d"
		m.Spec.ShortDescription = "Fix objects stuck in Terminating, safely"
		m.Spec.Platforms = []platform{{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"os": "linux", "arch": "amd64"}},
			URI:      "https://example.com/a.tar.gz", Sha256: strings.Repeat("a", 64), Bin: "kubectl-finalize",
		}}
		return m
	}
	if errs := validate(good(), "plugins/finalize.yaml"); len(errs) > 0 {
		t.Fatalf("a good manifest: %v", errs)
	}
	for name, spoil := range map[string]func(*manifest){
		"name differs from the file": func(m *manifest) { m.Metadata.Name = "finalizer" },
		"kubectl in short":           func(m *manifest) { m.Spec.ShortDescription = "kubectl plugin to fix things" },
		"long short":                 func(m *manifest) { m.Spec.ShortDescription = strings.Repeat("x", 51) },
		"version without v":          func(m *manifest) { m.Spec.Version = "1.2.3" },
		"bad sha":                    func(m *manifest) { m.Spec.Platforms[0].Sha256 = "abc" },
		"no bin":                     func(m *manifest) { m.Spec.Platforms[0].Bin = "" },
		"no selector":                func(m *manifest) { m.Spec.Platforms[0].Selector = nil },
		"odd selector key":           func(m *manifest) { m.Spec.Platforms[0].Selector.MatchLabels["distro"] = "debian" },
		"no platforms":               func(m *manifest) { m.Spec.Platforms = nil },
	} {
		m := good()
		spoil(m)
		if errs := validate(m, "plugins/finalize.yaml"); len(errs) == 0 {
			t.Errorf("%s: no problem found", name)
		}
	}
}
