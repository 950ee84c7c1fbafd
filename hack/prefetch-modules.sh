#!/usr/bin/env bash
# prefetch-modules.sh downloads what every Go module of the repository needs (the
# plugin's, and each of hack/'s and test/infra/'s: the control plane, the linters, the
# release tooling, the metric receivers, the image packer, krew, helm, the CNI plugins,
# provider-kubernetes) into
# the module cache, all at once. On a cold machine `make test` otherwise waits on downloads one module at a
# time between its CPU-bound builds (`go mod tidy -diff` of hack/tools alone fetched for
# six minutes); .ci/run starts this in the background first, so the downloads overlap the
# control plane's build. It runs safely beside other go commands (the module cache locks
# what it writes), and a failure here fails nothing: the step that needs the module
# downloads it again and fails there, naming it. hack/sbom (syft) is left out: only
# `make verify-release` builds it.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; exit 1' TERM INT
for mod in . test/infra/k8s-bins hack/tools hack/release test/infra/receivers hack/image hack/krew hack/helm test/infra/cni test/infra/crossplane; do
  # tidy -diff changes nothing, and fetches every module (and go.mod file) that the
  # build, the tests and `make verify`'s own tidy check of this module need.
  (cd "$mod" && exec go mod tidy -diff >/dev/null) &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
echo "prefetch-modules.sh: done in $(( $(date +%s) - start ))s (exit $rc)" >&2
exit $rc
