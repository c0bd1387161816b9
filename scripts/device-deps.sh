#!/usr/bin/env bash
# device-deps.sh - brings libffi-dev and libcjson-dev to the GPU machine.
#
# The GPU machine (reached through the session's `device` tool) has gcc, CUDA,
# meson, ninja, pkg-config and Python, but neither libffi-dev nor
# libcjson-dev, and no internet. So the Debian packages are downloaded here
# into .devdeps/ (git-ignored; name it in the tool's `carry` list so it
# travels with the working tree) and unpacked there into a private prefix
# whose paths are exported for the compiler, the linker and pkg-config.
#
#   here:  bash scripts/device-deps.sh download
#   there: eval "$(bash scripts/device-deps.sh env)"    # then meson setup ...
#
# `env` unpacks into $DEVDEPS_PREFIX (default /tmp/devdeps) and prints the
# export lines; it changes nothing on this machine's system folders.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEBS=$ROOT/.devdeps
PACKAGES=(libffi-dev libcjson-dev libcjson1)

download() {
  mkdir -p "$DEBS"
  cd "$DEBS"
  local p
  for p in "${PACKAGES[@]}"; do
    if compgen -G "${p}_*.deb" >/dev/null; then
      echo "device-deps: have $(ls "${p}"_*.deb)"
      continue
    fi
    # apt-get download needs package lists; refresh them once if it fails.
    apt-get download "$p" 2>/dev/null || { apt-get update -qq && apt-get download "$p"; }
  done
  echo "device-deps: $(ls "$DEBS"/*.deb | wc -l) packages in .devdeps/ (add .devdeps to carry)"
}

unpack_env() {
  local prefix=${DEVDEPS_PREFIX:-/tmp/devdeps} f
  compgen -G "$DEBS/*.deb" >/dev/null || {
    echo "device-deps: no .deb files in $DEBS (run 'download' here and carry .devdeps)" >&2
    exit 1
  }
  mkdir -p "$prefix"
  for f in "$DEBS"/*.deb; do dpkg -x "$f" "$prefix"; done
  local lib=$prefix/usr/lib/x86_64-linux-gnu
  # ffi.h sits in Debian's multiarch include folder, hence C_INCLUDE_PATH.
  cat <<ENV
export PKG_CONFIG_PATH=$lib/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}
export PKG_CONFIG_SYSROOT_DIR=$prefix
export C_INCLUDE_PATH=$prefix/usr/include/x86_64-linux-gnu\${C_INCLUDE_PATH:+:\$C_INCLUDE_PATH}
export LIBRARY_PATH=$lib\${LIBRARY_PATH:+:\$LIBRARY_PATH}
export LD_LIBRARY_PATH=$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
ENV
}

case "${1:-download}" in
  download) download ;;
  env) unpack_env ;;
  *)
    echo "usage: $0 [download|env]" >&2
    exit 2
    ;;
esac
