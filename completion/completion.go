// Package completion embeds kubectl_complete-finalize, the script kubectl runs to
// complete `kubectl finalize ...`, so the binary can print it (`kubectl finalize
// completion kubectl`). It lives here because go:embed cannot reach parent folders.
package completion

import _ "embed"

// KubectlPluginScript is the content of kubectl_complete-finalize.
//
//go:embed kubectl_complete-finalize
var KubectlPluginScript string
