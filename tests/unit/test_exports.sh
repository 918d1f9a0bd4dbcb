#!/bin/sh
# SPDX-License-Identifier: MIT
# Usage: test_exports.sh LIBVGPU [STUB]
# Checks that LIBVGPU (a built libvgpu.so) exports, as functions, exactly the
# dynamic symbols of the CUDA driver stub STUB (default: the toolkit's
# lib64/stubs/libcuda.so): every stub symbol present, nothing else exported
# beyond the linker's own. Builds nothing. Exit 0 pass, 1 fail.
set -u

lib=${1:-}
stub=${2:-${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so}
if [ -z "$lib" ] || [ ! -r "$lib" ] || [ ! -r "$stub" ]; then
	echo "usage: $0 LIBVGPU [STUB]   (lib: '${lib}', stub: '${stub}')" >&2
	exit 1
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# name type, one per line, sorted by name
syms() {
	nm -D --defined-only --format=posix "$1" | awk '{ print $1, $2 }' | LC_ALL=C sort -u
}
syms "$stub" >"$tmp/stub.t" && syms "$lib" >"$tmp/ours.t" || { echo "FAIL: nm failed"; exit 1; }
cut -d' ' -f1 "$tmp/stub.t" >"$tmp/stub"
cut -d' ' -f1 "$tmp/ours.t" >"$tmp/ours"

fail=0
LC_ALL=C comm -23 "$tmp/stub" "$tmp/ours" >"$tmp/missing"
# Symbols the static linker may add on its own are not extras.
LC_ALL=C comm -13 "$tmp/stub" "$tmp/ours" |
	grep -Ev '^(_init|_fini|_edata|_end|__bss_start)$' |
	# vgpu's own, for test programs (include/vgpu/export_tables.h).
	grep -Ev '^vgpuDriverExportTableInfo$' >"$tmp/extra"
# Every driver symbol must be a function (T, or W for our weak defaults).
awk '$2 != "T" && $2 != "W" && $2 != "i" { print }' "$tmp/ours.t" |
	grep -Fwf "$tmp/stub" >"$tmp/notfunc"

if [ -s "$tmp/missing" ]; then
	echo "FAIL: $(wc -l <"$tmp/missing") stub symbols not exported by $lib:"
	sed 's/^/  missing: /' "$tmp/missing"
	fail=1
fi
if [ -s "$tmp/extra" ]; then
	echo "FAIL: $(wc -l <"$tmp/extra") symbols exported by $lib that the driver does not export:"
	sed 's/^/  extra: /' "$tmp/extra"
	fail=1
fi
if [ -s "$tmp/notfunc" ]; then
	echo "FAIL: driver symbols exported as non-functions:"
	sed 's/^/  type: /' "$tmp/notfunc"
	fail=1
fi
n=$(wc -l <"$tmp/stub")
strong=$(grep -Fwf "$tmp/stub" "$tmp/ours.t" | awk '$2 == "T"' | wc -l)
if [ $fail -eq 0 ]; then
	echo "exports: PASS, $n driver symbols exported ($strong implemented, $((n - strong)) default NOT_SUPPORTED)"
fi
exit $fail
