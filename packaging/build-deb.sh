#!/usr/bin/env bash
# make deb: build the Debian packages (gpuslice, libgpuslice0, libgpuslice-dev) with Debian's own
# tooling, from a copy of the source tree, into OUTDIR (default build-deb), then run lintian on them.
#
# usage: packaging/build-deb.sh [OUTDIR]
#
# The copy (OUTDIR/gpuslice-VERSION/) holds what git tracks plus untracked files it does not ignore
# (the working tree as it is, uncommitted changes included; every file when there is no git), the
# commit in .commit (for `gpuslice --version`), and packaging/debian as debian/. dpkg-buildpackage
# writes the .deb, .buildinfo and .changes files next to it, in OUTDIR. lintian fails the build on
# errors; its warnings are printed (packaging/debian/*.lintian-overrides lists the accepted ones).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/build-deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)
version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$src/meson.build" | head -1)
deb_version=$(dpkg-parsechangelog -l "$src/packaging/debian/changelog" -S Version)
if [ "${deb_version%-*}" != "$version" ]; then
        echo "build-deb: packaging/debian/changelog is at $deb_version, meson.build at $version: add a changelog entry" >&2
        exit 1
fi
# debian/control's Build-Depends and the Makefile's BUILD_DEPS (what `make` builds with) name the
# same packages (gcc and debhelper aside): one cannot drift from the other.
build_deps=$(sed -n 's/^BUILD_DEPS *:= *//p' "$src/Makefile")
control_deps=$(awk '/^Build-Depends:/ { f = 1; sub(/^Build-Depends:/, ""); print; next }
        f && /^[ \t]/ { print; next } { f = 0 }' "$src/packaging/debian/control" | tr ',' '\n' |
        sed 's/(.*//; s/^[[:space:]]*//; s/[[:space:]]*$//' | grep -v '^$')
for p in $build_deps; do
        [ "$p" = gcc ] || grep -qx -- "$p" <<<"$control_deps" ||
                { echo "build-deb: $p is in the Makefile's BUILD_DEPS but not in packaging/debian/control's Build-Depends" >&2; exit 1; }
done
for p in $control_deps; do
        [ "$p" = debhelper-compat ] && continue
        grep -qw -- "$p" <<<"$build_deps" ||
                { echo "build-deb: packaging/debian/control's Build-Depends names $p, which the Makefile's BUILD_DEPS lacks" >&2; exit 1; }
done
stage=$out/gpuslice-$version
rm -rf "$stage" "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
mkdir -p "$stage"

if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$src" && git ls-files -z --cached --others --exclude-standard |
                while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done |
                tar --null -T - -cf -) | tar -C "$stage" -xf -
        git -C "$src" describe --always --dirty --abbrev=12 --exclude='*' >"$stage/.commit"
else
        (cd "$src" && tar --exclude='./build*' --exclude='./.git' -cf - .) | tar -C "$stage" -xf -
fi
rm -rf "$stage/debian"
cp -r "$src/packaging/debian" "$stage/debian"

echo "build-deb: dpkg-buildpackage in $stage (log: $out/build.log)"
if ! (cd "$stage" && dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1; then
        tail -n 40 "$out/build.log" >&2
        echo "build-deb: dpkg-buildpackage failed (log: $out/build.log)" >&2
        exit 1
fi
changes=$(ls "$out"/gpuslice_*.changes)
ls -1 "$out"/*.deb
if [ "${GS_NO_LINTIAN:-}" != 1 ]; then
        echo "build-deb: lintian $(basename "$changes")"
        lintian --fail-on error --display-info --tag-display-limit 0 "$changes" | tee "$out/lintian.log"
fi
