// Package version reports the version of the kubectl-finalize binary.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at release time:
//
//	-ldflags "-X github.com/kubectl-finalize/kubectl-finalize/pkg/version.version=v0.1.0"
//
// Without it, the module version from the build info is used, which is what
// `go install ...@v0.1.0` records.
var version = ""

// Info describes this build.
type Info struct {
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the version of this binary.
func Get() Info {
	info := Info{
		Version:   version,
		GoVersion: runtime.Version(),
		Platform:  fmt.Sprintf("%s/%s", runtime.GOOS, runtime.GOARCH),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				info.GitCommit = s.Value
			}
		}
	}
	if info.Version == "" {
		info.Version = "v0.0.0-dev"
	}
	return info
}

// UserAgent is sent with every request, so audit logs and managedFields name the tool.
func UserAgent() string {
	return fmt.Sprintf("kubectl-finalize/%s (%s/%s)", Get().Version, runtime.GOOS, runtime.GOARCH)
}
