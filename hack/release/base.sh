#!/usr/bin/env bash
# base.sh builds the base the release image is built on where gcr.io cannot be reached:
# the parts of gcr.io/distroless/static-debian12:nonroot a static Go binary uses, taken
# from this Debian machine's own packages, packed by hack/image into an OCI layout.
#
#   hack/release/base.sh LAYOUT [GOARCH]    # GOARCH: this machine's by default
#
# What it holds, as distroless does: /etc/passwd and /etc/group with root and nonroot
# (65532), /home/nonroot (0700, 65532), /tmp (1777), the CA bundle of ca-certificates at
# /etc/ssl/certs/ca-certificates.crt (SSL_CERT_FILE points at it), tzdata's
# /usr/share/zoneinfo (aliases kept as links), /etc/nsswitch.conf, user 65532:65532 and
# working directory /home/nonroot. What it leaves out is written in docs/releasing.md.
# ca-certificates and tzdata are installed from Debian when missing (that needs root).
set -euo pipefail

layout=${1:?usage: base.sh LAYOUT [GOARCH]}
arch=${2:-$(go env GOARCH)}
root=$(cd "$(dirname "$0")/../.." && pwd)

certs=/etc/ssl/certs/ca-certificates.crt
zones=/usr/share/zoneinfo
if [ ! -s "$certs" ] || [ ! -e "$zones/Etc/UTC" ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "base.sh: $certs or $zones is missing; install them: apt-get install -y ca-certificates tzdata" >&2
    exit 1
  fi
  echo "base.sh: installing ca-certificates and tzdata from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine may have no package lists yet.
  apt-get install -y --no-install-recommends ca-certificates tzdata >&2 ||
    { apt-get update >&2 && apt-get install -y --no-install-recommends ca-certificates tzdata >&2; }
  if [ ! -s "$certs" ] || [ ! -e "$zones/Etc/UTC" ]; then echo "base.sh: still missing after apt-get" >&2; exit 1; fi
fi

# distroless's nsswitch.conf: files only, so the Go resolver never asks a daemon.
nss=$(mktemp)
trap 'rm -f "$nss"' EXIT
printf 'passwd:         files\ngroup:          files\nshadow:         files\ngshadow:        files\n\nhosts:          files dns\nnetworks:       files\n\nprotocols:      db files\nservices:       db files\nethers:         db files\nrpc:            db files\n\nnetgroup:       nis\n' >"$nss"
chmod 0644 "$nss"

rm -rf "$layout"
go -C "$root/hack/image" run . \
  -tag kubectl-finalize.test/static-debian12:nonroot -layout "$layout" -platform "linux/$arch" \
  -passwd nonroot:65532:65532 \
  -dir /tmp:1777:0:0 -dir /home/nonroot:700:65532:65532 \
  -add "$certs:/etc/ssl/certs/ca-certificates.crt" \
  -add "$zones:/usr/share/zoneinfo" -symlinks \
  -add "$nss:/etc/nsswitch.conf" \
  -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  -env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  -user 65532:65532 -workdir /home/nonroot
