#!/usr/bin/env bash
# install-runtime.sh installs the test node's container runtime, containerd and runc, from
# Debian's packages when they are missing, and prints the folder holding containerd, ctr,
# containerd-shim-runc-v2 and runc. It never starts or configures a system service:
# test/controlplane starts containerd itself, with its own config, root, state and socket.
#
#   test/infra/node/install-runtime.sh    # /usr/bin
set -euo pipefail

need=(containerd ctr containerd-shim-runc-v2 runc)
missing() { for b in "${need[@]}"; do command -v "$b" >/dev/null || return 0; done; return 1; }

if missing; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-runtime.sh: containerd and runc are missing and installing them needs root: apt-get install -y containerd runc" >&2
    exit 1
  fi
  command -v apt-get >/dev/null || { echo "install-runtime.sh: containerd and runc are missing and there is no apt-get" >&2; exit 1; }
  echo "install-runtime.sh: installing containerd and runc from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine may have no package lists yet.
  apt-get install -y --no-install-recommends containerd runc >&2 ||
    { apt-get update >&2 && apt-get install -y --no-install-recommends containerd runc >&2; }
  if missing; then echo "install-runtime.sh: containerd or runc still missing after apt-get" >&2; exit 1; fi
fi
dirname "$(command -v containerd)"
