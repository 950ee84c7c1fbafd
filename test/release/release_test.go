// Package release tests what a release ships, against the snapshot goreleaser built into
// dist/: the krew manifest template rendered as krew-release-bot renders it, checked by
// krew-index's validate-krew-manifest and installed by the real krew (both v0.4.3,
// pinned in hack/krew and built from the module proxy) from a copy of dist/ served on
// loopback, then run through kubectl; the checksums, the SBOMs and the archives' layout.
//
// It needs the snapshot: KUBECTL_FINALIZE_DIST names goreleaser's dist folder and
// KUBECTL_FINALIZE_PLATFORMS says which platforms it holds: "host" (`make test` builds
// this machine's platform only) or "all" (`make verify-release` builds all six). Unset, the
// set is read from dist/ and must be one of the two. The tests check exactly that set and
// say which.
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
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/template"

	"golang.org/x/mod/modfile"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-finalize/kubectl-finalize/test/controlplane"
)

// allPlatforms are the platforms of a release: .goreleaser.yaml builds them and
// plugins/finalize.yaml names an archive for each.
var allPlatforms = []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64"}

// releaseURL is where krew-release-bot's manifest points: the GitHub release of the tag.
const releaseURL = "https://github.com/kubectl-finalize/kubectl-finalize/releases/download/"

// snapshot is the snapshot in dist/ and the platforms it was built for.
type snapshot struct {
	dir, tag  string
	mode      string            // "host" or "all"
	archives  map[string]string // platform (os/arch) -> archive file name
	platforms []string          // sorted keys of archives
}

var archiveName = regexp.MustCompile(`^kubectl-finalize_(v[^_]+)_([a-z0-9]+)_([a-z0-9]+)\.(tar\.gz|zip)$`)

// load reads the snapshot and fails unless it holds exactly the platforms asked for.
func load(t *testing.T) *snapshot {
	t.Helper()
	dir := os.Getenv("KUBECTL_FINALIZE_DIST")
	if dir == "" {
		t.Skip("needs the snapshot archives: make verify (this machine's platform) and make verify-release (all six) build them and run this test")
	}
	s := &snapshot{dir: dir, archives: map[string]string{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		m := archiveName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if s.tag != "" && s.tag != m[1] {
			t.Fatalf("archives of two tags in %s: %s and %s", dir, s.tag, m[1])
		}
		s.tag = m[1]
		s.archives[m[2]+"/"+m[3]] = e.Name()
	}
	s.platforms = slices.Sorted(maps.Keys(s.archives))
	host := []string{runtime.GOOS + "/" + runtime.GOARCH}
	switch s.mode = os.Getenv("KUBECTL_FINALIZE_PLATFORMS"); s.mode {
	case "host":
		if !slices.Equal(s.platforms, host) {
			t.Fatalf("KUBECTL_FINALIZE_PLATFORMS=host: want the archive of %v alone in %s, it holds %v", host, dir, s.platforms)
		}
	case "all":
		if !slices.Equal(s.platforms, allPlatforms) {
			t.Fatalf("KUBECTL_FINALIZE_PLATFORMS=all: want the archives of %v in %s, it holds %v", allPlatforms, dir, s.platforms)
		}
	case "":
		switch {
		case slices.Equal(s.platforms, host):
			s.mode = "host"
		case slices.Equal(s.platforms, allPlatforms):
			s.mode = "all"
		default:
			t.Fatalf("%s holds the archives of %v: neither this machine's platform alone (%v) nor all six", dir, s.platforms, host)
		}
	default:
		t.Fatalf("KUBECTL_FINALIZE_PLATFORMS=%q: want host or all", s.mode)
	}
	if s.mode == "host" {
		t.Logf("checking the host-only snapshot (%s) in %s: %v; make verify-release checks all six platforms", s.tag, dir, s.platforms)
	} else {
		t.Logf("checking the full snapshot (%s) in %s: all six platforms %v", s.tag, dir, s.platforms)
	}
	return s
}

// render renders plugins/finalize.yaml as krew-release-bot does for the snapshot's tag
// (TagName, and addURIAndSha with the sha256 of each archive), with every uri moved from
// the GitHub release to base, and keeps the platforms the snapshot holds: all six, or in
// a host-only snapshot this machine's alone. It returns the manifest and the template's
// platforms.
func (s *snapshot) render(t *testing.T, base string) (rendered []byte, templatePlatforms []string) {
	t.Helper()
	tpl, err := os.ReadFile("../../plugins/finalize.yaml")
	if err != nil {
		t.Fatal(err)
	}
	unbuilt := map[string]bool{}
	funcs := template.FuncMap{"addURIAndSha": func(uriTemplate, tag string) (string, error) {
		var uri bytes.Buffer
		if err := template.Must(template.New("uri").Parse(uriTemplate)).Execute(&uri, map[string]string{"TagName": tag}); err != nil {
			return "", err
		}
		name, ok := strings.CutPrefix(uri.String(), releaseURL+tag+"/")
		if !ok || strings.Contains(name, "/") {
			return "", fmt.Errorf("uri %s is not an asset of the release %s%s", uri.String(), releaseURL, tag)
		}
		sum := strings.Repeat("0", 64)
		if slices.Contains(slices.Collect(maps.Values(s.archives)), name) {
			b, err := os.ReadFile(filepath.Join(s.dir, name))
			if err != nil {
				return "", err
			}
			h := sha256.Sum256(b)
			sum = hex.EncodeToString(h[:])
		} else {
			unbuilt[name] = true
		}
		return fmt.Sprintf("uri: %s\n    sha256: %s", strings.TrimSuffix(base, "/")+"/"+name, sum), nil
	}}
	tt, err := template.New("finalize.yaml").Funcs(funcs).Option("missingkey=error").Parse(string(tpl))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tt.Execute(&out, map[string]string{"TagName": s.tag}); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("the rendered manifest: %v\n%s", err, out.Bytes())
	}
	spec, _ := m["spec"].(map[string]any)
	platforms, _ := spec["platforms"].([]any)
	var kept []any
	for i, p := range platforms {
		pm, _ := p.(map[string]any)
		sel, _ := pm["selector"].(map[string]any)
		labels, _ := sel["matchLabels"].(map[string]any)
		osArch := fmt.Sprintf("%v/%v", labels["os"], labels["arch"])
		templatePlatforms = append(templatePlatforms, osArch)
		archive := s.archives[osArch]
		switch uri, _ := pm["uri"].(string); {
		case archive != "" && path.Base(uri) != archive:
			t.Errorf("platforms[%d] (%s) names %s; goreleaser built %s for it", i, osArch, path.Base(uri), archive)
		case archive == "" && !unbuilt[path.Base(uri)]:
			t.Errorf("platforms[%d] (%s) names %s, an archive goreleaser built for another platform", i, osArch, path.Base(uri))
		}
		if archive != "" {
			kept = append(kept, p)
		}
	}
	slices.Sort(templatePlatforms)
	if len(kept) != len(s.platforms) {
		t.Fatalf("the manifest has a platform for %d of the %d archives built (%v); its platforms: %v", len(kept), len(s.platforms), s.platforms, templatePlatforms)
	}
	if len(kept) == len(platforms) {
		return out.Bytes(), templatePlatforms
	}
	spec["platforms"] = kept
	b, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b, templatePlatforms
}

// krewBins builds krew and validate-krew-manifest (hack/krew/build.sh, instant when
// cached) and returns their folder.
func krewBins(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("../../hack/krew/build.sh")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("building krew with hack/krew/build.sh: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	for _, b := range []string{"kubectl-krew", "validate-krew-manifest"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// serve serves the snapshot's folder on loopback and counts the requests of each file.
func (s *snapshot) serve(t *testing.T) (url string, requests func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	count := map[string]int{}
	files := http.FileServer(http.Dir(s.dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		count[path.Base(r.URL.Path)]++
		mu.Unlock()
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(count)
	}
}

// run runs a command with env on top of a clean environment: PATH as given, no
// kubeconfig, and any HTTP that is not to loopback sent to a closed loopback port.
func run(t *testing.T, dir, pathList string, env []string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	if !strings.Contains(name, "/") {
		// Found on the given PATH, not the test's.
		for _, d := range filepath.SplitList(pathList) {
			if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.Mode()&0o111 != 0 {
				name = filepath.Join(d, name)
				break
			}
		}
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{
		"PATH=" + pathList,
		"HOME=" + dir,
		"KUBECONFIG=" + filepath.Join(dir, "no-kubeconfig"),
		"KREW_NO_UPGRADE_CHECK=1",
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=",
	}, env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// TestKrewInstallsTheRelease renders the manifest, has krew-index's
// validate-krew-manifest check it (installing every platform the snapshot holds, each
// archive downloaded from dist/ served on loopback), installs this machine's archive with
// `kubectl krew install --manifest --archive` as a plugin author does, follows the
// caveat's instruction for completion, and runs the plugin through kubectl.
func TestKrewInstallsTheRelease(t *testing.T) {
	s := load(t)
	krew := krewBins(t)
	k8s, err := controlplane.BinDir("")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	manifestDir := filepath.Join(work, "manifest")
	if err := os.Mkdir(manifestDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// validate-krew-manifest names the plugin after the file.
	manifestFile := filepath.Join(manifestDir, "finalize.yaml")
	tools := strings.Join([]string{krew, k8s, "/usr/bin", "/bin"}, string(os.PathListSeparator))

	// The manifest as krew-release-bot renders it, pointing at the GitHub release: krew's
	// structural checks only (-skip-install: nothing is downloaded).
	released, templatePlatforms := s.render(t, releaseURL+s.tag)
	if !slices.Equal(templatePlatforms, allPlatforms) {
		t.Errorf("plugins/finalize.yaml has platforms %v, want %v", templatePlatforms, allPlatforms)
	}
	if err := os.WriteFile(manifestFile, released, 0o644); err != nil { //nolint:gosec // a test file
		t.Fatal(err)
	}
	if _, errOut, err := run(t, work, tools, nil, "validate-krew-manifest", "-manifest", manifestFile, "-skip-install"); err != nil {
		t.Fatalf("validate-krew-manifest refuses the released manifest: %v\n%s\n%s", err, errOut, released)
	}
	checkNaming(t, released)

	// The same manifest with the archives served from dist/ on loopback: validation
	// installs each of its platforms from there.
	url, requests := s.serve(t)
	served, _ := s.render(t, url)
	if err := os.WriteFile(manifestFile, served, 0o644); err != nil { //nolint:gosec // a test file
		t.Fatal(err)
	}
	out, errOut, err := run(t, work, tools, nil, "validate-krew-manifest", "-manifest", manifestFile)
	if err != nil {
		t.Fatalf("validate-krew-manifest: %v\n%s%s\n%s", err, out, errOut, served)
	}
	if want := fmt.Sprintf("all %d spec.platforms installed fine", len(s.platforms)); !strings.Contains(errOut, want) {
		t.Errorf("validate-krew-manifest did not say %q:\n%s", want, errOut)
	}
	got := requests()
	for _, p := range s.platforms {
		if got[s.archives[p]] == 0 {
			t.Errorf("validate-krew-manifest installed %s without downloading %s from loopback (requests: %v)", p, s.archives[p], got)
		}
	}
	t.Logf("validate-krew-manifest installed %d platform(s) from %s: %v", len(s.platforms), url, s.platforms)

	// kubectl krew install --manifest --archive, into a fresh KREW_ROOT with its bin on
	// PATH as krew's setup asks; it must not download anything.
	root := filepath.Join(work, "krew-root")
	krewEnv := []string{"KREW_ROOT=" + root}
	userPath := filepath.Join(root, "bin") + string(os.PathListSeparator) + tools
	archive := filepath.Join(s.dir, s.archives[runtime.GOOS+"/"+runtime.GOARCH])
	out, errOut, err = run(t, work, userPath, krewEnv, "kubectl", "krew", "install", "--manifest="+manifestFile, "--archive="+archive)
	if err != nil || !strings.Contains(errOut, "Installed plugin: finalize") {
		t.Fatalf("kubectl krew install: %v\n%s%s", err, out, errOut)
	}
	if after := requests(); !maps.Equal(after, got) {
		t.Errorf("kubectl krew install --archive downloaded: requests went from %v to %v", got, after)
	}
	// krew's record of the install (`kubectl krew list` reads it, but first wants an index,
	// which only `kubectl krew update` fetches, from GitHub).
	if receipt, err := os.ReadFile(filepath.Join(root, "receipts", "finalize.yaml")); err != nil || !strings.Contains(string(receipt), "version: "+s.tag) {
		t.Errorf("krew's receipt of finalize %s: %v\n%s", s.tag, err, receipt)
	}

	// The caveat's command links the completion script beside the plugin.
	var m struct {
		Spec struct {
			Caveats string `json:"caveats"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(served, &m); err != nil {
		t.Fatal(err)
	}
	ln := regexp.MustCompile(`(?m)^\s*(ln -s .*\\\n\s*.*)$`).FindStringSubmatch(m.Spec.Caveats)
	if ln == nil {
		t.Fatalf("no ln -s command in the caveats:\n%s", m.Spec.Caveats)
	}
	if out, errOut, err := run(t, work, userPath, krewEnv, "sh", "-c", ln[1]); err != nil {
		t.Errorf("the caveat's %q: %v %s%s", ln[1], err, out, errOut)
	}

	kubectl := func(args ...string) (string, string) {
		out, errOut, _ := run(t, work, userPath, krewEnv, "kubectl", args...)
		return out, errOut
	}
	if out, errOut := kubectl("finalize", "version"); out != "kubectl-finalize "+s.tag+"\n" {
		t.Errorf("kubectl finalize version: %q %q", out, errOut)
	} else {
		t.Logf("kubectl krew install --manifest --archive=%s, then kubectl finalize version: %s", filepath.Base(archive), strings.TrimSpace(out))
	}
	if out, _ := kubectl("finalize", "--version"); out != "kubectl-finalize "+s.tag+"\n" {
		t.Errorf("kubectl finalize --version: %q", out)
	}
	if out, errOut := kubectl("plugin", "list"); !strings.Contains(out, filepath.Join(root, "bin", "kubectl-finalize")) || strings.Contains(strings.ToLower(out+errOut), "warning") {
		t.Errorf("kubectl plugin list: %q %q", out, errOut)
	}
	if out, _ := kubectl("finalize", "-h"); !strings.Contains(out, "kubectl finalize [command]") {
		t.Errorf("kubectl finalize -h does not say kubectl finalize: %q", out)
	}
	if out, _ := kubectl("__complete", "finalize", "re"); !strings.Contains(out, "reconcile") || !strings.Contains(out, "remove") {
		t.Errorf("completion through the shipped script: %q", out)
	}
}

// checkNaming applies what krew-index reviewers ask of a plugin beyond
// validate-krew-manifest (krew's naming guide): a shortDescription of at most 50
// characters that does not repeat "kubectl" or "plugin".
func checkNaming(t *testing.T, manifest []byte) {
	t.Helper()
	var m struct {
		Spec struct {
			ShortDescription string `json:"shortDescription"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(manifest, &m); err != nil {
		t.Fatal(err)
	}
	for _, problem := range namingProblems(m.Spec.ShortDescription) {
		t.Error(problem)
	}
}

func namingProblems(short string) []string {
	var problems []string
	if len(short) > 50 {
		problems = append(problems, fmt.Sprintf("shortDescription is %d characters; the naming guide wants it short (at most 50)", len(short)))
	}
	if l := strings.ToLower(short); strings.Contains(l, "kubectl") || strings.Contains(l, "plugin") {
		problems = append(problems, fmt.Sprintf("shortDescription %q repeats kubectl or plugin", short))
	}
	return problems
}

func TestNamingProblems(t *testing.T) {
	if p := namingProblems("Fix objects stuck in Terminating, safely"); len(p) > 0 {
		t.Errorf("a good shortDescription: %v", p)
	}
	for _, bad := range []string{"kubectl plugin to fix things", "A Plugin", strings.Repeat("x", 51)} {
		if len(namingProblems(bad)) == 0 {
			t.Errorf("%q: no problem found", bad)
		}
	}
}

// TestGoreleaserBuildsEveryPlatform checks that .goreleaser.yaml builds the six platforms
// the manifest names, whichever set this snapshot holds.
func TestGoreleaserBuildsEveryPlatform(t *testing.T) {
	b, err := os.ReadFile("../../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Builds []struct {
			Goos   []string `json:"goos"`
			Goarch []string `json:"goarch"`
		} `json:"builds"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Builds) != 1 {
		t.Fatalf("%d builds in .goreleaser.yaml, want 1", len(cfg.Builds))
	}
	var got []string
	for _, goos := range cfg.Builds[0].Goos {
		for _, goarch := range cfg.Builds[0].Goarch {
			got = append(got, goos+"/"+goarch)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, allPlatforms) {
		t.Errorf(".goreleaser.yaml builds %v, want %v", got, allPlatforms)
	}
}

// TestTheArchives checks each archive built holds the binary (executable), the
// completion script (executable: krew does not check it) and the license.
func TestTheArchives(t *testing.T) {
	s := load(t)
	for _, p := range s.platforms {
		name := s.archives[p]
		files := archiveFiles(t, filepath.Join(s.dir, name))
		bin := "kubectl-finalize"
		if strings.HasPrefix(p, "windows/") {
			bin += ".exe"
		}
		for _, want := range []string{bin, "LICENSE", "kubectl_complete-finalize"} {
			if _, ok := files[want]; !ok {
				t.Errorf("%s: %s is not in %s (it holds %v)", p, want, name, files)
			}
		}
		for _, exe := range []string{bin, "kubectl_complete-finalize"} {
			if mode, ok := files[exe]; ok && !strings.HasPrefix(p, "windows/") && mode&0o111 == 0 {
				t.Errorf("%s: %s is not executable (%v)", p, exe, mode)
			}
		}
	}
}

// TestChecksumsAndSBOMs checks that checksums.txt holds the sha256 of every archive and
// SBOM built and nothing else, and that each archive has an SPDX SBOM naming the modules
// the binary is built from, at the versions of go.mod. The host-only snapshot of
// `make test` is built without SBOMs (building syft alone takes 4.5 minutes on a cold
// machine); it must then hold none, and `make verify-release` checks them.
func TestChecksumsAndSBOMs(t *testing.T) {
	s := load(t)
	withSBOMs := s.mode == "all"
	if !withSBOMs {
		t.Log("the host-only snapshot has no SBOMs: make verify-release builds and checks them")
	}
	sums, err := os.ReadFile(filepath.Join(s.dir, "checksums.txt"))
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
	var files []string
	for _, p := range s.platforms {
		name := s.archives[p]
		own := []string{name}
		if withSBOMs {
			own = append(own, name+".sbom.json")
		} else if _, err := os.Stat(filepath.Join(s.dir, name+".sbom.json")); err == nil {
			t.Errorf("%s.sbom.json: the host-only snapshot is built without SBOMs (make verify-release builds them)", name)
		}
		files = append(files, own...)
		for _, f := range own {
			b, err := os.ReadFile(filepath.Join(s.dir, f))
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if sum := sha256.Sum256(b); listed[f] != hex.EncodeToString(sum[:]) {
				t.Errorf("checksums.txt says %q for %s, its sha256 is %x", listed[f], f, sum)
			}
		}
		if !withSBOMs {
			continue
		}
		var doc struct {
			SPDXVersion string `json:"spdxVersion"`
			Packages    []struct {
				Name    string `json:"name"`
				Version string `json:"versionInfo"`
			} `json:"packages"`
		}
		b, err := os.ReadFile(filepath.Join(s.dir, name+".sbom.json"))
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
	slices.Sort(files)
	if l := slices.Sorted(maps.Keys(listed)); !slices.Equal(l, files) {
		t.Errorf("checksums.txt lists %v, want %v", l, files)
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
	f, err := os.Open(file)
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
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h.FileInfo().Mode()
	}
}
