#!/usr/bin/env bash
# The layers of src/ point only down: every `#include "room/..."` (or <room/...>) in src/ names the
# includer's own room or a room below it in src/LAYERS (one layer a line, the top first, rooms of one
# layer on one line). A room beside the includer's (same line) or above it is a failure, named as
# file:line. Every directory under src/ must be listed, and every listed room must exist; the
# public headers (include/) name no room at all.
#
#   tests/layers.sh [SOURCE_ROOT]     (meson test 'layers'; SOURCE_ROOT defaults to this tree)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/check.sh"
top=${1:-$here/..}
cd "$top" || { not_ok "no source tree at $top"; finish; }
list=src/LAYERS
[ -r "$list" ] || { not_ok "$list: missing"; finish; }

declare -A rank
n=0
while read -r line; do
        line=${line%%#*}
        [ -n "${line// /}" ] || continue
        for room in $line; do
                if [ -n "${rank[$room]:-}" ]; then not_ok "$list: room '$room' listed twice"; fi
                rank[$room]=$n
        done
        n=$((n + 1))
done <"$list"
[ "$n" -gt 0 ] || { not_ok "$list: no layer listed"; finish; }

bad=0
for d in src/*/; do
        room=$(basename "$d")
        if [ -z "${rank[$room]:-}" ]; then not_ok "src/$room/ is in no layer of $list"; bad=1; fi
done
for room in "${!rank[@]}"; do
        if [ ! -d "src/$room" ]; then not_ok "$list names '$room', but there is no src/$room/"; bad=1; fi
done
[ "$bad" = 0 ] && ok "every room of src/ is in $list ($n layers, ${#rank[@]} rooms), and only those"

# file:line:text of every include of a path with a directory part, in src/ and include/
files=$(find src include -type f \( -name '*.c' -o -name '*.h' -o -name '*.in' \) | sort)
nfiles=$(wc -l <<<"$files")
up=0 nincl=0
while IFS=: read -r file lno text; do
        [ -n "$file" ] || continue
        inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]*)[">].*/\1/' <<<"$text")
        to=${inc%%/*}
        [ "$to" != "$inc" ] || continue          # no directory part: the includer's own directory
        [ -n "${rank[$to]:-}" ] || continue       # not a room (system, generated, gpuslice/ API)
        nincl=$((nincl + 1))
        case $file in
        include/*)
                not_ok "$file:$lno: includes $inc: a public header names no room of src/"; up=$((up + 1)); continue ;;
        esac
        from=${file#src/}; from=${from%%/*}
        [ "$to" = "$from" ] && continue
        if [ "${rank[$to]}" -lt "${rank[$from]}" ]; then
                not_ok "$file:$lno: includes $inc: $to is above $from ($list)"; up=$((up + 1))
        elif [ "${rank[$to]}" -eq "${rank[$from]}" ]; then
                not_ok "$file:$lno: includes $inc: $to is beside $from, in the same layer ($list)"; up=$((up + 1))
        fi
done < <(grep -nHE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<][^">]*/' $files)
[ "$up" = 0 ] && ok "no include points up or sideways ($nincl includes of a room in $nfiles files)"
finish
