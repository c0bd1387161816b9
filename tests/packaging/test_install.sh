#!/usr/bin/env bash
# test_install.sh BUILD_DIR SOURCE_DIR - installs the build into a temporary
# staging root (meson install --destdir), checks headers, shared and static
# libraries and ptc.pc are there, then builds examples/mlp.c out of tree the
# way a user would (cc + pkg-config, shared and static) and the README's C
# example, and runs them against the installed library.
set -u
build=${1:?usage: test_install.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: test_install.sh BUILD_DIR SOURCE_DIR}
fail=0
bad() { echo "FAIL: $*"; fail=1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

if ! meson install -C "$build" --no-rebuild --destdir "$root" >"$tmp/install.log" 2>&1; then
  echo "FAIL: meson install:"; cat "$tmp/install.log"; exit 1
fi

find_one() { find "$root" -name "$1" \( -type f -o -type l \) | head -n 1; }
pc=$(find_one ptc.pc)
so=$(find_one libptc.so.1)
[ -n "$pc" ] || bad "ptc.pc not installed"
[ -n "$so" ] || bad "libptc.so.1 not installed"
[ -n "$(find_one libptc.a)" ] || bad "libptc.a not installed"
[ -n "$(find_one libptc.so)" ] || bad "libptc.so (development link) not installed"
for h in "$src"/include/ptc/*.h; do
  [ -n "$(find "$root" -path "*/include/ptc/$(basename "$h")")" ] || bad "header $(basename "$h") not installed"
done
[ "$fail" -eq 0 ] || exit 1
[ -n "$(find "$root" -name 'ptc' -path '*/bin/*' -type f)" ] || bad "ptc CLI not installed"

# The staged ptc.pc still names the real prefix (e.g. /usr/local); a copy
# relocated into the staging root goes first on PKG_CONFIG_PATH, and the
# system folders still provide its private requirements (libcjson).
prefix=$(sed -n 's/^prefix=//p' "$pc")
[ -n "$prefix" ] || bad "ptc.pc has no prefix= line"
mkdir -p "$tmp/pc"
sed "s|^prefix=.*|prefix=$root$prefix|" "$pc" >"$tmp/pc/ptc.pc"
export PKG_CONFIG_PATH=$tmp/pc
unset PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
version=$(pkg-config --modversion ptc) || bad "pkg-config cannot read ptc.pc"
[ "$version" = "0.1.0" ] || bad "ptc.pc version '$version', expected 0.1.0"
cflags=$(pkg-config --cflags ptc) || bad "pkg-config --cflags ptc failed"
libs=$(pkg-config --libs ptc) || bad "pkg-config --libs ptc failed"
echo "pkg-config: ptc $version cflags: $cflags libs: $libs"
libdir=$(dirname "$so")

# Shared: build and run the example exactly as README says.
# shellcheck disable=SC2086
if cc -std=c11 -Wall -Wextra -Werror "$src/examples/mlp.c" $cflags $libs -o "$tmp/mlp_shared" \
    >"$tmp/cc.log" 2>&1; then
  if ! LD_LIBRARY_PATH=$libdir ldd "$tmp/mlp_shared" | grep -q "$libdir/libptc.so.1"; then
    bad "mlp_shared does not resolve libptc.so.1 from the install"
  fi
  if LD_LIBRARY_PATH=$libdir "$tmp/mlp_shared" >"$tmp/run.log" 2>&1; then
    tail -n 2 "$tmp/run.log"
  else
    bad "installed mlp (shared) failed:"; cat "$tmp/run.log"
  fi
else
  bad "building examples/mlp.c against the install failed:"; cat "$tmp/cc.log"
fi

# The README's C example, compiled and run the same way (keeps the docs honest).
awk '/^```c$/ { on = 1; next } /^```$/ { if (on) exit } on' "$src/README.md" >"$tmp/readme.c"
# shellcheck disable=SC2086
if [ ! -s "$tmp/readme.c" ]; then
  bad "no \`\`\`c block in README.md"
elif cc -std=c11 -Wall -Wextra -Werror "$tmp/readme.c" $cflags $libs -o "$tmp/readme" \
    >"$tmp/cc.log" 2>&1; then
  out=$(LD_LIBRARY_PATH=$libdir "$tmp/readme" 2>&1)
  [ "$out" = "0 4 0 8 0 12" ] || bad "README example printed '$out', expected '0 4 0 8 0 12'"
else
  bad "README's C example does not build:"; cat "$tmp/cc.log"
fi

# Static: the archive plus the private dependencies pkg-config lists.
slibs=$(pkg-config --libs --static ptc | sed 's/-lptc\b//') || bad "pkg-config --static failed"
# shellcheck disable=SC2086
if cc -std=c11 "$src/examples/mlp.c" $cflags "$libdir/libptc.a" $slibs -o "$tmp/mlp_static" \
    >"$tmp/cc.log" 2>&1; then
  if "$tmp/mlp_static" >"$tmp/run_static.log" 2>&1; then
    cmp -s "$tmp/run.log" "$tmp/run_static.log" || bad "static and shared runs print different output"
  else
    bad "installed mlp (static) failed:"; cat "$tmp/run_static.log"
  fi
else
  bad "static link of examples/mlp.c failed:"; cat "$tmp/cc.log"
fi

[ "$fail" -eq 0 ] && echo "ok: install tree, pkg-config, out-of-tree example (shared + static), README example"
exit "$fail"
