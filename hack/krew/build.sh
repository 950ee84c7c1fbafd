#!/usr/bin/env bash
# build.sh builds krew (kubectl-krew, the kubectl plugin manager) and krew-index's manifest
# check (validate-krew-manifest) at the version pinned in go.mod's tool directives, from the
# Go module proxy, into a cache folder outside the repository, keyed by go.mod, go.sum and
# this script, and prints that folder on stdout. A fresh clone reuses what an earlier
# clone built; a warm run takes a fraction of a second. test/release runs it.
#
#   PATH="$(hack/krew/build.sh):$PATH" kubectl krew version
#
# Progress goes to stderr. KREW_BINS_CACHE overrides the cache root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

sum=$(sha256sum go.mod go.sum build.sh ../../test/infra/lib/cache.sh | sha256sum | cut -c1-12)
cache_root=${KREW_BINS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-finalize/krew}
. ../../test/infra/lib/cache.sh
cache_open "$cache_root" "$cache_root/$sum" kubectl-krew validate-krew-manifest

echo "build.sh: building krew into $cache_dest (about 15 seconds on 2 cores when the modules are cached)" >&2
# No version is stamped in: krew then counts as a development build and never asks
# GitHub for a newer release. kubectl finds the plugin manager as kubectl-krew.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$cache_tmp/kubectl-krew" sigs.k8s.io/krew/cmd/krew
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$cache_tmp/validate-krew-manifest" sigs.k8s.io/krew/cmd/validate-krew-manifest
# Builds of older versions are superseded.
cache_close "$cache_root/*"
