#!/usr/bin/env bash
# build.sh builds the real provider-kubernetes (crossplane-contrib, the version pinned by
# go.mod's tool directive) from the Go module proxy, with the stand-in of the one module
# the proxy does not serve (nebius-gosdk-standin), into a cache folder outside the
# repository keyed by go.mod, go.sum, the stand-in and this script, and prints that folder
# on stdout, which then holds:
#
#   crossplane-kubernetes-provider   the provider, named as its image names it (its
#                                    field manager, where it names none, is that name)
#   crds/                            its CustomResourceDefinitions, from its module
#
# About 2.5 minutes cold on 2 cores (modules downloaded), instant when cached.
# CROSSPLANE_BINS_CACHE overrides the cache root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

sum=$( (sha256sum go.mod go.sum build.sh ../lib/cache.sh; find nebius-gosdk-standin -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-12)
cache_root=${CROSSPLANE_BINS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-finalize/crossplane}
. ../lib/cache.sh
cache_open "$cache_root" "$cache_root/$sum" crossplane-kubernetes-provider

echo "build.sh: building provider-kubernetes into $cache_dest (about 2.5 minutes on 2 cores when the modules are cached)" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$cache_tmp/crossplane-kubernetes-provider" github.com/crossplane-contrib/provider-kubernetes/cmd/provider
mkdir -p "$cache_tmp/crds"
cp "$(go list -m -f '{{.Dir}}' github.com/crossplane-contrib/provider-kubernetes)"/package/crds/*.yaml "$cache_tmp/crds/"
chmod u+w "$cache_tmp/crds/"*.yaml
cache_close "$cache_root/*"
