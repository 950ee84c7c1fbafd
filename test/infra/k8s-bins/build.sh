#!/usr/bin/env bash
# build.sh builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and
# kubelet from the Go module proxy into a cache folder outside the repository, keyed by
# version and by this module's go.sum, and prints that folder on stdout. A fresh clone
# reuses what an earlier clone built; a warm run takes a fraction of a second.
#
#   export KUBEBUILDER_ASSETS=$(hack/k8s-bins/build.sh)
#
# Progress goes to stderr. K8S_BINS_CACHE overrides the cache root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
# A malformed gitVersion makes every binary panic at init: refuse to go on with one.
[[ $k8s_version =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || { echo "build.sh: unexpected k8s.io/kubernetes version '$k8s_version'" >&2; exit 1; }
minor=${BASH_REMATCH[1]}
sum=$(cat go.mod go.sum build.sh ../lib/cache.sh | sha256sum | cut -c1-12)

cache_root=${K8S_BINS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-finalize/k8s-bins}
. ../lib/cache.sh
cache_open "$cache_root" "$cache_root/${k8s_version}-etcd${etcd_version}-${sum}" \
  etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet

ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  ldflags+=" -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

echo "build.sh: building Kubernetes $k8s_version and etcd $etcd_version into $cache_dest (about 10 minutes on 2 cores when cold)" >&2
# Static and -trimpath, as Kubernetes releases its binaries and as the project's own
# release and image are built (.goreleaser.yaml): `make` builds and tests with the same
# CGO_ENABLED=0 and -trimpath, so the packages these share with the project's tests and
# its release (client-go, apimachinery, api: 666 of the 828 its tests compile) have the
# same action IDs, and a cold machine compiles them once, not three times.
export CGO_ENABLED=0
go build -trimpath -ldflags "$ldflags" -o "$cache_tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubectl \
  k8s.io/kubernetes/cmd/kubelet
# The /v3 suffix would name this binary "server".
go build -trimpath -ldflags "-s -w" -o "$cache_tmp/etcd" go.etcd.io/etcd/server/v3

"$cache_tmp/kube-apiserver" --version >&2
"$cache_tmp/kubelet" --version >&2
"$cache_tmp/etcd" --version | head -1 >&2
# Older builds of this version (another go.sum or script) are superseded; the Go build
# cache rebuilds one in seconds if it is needed again.
cache_close "$cache_root/${k8s_version}-etcd*"
