#!/usr/bin/env bash
# test_exports.sh BUILD_DIR SOURCE_DIR - checks the shared library's ABI
# surface: the dynamic symbols it defines are exactly the names listed in
# lib/libptc.map, every one of them carries the version PTC_1.0, and the
# SONAME is libptc.so.1.
set -u
build=${1:?usage: test_exports.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: test_exports.sh BUILD_DIR SOURCE_DIR}
lib=$build/libptc.so.1
map=$src/lib/libptc.map
fail=0
bad() { echo "FAIL: $*"; fail=1; }

[ -e "$lib" ] || { echo "FAIL: $lib does not exist"; exit 1; }
[ -f "$map" ] || { echo "FAIL: $map does not exist"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# Names in the map's global: section (one "name;" per line).
sed -n '/global:/,/local:/p' "$map" | sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p' |
  sort -u >"$tmp/expected"
# Defined dynamic symbols, minus the version node itself (an absolute symbol);
# newer nm appends "@@PTC_1.0" to the name.
nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' | sort -u >"$tmp/actual"

n_expected=$(wc -l <"$tmp/expected")
n_actual=$(wc -l <"$tmp/actual")
[ "$n_expected" -gt 0 ] || bad "no names parsed from $map"
if ! diff -u "$tmp/expected" "$tmp/actual" >"$tmp/diff"; then
  bad "exports differ from lib/libptc.map ('-' listed but not exported, '+' exported but not listed):"
  grep '^[-+][^-+]' "$tmp/diff"
fi

# Every defined dynamic symbol is versioned PTC_1.0 (objdump -T: the version
# is the second-to-last column; *UND* are imports, *ABS* the version node).
objdump -T "$lib" | awk '/^[0-9a-f]+ / && !/\*UND\*/ && !/\*ABS\*/ { print $(NF-1), $NF }' \
  >"$tmp/versions"
while read -r ver name; do
  [ "$ver" = "PTC_1.0" ] || bad "$name has version '$ver', expected PTC_1.0"
done <"$tmp/versions"
[ -s "$tmp/versions" ] || bad "objdump -T listed no defined symbols"

soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[ "$soname" = "libptc.so.1" ] || bad "SONAME is '$soname', expected libptc.so.1"

if [ "$fail" -eq 0 ]; then
  echo "ok: $n_actual exported functions match lib/libptc.map, all PTC_1.0, SONAME $soname"
fi
exit "$fail"
