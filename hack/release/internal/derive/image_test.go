package derive

import (
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestImageOfTheReleaseConfiguration(t *testing.T) {
	src, err := os.ReadFile("../../../../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Image(src, ImageOptions{GOARCH: "arm64", Base: "127.0.0.1:5000/base:nonroot", Repository: "127.0.0.1:5000/kubectl-finalize", Dist: "/tmp/dist"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Builds []struct {
			ID     string   `yaml:"id"`
			GOOS   []string `yaml:"goos"`
			GOARCH []string `yaml:"goarch"`
			Skip   bool     `yaml:"skip"`
			Flags  []string `yaml:"flags"`
		} `yaml:"builds"`
		Kos       []map[string]any `yaml:"kos"`
		Release   map[string]any   `yaml:"release"`
		Changelog map[string]any   `yaml:"changelog"`
		Dist      string           `yaml:"dist"`
		Archives  any              `yaml:"archives"`
		SBOMs     any              `yaml:"sboms"`
		Checksum  any              `yaml:"checksum"`
	}
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Builds) != 1 || strings.Join(got.Builds[0].GOOS, ",") != "linux" || strings.Join(got.Builds[0].GOARCH, ",") != "arm64" {
		t.Errorf("builds %+v, want linux/arm64 alone", got.Builds)
	}
	if len(got.Builds) == 1 && (!got.Builds[0].Skip || strings.Join(got.Builds[0].Flags, " ") != "-trimpath") {
		t.Errorf("builds %+v: want it skipped, its flags (ko's defaults) kept", got.Builds)
	}
	if len(got.Kos) != 1 {
		t.Fatalf("kos %+v", got.Kos)
	}
	ko := got.Kos[0]
	for key, want := range map[string]string{
		"base_image":    "127.0.0.1:5000/base:nonroot",
		"repositories":  "[127.0.0.1:5000/kubectl-finalize]",
		"platforms":     "[linux/arm64]",
		"user":          "65532:65532",
		"main":          "./cmd/kubectl-finalize",
		"bare":          "true",
		"creation_time": "{{ .CommitTimestamp }}",
	} {
		if have := strings.TrimSpace(strings.ReplaceAll(fmtValue(ko[key]), "\n", "")); have != want {
			t.Errorf("kos[0].%s = %q, want %q", key, have, want)
		}
	}
	if got.Release["disable"] != true || got.Changelog["disable"] != true || got.Dist != "/tmp/dist" {
		t.Errorf("release %v changelog %v dist %q", got.Release, got.Changelog, got.Dist)
	}
	if got.Archives != nil || got.SBOMs != nil || got.Checksum != nil {
		t.Errorf("kept archives %v, sboms %v or checksum %v", got.Archives, got.SBOMs, got.Checksum)
	}
}

func TestImageRefusesWhatItCannotDerive(t *testing.T) {
	o := ImageOptions{GOARCH: "amd64", Base: "b", Repository: "r", Dist: "d"}
	build := "builds:\n  - id: a\n    goos: [linux]\n    goarch: [amd64]\n"
	for name, bad := range map[string]string{
		"no kos":             build,
		"not this platform":  build + "kos:\n  - platforms: [linux/arm64]\n",
		"no platforms":       build + "kos:\n  - base_image: x\n",
		"repository":         build + "kos:\n  - repository: x\n    platforms: [linux/amd64]\n",
		"build not on linux": "builds:\n  - goos: [darwin]\n    goarch: [amd64]\nkos:\n  - platforms: [linux/amd64]\n",
	} {
		if _, err := Image([]byte(bad), o); err == nil {
			t.Errorf("%s: derived", name)
		}
	}
	if _, err := Image([]byte(build+"kos:\n  - platforms: [linux/amd64]\n"), ImageOptions{GOARCH: "amd64"}); err == nil {
		t.Error("derived without a base, a repository and a dist")
	}
}

func fmtValue(v any) string {
	switch v := v.(type) {
	case []any:
		parts := make([]string, len(v))
		for i, p := range v {
			parts[i] = fmtValue(p)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case string:
		return v
	case bool:
		if v {
			return "true"
		}
		return "false"
	}
	return "?"
}
