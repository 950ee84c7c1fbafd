// Package chart checks the chart's release package (hack/release/chart.sh) as a user
// gets it: packaged at a release's version with the image's digest, pushed as an OCI
// artifact to a registry on loopback (go-containerregistry's, as the image's tests
// use), and read back from there by the pinned helm (hack/helm).
package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestTheReleasedChart: the package is the chart at the release's version, its
// appVersion the image's tag and its image.digest the image's digest, without the CI
// values; pushed to an OCI registry and read back, it renders the released image by tag
// and digest.
func TestTheReleasedChart(t *testing.T) {
	repo := root(t)
	const tag, version = "v0.9.1", "0.9.1"
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	pkg := strings.TrimSpace(run(t, nil, filepath.Join(repo, "hack", "release", "chart.sh"), "package", tag, t.TempDir(), digest))
	if filepath.Base(pkg) != "kubectl-finalize-"+version+".tgz" {
		t.Fatalf("the package is %s", pkg)
	}
	files := contents(t, pkg)
	for _, want := range []string{"Chart.yaml", "values.yaml", "values.schema.json", "templates/cronjob.yaml", "templates/deployment.yaml", "templates/rbac.yaml"} {
		if _, ok := files["kubectl-finalize/"+want]; !ok {
			t.Errorf("the package lacks %s", want)
		}
	}
	for name := range files {
		if strings.HasPrefix(name, "kubectl-finalize/ci/") {
			t.Errorf("the package holds %s: the CI values are not the chart's", name)
		}
	}
	if v := files["kubectl-finalize/values.yaml"]; !strings.Contains(v, `  releaseDigest: "`+digest+`"`) {
		t.Errorf("values.yaml of the package does not set image.releaseDigest to %s", digest)
	}

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	helm := filepath.Join(strings.TrimSpace(run(t, nil, filepath.Join(repo, "hack", "helm", "build.sh"))), "helm")
	home := t.TempDir()
	env := []string{"HELM_CACHE_HOME=" + filepath.Join(home, "cache"), "HELM_CONFIG_HOME=" + filepath.Join(home, "config"), "HELM_DATA_HOME=" + filepath.Join(home, "data")}
	run(t, env, filepath.Join(repo, "hack", "release", "chart.sh"), "push", pkg, "oci://"+host+"/charts", "--plain-http")
	remote := "oci://" + host + "/charts/kubectl-finalize"
	chart := run(t, env, helm, "show", "chart", remote, "--version", version, "--plain-http")
	for _, want := range []string{"name: kubectl-finalize", "version: " + version, "appVersion: " + tag} {
		if !strings.Contains(chart, want) {
			t.Errorf("the chart read back from the registry does not say %q:\n%s", want, chart)
		}
	}
	values := filepath.Join(repo, "docs", "deploy", "helm", "kubectl-finalize", "ci", "cronjob-values.yaml")
	out := run(t, env, helm, "template", "t", remote, "--version", version, "--plain-http", "-f", values, "--show-only", "templates/cronjob.yaml")
	if want := "image: ghcr.io/kubectl-finalize/kubectl-finalize:" + tag + "@" + digest; !strings.Contains(out, want) {
		t.Errorf("the chart read back renders no %q:\n%s", want, out)
	}
	// A tag of the user's own is not pinned to the released image's digest.
	out = run(t, env, helm, "template", "t", remote, "--version", version, "--plain-http", "-f", values, "--show-only", "templates/cronjob.yaml", "--set", "image.tag=v0.9.2")
	if want := "image: ghcr.io/kubectl-finalize/kubectl-finalize:v0.9.2\n"; !strings.Contains(out, want) {
		t.Errorf("with image.tag=v0.9.2 the chart renders no %q:\n%s", want, out)
	}
}

// contents are the package's files and their text.
func contents(t *testing.T, pkg string) map[string]string {
	t.Helper()
	f, err := os.Open(pkg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = string(b)
	}
}
