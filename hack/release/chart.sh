#!/usr/bin/env bash
# chart.sh packages the chart (docs/deploy/helm/kubectl-finalize) for a release, and
# pushes the package as an OCI artifact, with the pinned helm (hack/helm).
#
#   hack/release/chart.sh package vX.Y.Z OUTDIR [sha256:DIGEST]
#   hack/release/chart.sh push OUTDIR/kubectl-finalize-X.Y.Z.tgz oci://ghcr.io/kubectl-finalize/charts [helm push flags]
#
# package sets the chart's version to X.Y.Z and its appVersion to vX.Y.Z (the image's
# tag), and with a digest, image.releaseDigest: the chart then pulls the image it was
# released with by digest, unless another tag or digest is asked for. It lints the chart as packaged, and prints the package's
# path. The release workflow passes the digest of the image it published; a snapshot
# (make verify) packages without one, and hack/release/internal/chart checks the
# package, pushed to a registry on loopback and read back.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
helm="$("$root/hack/helm/build.sh")/helm"

case ${1:-} in
package)
  tag=${2:?the release tag, vX.Y.Z}
  out=${3:?the folder to write the package to}
  digest=${4:-}
  [[ $tag == v* ]] || { echo "chart.sh: the tag $tag does not start with v" >&2; exit 2; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp -R "$root/docs/deploy/helm/kubectl-finalize" "$tmp/"
  chart=$tmp/kubectl-finalize
  if [[ -n $digest ]]; then
    [[ $digest =~ ^sha256:[a-f0-9]{64}$ ]] || { echo "chart.sh: $digest is not a sha256 digest" >&2; exit 2; }
    # The one line of values.yaml that holds image.releaseDigest.
    [[ $(grep -c '^  releaseDigest: ""$' "$chart/values.yaml") == 1 ]] || { echo "chart.sh: values.yaml has no single image.releaseDigest line to set" >&2; exit 1; }
    sed -i "s/^  releaseDigest: \"\"$/  releaseDigest: \"$digest\"/" "$chart/values.yaml"
  fi
  for shape in cronjob deployment; do
    "$helm" lint --strict "$chart" -f "$chart/ci/$shape-values.yaml" >&2
  done
  mkdir -p "$out"
  # ci/ is left out by .helmignore.
  "$helm" package "$chart" --version "${tag#v}" --app-version "$tag" --destination "$out" >&2
  echo "$out/kubectl-finalize-${tag#v}.tgz"
  ;;
push)
  package=${2:?the package, from chart.sh package}
  remote=${3:?the registry, oci://HOST/PATH}
  shift 3
  "$helm" push "$package" "$remote" "$@"
  ;;
*)
  echo "usage: chart.sh package vX.Y.Z OUTDIR [sha256:DIGEST] | chart.sh push PACKAGE oci://HOST/PATH [flags]" >&2
  exit 2
  ;;
esac
