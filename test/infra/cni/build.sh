#!/usr/bin/env bash
# build.sh builds the CNI plugins of the test node's pod network (bridge, host-local and
# loopback, from github.com/containernetworking/plugins on the Go module proxy) into a
# cache folder outside the repository, keyed by this module's go.mod, go.sum and this
# script, and prints that folder on stdout. test/controlplane runs it for
# Options.PodNetwork and points containerd's CNI bin_dir at the folder.
#
#   hack/cni/build.sh    # ~/.cache/kubectl-finalize/cni/v1.9.1-<key>
#
# Progress goes to stderr. CNI_BINS_CACHE overrides the cache root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

version=$(go list -m -f '{{.Version}}' github.com/containernetworking/plugins)
sum=$(cat go.mod go.sum build.sh ../lib/cache.sh | sha256sum | cut -c1-12)
cache_root=${CNI_BINS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-finalize/cni}
. ../lib/cache.sh
cache_open "$cache_root" "$cache_root/${version}-${sum}" bridge host-local loopback

echo "build.sh: building the CNI plugins $version into $cache_dest (about a minute on 2 cores when cold)" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$cache_tmp/" \
  github.com/containernetworking/plugins/plugins/main/bridge \
  github.com/containernetworking/plugins/plugins/ipam/host-local \
  github.com/containernetworking/plugins/plugins/main/loopback
# Builds of older sources are superseded.
cache_close "$cache_root/*"
