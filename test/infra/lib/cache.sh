# cache.sh: the build cache of hack/k8s-bins/build.sh and hack/krew/build.sh. Each builds
# binaries from the Go module proxy into a folder outside the repository, named by a key
# of its sources, so that a fresh clone reuses what an earlier clone built. Sourced, not
# run:
#
#   . "$here/../lib/cache.sh"
#   cache_open "$cache_root" "$dest" etcd kube-apiserver   # exits printing $dest if built
#   go build -o "$cache_tmp/" ...                           # build into $cache_tmp
#   cache_close "$cache_root/${version}-*"                  # publish; prune the others
#
# Concurrent builds of one cache wait for each other on a lock; a build that fails
# leaves nothing behind; a build still in use (a test or the demo running from it) is
# never pruned.

cache_complete() {
  [ -f "$cache_dest/.complete" ] || return 1
  local b
  for b in "${cache_bins[@]}"; do [ -x "$cache_dest/$b" ] || return 1; done
}

# cache_open ROOT DEST BIN...: print DEST and exit if it holds every BIN; otherwise take
# ROOT's lock and make the temporary folder $cache_tmp to build into.
cache_open() {
  cache_root=$1 cache_dest=$2
  shift 2
  cache_bins=("$@")
  if cache_complete; then echo "$cache_dest"; exit 0; fi
  mkdir -p "$cache_root"
  exec 9>"$cache_root/.lock"
  if ! flock -n 9; then
    echo "$(basename "$0"): another build holds $cache_root/.lock; waiting" >&2
    flock 9
  fi
  if cache_complete; then echo "$cache_dest"; exit 0; fi
  cache_tmp=$(mktemp -d "$cache_root/.build-XXXXXX")
  trap 'rm -rf "$cache_tmp"' EXIT
  cache_start=$(date +%s)
}

# cache_close GLOB: mark the build complete, move it to DEST, remove the other folders
# GLOB matches (older keys) unless a running process was started from one, and print DEST.
cache_close() {
  local old
  date -u +%FT%TZ > "$cache_tmp/.complete"
  rm -rf "$cache_dest"
  mv "$cache_tmp" "$cache_dest"
  trap - EXIT
  for old in $1; do
    [ "$old" = "$cache_dest" ] && continue
    if find /proc/[0-9]*/exe -maxdepth 0 -printf '%l\n' 2>/dev/null | grep -q "^$old/"; then continue; fi
    rm -rf "$old"
  done
  echo "$(basename "$0"): done in $(( $(date +%s) - cache_start ))s" >&2
  echo "$cache_dest"
}
