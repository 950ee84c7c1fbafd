package main

import (
	"strings"
	"testing"
)

func TestDerive(t *testing.T) {
	src := "project_name: p\nbuilds:\n  - id: a\n    goos: [linux, darwin]\n    goarch: [amd64, arm64]\n    ldflags: [\"-X v={{ .Tag }}\"]\narchives:\n  - formats: [tar.gz]\n"
	out, err := derive([]byte(src), "darwin", "arm64")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"goos: [darwin]\n", "goarch: [arm64]\n", "-X v={{ .Tag }}", "archives:"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	for name, bad := range map[string]string{
		"no builds":       "project_name: p\n",
		"no goos":         "builds:\n  - goarch: [amd64]\n",
		"targets":         "builds:\n  - goos: [linux]\n    goarch: [amd64]\n    targets: [linux_amd64_v1]\n",
		"ignore":          "builds:\n  - goos: [linux]\n    goarch: [amd64]\n    ignore: [{goos: linux}]\n",
		"goamd64":         "builds:\n  - goos: [linux]\n    goarch: [amd64]\n    goamd64: [v3]\n",
		"not the host os": "builds:\n  - goos: [windows]\n    goarch: [amd64]\n",
	} {
		if _, err := derive([]byte(bad), "linux", "amd64"); err == nil {
			t.Errorf("%s: derived", name)
		}
	}
}
