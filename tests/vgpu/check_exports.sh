#!/usr/bin/env bash
# Every hook listed in src/vgpu/hooks.h (and dlsym, dlvsym) must be exported by libgpuslice-vgpu.so, with
# default visibility, in whatever build type this library was built with; nothing else may be.
set -uo pipefail
src=$1 lib=$2
want=$(grep -oE '^[[:space:]]*[XN]\((cu|nvml)[A-Za-z0-9_]+\)' "$src/src/vgpu/hooks.h" | sed -E 's/.*\((.*)\)/\1/' | sort)
want=$(printf '%s\ndlsym\ndlvsym\n' "$want" | sort)
have=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TW]$/ {print $3}' | sort)
missing=$(comm -23 <(echo "$want") <(echo "$have"))
extra=$(comm -13 <(echo "$want") <(echo "$have") | grep -vE '^(_init|_fini)$')
n=$(echo "$want" | grep -c .)
[ -z "$missing" ] && echo "ok - all $n hooks exported by $lib" || echo "not ok - missing exports: $missing"
[ -z "$extra" ] && echo "ok - nothing else exported" || echo "not ok - unexpected exports: $extra"
[ -z "$missing" ] && [ -z "$extra" ]
