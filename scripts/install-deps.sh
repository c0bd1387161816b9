#!/usr/bin/env bash
# install-deps.sh - installs the Debian 12 packages libptc needs to build and
# test (gcc and clang with OpenMP, meson, cJSON, libffi, PyTorch for the
# differential tests and the Python binding's tests, torchvision for its
# model tests, valgrind). Idempotent: apt is only called for packages
# that are missing, so a second run costs a few dpkg queries.
# Non-interactive.
set -euo pipefail

PACKAGES=(
  meson ninja-build pkg-config gcc g++ libc6-dev clang libclang-rt-14-dev libomp-dev binutils
  libcjson-dev libffi-dev python3-dev python3-torch python3-torchvision python3-pytest python3-numpy
  valgrind
)

missing=()
for p in "${PACKAGES[@]}"; do
  # dpkg-query rather than `dpkg -s | grep -q`: grep -q closing the pipe early
  # would make the pipeline fail under pipefail and report a present package.
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "install-deps: missing packages (${missing[*]}) and not root; install them or run as root" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
