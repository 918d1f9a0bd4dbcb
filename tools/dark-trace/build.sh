#!/bin/bash
# build.sh OUTDIR: builds OUTDIR/libcuda.so.1 (the tracing driver).
set -e
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
"$here/gen.sh" "$here/../../runtime/exports_gen.c" "$1/stubs.S"
gcc -O1 -g -shared -fPIC -Wall -Wextra -Werror -Wl,-soname,libcuda.so.1 -o "$1/libcuda.so.1" \
	"$here/trace.c" "$here/watch.c" "$here/step.c" "$1/stubs.S" -ldl -lpthread
