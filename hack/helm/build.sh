#!/usr/bin/env bash
# build.sh builds helm at the version pinned in go.mod's tool directive, from the Go
# module proxy, into a cache folder outside the repository, keyed by go.mod, go.sum and
# this script, and prints that folder on stdout. A fresh clone reuses what an earlier
# clone built; a warm run takes a fraction of a second. The chart's tests (test/helm)
# and `make helm-lint` run it.
#
#   PATH="$(hack/helm/build.sh):$PATH" helm version
#
# Progress goes to stderr. HELM_BINS_CACHE overrides the cache root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

sum=$(sha256sum go.mod go.sum build.sh ../../test/infra/lib/cache.sh | sha256sum | cut -c1-12)
cache_root=${HELM_BINS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-finalize/helm}
. ../../test/infra/lib/cache.sh
cache_open "$cache_root" "$cache_root/$sum" helm

echo "build.sh: building helm into $cache_dest (about a minute on 2 cores when the modules are cached)" >&2
version=$(go list -m -f '{{.Version}}' helm.sh/helm/v4)
# The version is stamped as helm's own release does, so that `helm version` and the
# chart's kubeVersion checks see a release, not a development build.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$version" -o "$cache_tmp/helm" helm.sh/helm/v4/cmd/helm
# Builds of older versions are superseded.
cache_close "$cache_root/*"
