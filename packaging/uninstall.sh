#!/usr/bin/env bash
# make uninstall: remove what the last `make install` from BUILD_DIR put in place, as meson logged
# it (meson-logs/install-log.txt: files, links and the directories it made) plus the host config
# (meson-logs/install-config.log), which is removed only while it is the shipped one: an edited
# /etc/gpuslice/config.toml stays. Directories go when they are empty, innermost first.
#
# meson logs only the directories one install made, so `make install` calls this with --record
# after each install to keep every directory any install made (meson-logs/install-dirs.log).
#
# usage: packaging/uninstall.sh [BUILD_DIR] [DESTDIR (for the message only: the logs have the paths)]
#        packaging/uninstall.sh --record BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
record=false
if [ "${1:-}" = --record ]; then record=true; shift; fi
build=${1:-build-install}
log=$build/meson-logs/install-log.txt
cfglog=$build/meson-logs/install-config.log
dirlog=$build/meson-logs/install-dirs.log
if $record; then
        grep -v '^#' "$log" | while IFS= read -r p; do
                if [ -d "$p" ] && [ ! -L "$p" ]; then echo "$p"; fi
        done >>"$dirlog"
        exit 0
fi
if [ ! -f "$log" ]; then
        echo "make uninstall: no $log: nothing was installed from $build${2:+ into $2} (run make install first)" >&2
        exit 1
fi
dirs=()
while IFS= read -r p; do
        case $p in '#'* | '') continue ;; esac
        if [ -d "$p" ] && [ ! -L "$p" ]; then
                dirs+=("$p")
        elif [ -e "$p" ] || [ -L "$p" ]; then
                rm -f -- "$p"
                echo "Removed $p"
        fi
done <"$log"
if [ -f "$dirlog" ]; then
        while IFS= read -r d; do dirs+=("$d"); done <"$dirlog"
fi
if [ -f "$cfglog" ]; then
        while read -r kind p; do
                case $kind in
                dir) dirs+=("$p") ;;
                file)
                        if cmp -s "$p" "$src/packaging/config.toml"; then
                                rm -f -- "$p"
                                echo "Removed $p"
                                dirs+=("$(dirname "$p")") # gpuslice's own directory
                        elif [ -e "$p" ]; then
                                echo "Kept $p: it was edited (remove it by hand if it is no longer wanted)"
                        fi
                        ;;
                esac
        done <"$cfglog"
fi
for d in "${dirs[@]+"${dirs[@]}"}"; do
        echo "$(tr -cd / <<<"$d" | wc -c) $d"
done | sort -u | sort -rn | cut -d' ' -f2- | while IFS= read -r d; do
        if rmdir -- "$d" 2>/dev/null; then echo "Removed $d/"; fi
done
rm -f -- "$log" "$cfglog" "$dirlog"
