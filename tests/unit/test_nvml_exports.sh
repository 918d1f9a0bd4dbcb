#!/bin/sh
# SPDX-License-Identifier: MIT
# Usage: test_nvml_exports.sh LIBNVML
# Checks that LIBNVML (a built libnvidia-ml.so.1) exports, as functions,
# exactly the entry points of NVIDIA's libnvidia-ml (runtime/nvml/nvml.syms), and
# that those written in runtime/nvml/ (NVML_EXPORT) are its strong ones,
# the rest weak defaults (NVML_ERROR_NOT_SUPPORTED). Exit 0 pass, 1 fail.
set -u

lib=${1:-}
if [ -z "$lib" ] || [ ! -r "$lib" ]; then
	echo "usage: $0 LIBNVML" >&2
	exit 1
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
cd "$(dirname "$0")/../.." || exit 1

nm -D --defined-only --format=posix "$lib" | awk '{ print $1, $2 }' | LC_ALL=C sort -u >"$tmp/all" ||
	{ echo "FAIL: nm failed"; exit 1; }
cut -d' ' -f1 "$tmp/all" >"$tmp/names"
awk '$2 == "T" { print $1 }' "$tmp/all" >"$tmp/strong"
awk '$2 != "T" && $2 != "W" { print }' "$tmp/all" >"$tmp/odd"
LC_ALL=C sort -u runtime/nvml/nvml.syms >"$tmp/want"
grep -ho 'NVML_EXPORT [^(]*(' runtime/nvml/*.c | sed 's/($//' | awk '{ print $NF }' |
	sed 's/^\*//' | LC_ALL=C sort -u >"$tmp/written"

fail=0
if ! cmp -s "$tmp/names" "$tmp/want"; then
	echo "FAIL: exports differ from nvml.syms (< exported only, > missing):"
	LC_ALL=C diff "$tmp/names" "$tmp/want" | grep '^[<>]' | head -n 20
	fail=1
fi
if ! cmp -s "$tmp/strong" "$tmp/written"; then
	echo "FAIL: strong exports differ from the calls written (< strong only, > written only):"
	LC_ALL=C diff "$tmp/strong" "$tmp/written" | grep '^[<>]' | head -n 20
	fail=1
fi
if [ -s "$tmp/odd" ]; then
	echo "FAIL: exports that are not functions:"
	head -n 10 "$tmp/odd"
	fail=1
fi
[ $fail -eq 0 ] && echo "PASS: $(wc -l <"$tmp/names") NVML entry points, $(wc -l <"$tmp/strong") written"
exit $fail
