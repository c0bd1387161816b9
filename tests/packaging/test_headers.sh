#!/usr/bin/env bash
# test_headers.sh BUILD_DIR SOURCE_DIR - every public header compiles on its
# own (it includes what it needs) as C11 and as C++17, pedantic and with
# warnings as errors, with every C and C++ compiler found (cc, clang, c++,
# clang++).
set -u
src=${2:?usage: test_headers.sh BUILD_DIR SOURCE_DIR}
inc=$src/include
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

c_compilers=()
for c in cc clang; do command -v "$c" >/dev/null 2>&1 && c_compilers+=("$c"); done
cxx_compilers=()
for c in c++ clang++; do command -v "$c" >/dev/null 2>&1 && cxx_compilers+=("$c"); done
[ ${#c_compilers[@]} -gt 0 ] || { echo "FAIL: no C compiler"; exit 1; }
[ ${#cxx_compilers[@]} -gt 0 ] || { echo "FAIL: no C++ compiler (install g++)"; exit 1; }

n=0
for h in "$inc"/ptc/*.h; do
  name=$(basename "$h")
  printf '#include <ptc/%s>\ntypedef int ptc_header_check_%s;\n' "$name" "${name%.h}" >"$tmp/t.c"
  cp "$tmp/t.c" "$tmp/t.cpp"
  for c in "${c_compilers[@]}"; do
    if ! "$c" -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$inc" "$tmp/t.c" \
        >"$tmp/log" 2>&1; then
      echo "FAIL: $name does not compile alone as C11 with $c:"; cat "$tmp/log"; fail=1
    fi
    n=$((n + 1))
  done
  for c in "${cxx_compilers[@]}"; do
    if ! "$c" -std=c++17 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$inc" "$tmp/t.cpp" \
        >"$tmp/log" 2>&1; then
      echo "FAIL: $name does not compile alone as C++17 with $c:"; cat "$tmp/log"; fail=1
    fi
    n=$((n + 1))
  done
done
[ "$n" -gt 0 ] || { echo "FAIL: no headers in $inc/ptc"; exit 1; }
[ "$fail" -eq 0 ] && echo "ok: $n header compilations (C11: ${c_compilers[*]}; C++17: ${cxx_compilers[*]})"
exit "$fail"
