#!/usr/bin/env bash
# make install DESTDIR=D PREFIX=/usr into an empty directory: exactly the expected files, where they
# belong; the installed gpuslice finds its interposer; the header, library and gpuslice.pc build a
# program. An edited host config survives a reinstall and `make uninstall` (which removes all the
# rest); unedited, uninstall leaves nothing at all. PREFIX=/usr/local puts the hooks.d file under
# /etc and names the hook in /usr/local/bin.
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH  # meson may add build directories: the packages are built and run the real way
BI=$BUILD/install-test   # make install's build directory (kept: later runs are incremental)
T=$(mktemp -d /tmp/gs-install.XXXXXX)
trap 'rm -rf "$T"' EXIT
nfail=0 nok=0
ok() { nok=$((nok + 1)); echo "ok - $1"; }
not_ok() { nfail=$((nfail + 1)); echo "not ok - $1"; }
mk() { # LOG TARGET VAR=VALUE...: make in the source tree, output in $T/LOG
        local log=$1; shift
        make -s -C "$SRC" "$@" BUILD_INSTALL="$BI" >"$T/$log" 2>&1 || { echo "make $*: failed"; tail -30 "$T/$log"; return 1; }
}
files_in() { (cd "$1" && find . ! -type d | sed 's|^\./||' | sort); }

ma=$(gcc -print-multiarch)
version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$SRC/meson.build" | head -1)
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
expected() {
        {
                echo etc/gpuslice/config.toml
                for u in "$SRC"/packaging/systemd/*; do u=${u##*/}; echo "${unitdir#/}/${u%.in}"; done
                printf '%s\n' usr/bin/gpuslice usr/bin/gpuslice-hook usr/bin/gpuslice-runtime usr/bin/nvidia-container-runtime usr/bin/nvidia-container-runtime-hook usr/include/gpuslice/gpuslice.h \
                        "usr/lib/$ma/gpuslice/libgpuslice-vgpu.so" "usr/lib/$ma/libgpuslice.so" \
                        "usr/lib/$ma/libgpuslice.so.0" "usr/lib/$ma/libgpuslice.so.$version" \
                        "usr/lib/$ma/pkgconfig/gpuslice.pc" usr/share/bash-completion/completions/gpuslice \
                        usr/share/containers/oci/hooks.d/oci-gpuslice-hook.json \
                        usr/share/man/man1/nvidia-container-runtime.1 usr/share/man/man1/nvidia-container-runtime-hook.1
                for p in "$SRC"/packaging/man/*.scd; do p=${p##*/}; p=${p%.scd}; echo "usr/share/man/man${p##*.}/$p"; done
        } | sort
}

# ---- PREFIX=/usr -------------------------------------------------------------------------------
D=$T/root
mk install.log install DESTDIR="$D" PREFIX=/usr || exit 1
if diff <(expected) <(files_in "$D") >"$T/files.diff"; then
        ok "make install PREFIX=/usr: exactly the expected $(expected | wc -l) files"
else
        not_ok "make install PREFIX=/usr installed other files:"; sed 's/^/    # /' "$T/files.diff"
fi
[ "$(readlink "$D/usr/bin/nvidia-container-runtime-hook")" = gpuslice-hook ] &&
        ok "nvidia-container-runtime-hook -> gpuslice-hook (the lean hook)" || not_ok "nvidia-container-runtime-hook is not a link to gpuslice-hook"
[ "$(jq -c '[.hook.path, .hook.args]' "$D/usr/share/containers/oci/hooks.d/oci-gpuslice-hook.json")" = '["/usr/bin/gpuslice-hook",["gpuslice-hook","prestart"]]' ] &&
        ok "hooks.d file runs /usr/bin/gpuslice-hook prestart" || not_ok "hooks.d file: $(jq -c .hook "$D"/usr/share/containers/oci/hooks.d/*.json)"
"$D/usr/bin/gpuslice-hook" --version >"$T/hversion" 2>&1 && grep -Eq "^gpuslice-hook $version " "$T/hversion" &&
        ok "installed gpuslice-hook --version: $(cat "$T/hversion")" || not_ok "installed gpuslice-hook --version: $(cat "$T/hversion")"
grep -qx 'ExecStart=/usr/bin/gpuslice $GPUSLICE_OPTIONS cdi generate --output=/var/run/cdi/nvidia.yaml $GPUSLICE_CDI_OPTIONS' \
        "$D$unitdir/gpuslice-cdi.service" && ok "gpuslice-cdi.service runs /usr/bin/gpuslice" ||
        not_ok "gpuslice-cdi.service ExecStart: $(grep ExecStart= "$D$unitdir/gpuslice-cdi.service")"
cmp -s "$SRC/packaging/config.toml" "$D/etc/gpuslice/config.toml" && ok "the host config is the shipped one" ||
        not_ok "the installed host config differs from packaging/config.toml"
"$D/usr/bin/gpuslice" --version >"$T/version" 2>&1 && grep -Eq "^gpuslice $version \(commit [0-9a-f]{12}(-dirty)?\)$|^gpuslice $version \(commit unknown\)$" "$T/version" &&
        ok "installed gpuslice --version: $(cat "$T/version")" || not_ok "installed gpuslice --version: $(cat "$T/version")"
# The installed layout is one the interposer lookup (next to gpuslice, then ../lib/<multiarch>/gpuslice) finds.
"$D/usr/bin/gpuslice" doctor --json --config "$D/etc/gpuslice/config.toml" >"$T/doctor.json" 2>/dev/null
[ "$(jq -r '.checks[] | select(.name == "interposer") | .message' "$T/doctor.json")" = \
  "$D/usr/lib/$ma/gpuslice/libgpuslice-vgpu.so (mounted into sliced containers at /usr/lib/gpuslice/libgpuslice-vgpu.so)" ] &&
        ok "the installed gpuslice finds the installed interposer" ||
        not_ok "interposer check of the installed gpuslice: $(jq -c '.checks[] | select(.name == "interposer")' "$T/doctor.json")"
# A program built against the installed header, library and gpuslice.pc.
printf '#include <gpuslice/gpuslice.h>\n#include <stdio.h>\nint main(void) { puts(gs_version()); return 0; }\n' >"$T/p.c"
flags=$(PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_LIBDIR=$D/usr/lib/$ma/pkgconfig pkg-config --cflags --libs gpuslice 2>&1)
if cc -I"$D/usr/include" "$T/p.c" -o "$T/p" $flags -L"$D/usr/lib/$ma" 2>"$T/cc.log" &&
        [ "$(LD_LIBRARY_PATH=$D/usr/lib/$ma "$T/p")" = "$version" ]; then
        ok "a program built with pkg-config gpuslice ($flags) links libgpuslice.so.0 and runs"
else
        not_ok "building against the installed library: $flags $(head -5 "$T/cc.log")"
fi

# ---- reinstall over an edited config, uninstall ------------------------------------------------
echo 'nvml-timeout = 20 # edited' >>"$D/etc/gpuslice/config.toml"
cp "$D/etc/gpuslice/config.toml" "$T/edited.toml"
mk reinstall.log install DESTDIR="$D" PREFIX=/usr || exit 1
cmp -s "$T/edited.toml" "$D/etc/gpuslice/config.toml" && grep -q "Kept the edited $D/etc/gpuslice/config.toml" "$T/reinstall.log" &&
        ok "make install again keeps the edited config" || not_ok "make install replaced the edited config"
mk uninstall.log uninstall DESTDIR="$D" || exit 1
left=$(cd "$D" && find . -mindepth 1 | sed 's|^\./||' | sort | tr '\n' ' ')
[ "$left" = "etc etc/gpuslice etc/gpuslice/config.toml " ] && cmp -s "$T/edited.toml" "$D/etc/gpuslice/config.toml" &&
        ok "make uninstall leaves only the edited config" || not_ok "after make uninstall: $left"
grep -q "Kept $D/etc/gpuslice/config.toml: it was edited" "$T/uninstall.log" && ok "... and says so" ||
        not_ok "make uninstall does not say it kept the edited config"
rm -rf "$D"
mk install2.log install DESTDIR="$D" PREFIX=/usr || exit 1
mk uninstall2.log uninstall DESTDIR="$D" || exit 1
left=$(find "$D" 2>/dev/null | tr '\n' ' ')
[ -z "$left" ] && ok "install then uninstall (config unedited) leaves nothing at all" || not_ok "left behind: $left"
if make -s -C "$SRC" uninstall DESTDIR="$D" BUILD_INSTALL="$BI" >"$T/uninstall3.log" 2>&1; then
        not_ok "a second make uninstall succeeds"
elif grep -q "nothing was installed" "$T/uninstall3.log"; then
        ok "a second make uninstall fails, saying nothing is installed"
else
        not_ok "a second make uninstall: $(cat "$T/uninstall3.log")"
fi

# ---- PREFIX=/usr/local -------------------------------------------------------------------------
D=$T/local
mk local.log install DESTDIR="$D" PREFIX=/usr/local || exit 1
[ "$(jq -r .hook.path "$D/etc/containers/oci/hooks.d/oci-gpuslice-hook.json" 2>/dev/null)" = /usr/local/bin/gpuslice-hook ] &&
        ok "PREFIX=/usr/local: hooks.d file in /etc/containers/oci/hooks.d, running /usr/local/bin/gpuslice-hook" ||
        not_ok "PREFIX=/usr/local hooks.d file: $(cd "$D" && find . -name '*.json')"
[ -f "$D/etc/gpuslice/config.toml" ] && [ -f "$D/usr/local/lib/$ma/gpuslice/libgpuslice-vgpu.so" ] &&
        grep -q '^ExecStart=/usr/local/bin/gpuslice ' "$D/usr/local/lib/systemd/system/gpuslice-cdi.service" &&
        ok "PREFIX=/usr/local: config in /etc, interposer in /usr/local/lib/$ma/gpuslice, units in /usr/local/lib/systemd/system" ||
        not_ok "PREFIX=/usr/local layout: $(files_in "$D" | tr '\n' ' ')"
mk local-un.log uninstall DESTDIR="$D" || exit 1
left=$(find "$D" 2>/dev/null | tr '\n' ' ')
[ -z "$left" ] && ok "PREFIX=/usr/local: uninstall leaves nothing" || not_ok "PREFIX=/usr/local left: $left"

echo "# $nok ok, $nfail not ok"
[ "$nfail" -eq 0 ]
