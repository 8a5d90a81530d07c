#!/usr/bin/env bash
# The Debian packages, built as `make deb` builds them, in a clean Debian 12 root:
#   1. packaging/build-deb.sh (dpkg-buildpackage, then lintian): three packages, no lintian error or
#      warning that packaging/debian/*.lintian-overrides does not explain;
#   2. a minimal Debian 12 root (debootstrap --variant=minbase with the packages' dependencies,
#      cached as a tarball in $GS_DEB_ROOT_CACHE), and a simulated driver root inside it (/srv/gpu);
#   3. dpkg -i in a chroot, in a private mount namespace (/proc, /sys, a tmpfs /run);
#      gpuslice --version (the built commit), gpuslice info, gpuslice doctor before and after the
#      command of gpuslice-cdi.service ran, every installed file against dpkg -L, the conffile,
#      the enabled units, the installed man pages;
#   4. dpkg -r: only the edited config (and dpkg's and deb-systemd-helper's records) stay;
#      dpkg -P: nothing is left but dpkg's own logs.
# Needs root, debootstrap and the Debian mirror the first time (then the cached root).
if [ -z "${GS_DEB_NS:-}" ] && [ "$(id -u)" = 0 ]; then
        GS_DEB_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
set -uo pipefail
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (chroot, mknod, mounts)"; exit 77; }
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
unset LD_LIBRARY_PATH  # meson may add build directories: the packages are built and run the real way
for t in dpkg-buildpackage lintian debootstrap jq man; do
        command -v "$t" >/dev/null || { echo "not ok - $t is not installed (make test-deps installs it)"; exit 1; }
done
CACHE=${GS_DEB_ROOT_CACHE:-/var/cache/gpuslice-debian12-root}
OUT=$BUILD/deb-test
T=$(mktemp -d /tmp/gs-deb.XXXXXX)
R=$T/root
cleanup() {
        umount -R "$R/proc" "$R/sys" "$R/run" "$R/mnt" 2>/dev/null
        rm -rf "$T"
}
trap cleanup EXIT
nfail=0 nok=0
ok() { nok=$((nok + 1)); echo "ok - $1"; }
not_ok() { nfail=$((nfail + 1)); echo "not ok - $1"; }
check() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }
in_root() { chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 "$@"; }
finish() { echo "# $nok ok, $nfail not ok"; [ "$nfail" -eq 0 ]; exit $?; }

# ---- 1. build and lintian ----------------------------------------------------------------------
echo "# building the packages (packaging/build-deb.sh $OUT)"
if ! "$SRC/packaging/build-deb.sh" "$OUT" >"$T/build-deb.log" 2>&1; then
        tail -40 "$T/build-deb.log"
        not_ok "packaging/build-deb.sh failed"
        finish
fi
version=$(dpkg-parsechangelog -l "$SRC/packaging/debian/changelog" -S Version)
arch=$(dpkg --print-architecture)
DEBS=()
for p in gpuslice libgpuslice0 libgpuslice-dev; do
        f=$OUT/${p}_${version}_${arch}.deb
        [ -f "$f" ] && DEBS+=("$f") || not_ok "${p}_${version}_${arch}.deb was not built"
done
[ ${#DEBS[@]} = 3 ] && ok "dpkg-buildpackage built gpuslice, libgpuslice0 and libgpuslice-dev $version"
check "lintian ran on the packages" 'grep -q "^build-deb: lintian gpuslice_.*\.changes$" "$T/build-deb.log"'
sed -n '/^build-deb: lintian/,$p' "$T/build-deb.log" | grep -E '^[EWIPN]: ' >"$T/lintian.tags"
if grep -qE '^[EW]: ' "$T/lintian.tags"; then
        not_ok "lintian errors or warnings without an override:"
        grep -E '^[EW]: ' "$T/lintian.tags" | sed 's/^/    # /'
else
        ok "lintian: no error or warning ($(grep -c '^I: ' "$T/lintian.tags") info tags)"
fi
sed 's/^/# lintian: /' "$T/lintian.tags"
[ ${#DEBS[@]} = 3 ] || finish

# ---- 2. a clean Debian 12 root -----------------------------------------------------------------
# The packages' dependencies (first alternative, no versions): the root has exactly what they ask.
deps=$(for d in "${DEBS[@]}"; do dpkg-deb -f "$d" Depends; done | tr ',' '\n' | sed 's/|.*//; s/(.*//; s/ //g' |
        grep -v '^$' | grep -vxE 'gpuslice|libgpuslice0|libgpuslice-dev' | sort -u | tr '\n' ',' | sed 's/,$//')
key=$(printf '%s' "$deps" | sha256sum | cut -c1-16)
tarball=$CACHE/bookworm-minbase-$key.tar
if [ ! -f "$tarball" ]; then
        mirror=${GS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
        echo "# debootstrap --variant=minbase bookworm with $deps (cached as $tarball)"
        mkdir -p "$CACHE/debs" "$T/boot"
        if ! debootstrap --variant=minbase --cache-dir="$CACHE/debs" --include="$deps" bookworm "$T/boot" "$mirror" \
                >"$T/debootstrap.log" 2>&1; then
                tail -5 "$T/debootstrap.log"
                echo "SKIP: debootstrap bookworm from $mirror failed (no mirror reachable?)"
                exit 77
        fi
        find "$CACHE" -maxdepth 1 -name 'bookworm-minbase-*.tar' -delete   # roots for other dependencies
        tar -C "$T/boot" --numeric-owner -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
        rm -rf "$T/boot"
fi
mkdir -p "$R"
tar -C "$R" --numeric-owner -xpf "$tarball" || { not_ok "cannot unpack $tarball"; finish; }
ok "a clean Debian $(cat "$R/etc/debian_version") minbase root with the packages' dependencies: $deps"
# The simulated driver (tests/fakegpu), at /srv/gpu inside the root.
"$SRC/tests/fakegpu/mkroot.sh" --build "$BUILD" "$SRC/tests/fakegpu/configs/2gpu.conf" "$R/srv/gpu" >"$T/mkroot.log" 2>&1 ||
        { cat "$T/mkroot.log"; not_ok "mkroot"; finish; }
chmod 755 "$R/srv" "$R/srv/gpu"

mount -t proc proc "$R/proc"
mount --rbind /sys "$R/sys"
mount -t tmpfs tmpfs "$R/run"        # as on a booted system: run-time state is not on disk
mkdir -p "$R/run/lock"
mount --bind "$OUT" "$R/mnt"
# Every path in the root, before anything is installed (not into the mounts: /mnt is the same
# filesystem, so -xdev alone does not keep out of it).
snapshot() { (cd "$R" && find . -xdev -path ./mnt -prune -o -print | sed 's|^\.||' | sort); }
snapshot >"$T/before"

# ---- 3. install --------------------------------------------------------------------------------
debnames=()
for d in "${DEBS[@]}"; do debnames+=("/mnt/${d##*/}"); done
if in_root dpkg -i "${debnames[@]}" >"$T/install.log" 2>&1; then
        ok "dpkg -i gpuslice libgpuslice0 libgpuslice-dev in the clean root"
else
        not_ok "dpkg -i failed:"; sed 's/^/    # /' "$T/install.log"; finish
fi
for p in gpuslice libgpuslice0 libgpuslice-dev; do
        s=$(in_root dpkg-query -W -f='${Status} ${Version}' "$p" 2>&1)
        [ "$s" = "install ok installed $version" ] || not_ok "$p: $s"
done

commit=$(cat "$OUT/gpuslice-${version%-*}/.commit" 2>/dev/null || echo unknown)
got=$(in_root gpuslice --version 2>&1)
check "gpuslice --version: $got" '[ "$got" = "gpuslice ${version%-*} (commit $commit)" ]'
got=$(in_root nvidia-container-runtime-hook --help 2>&1 | head -1)
check "nvidia-container-runtime-hook is gpuslice hook: $got" '[ "${got#"Usage: gpuslice [GLOBAL OPTIONS] hook [--config FILE] "}" != "$got" ] && [ "${got%" STAGE"}" != "$got" ]'
got=$(in_root gpuslice-hook --version 2>&1)
check "gpuslice-hook --version: $got" '[ "$got" = "gpuslice-hook ${version%-*} (commit $commit)" ]'
# the lean hook as packaged: only libc, json-c, libcap and libseccomp (the package build's own link)
hook_libs=$(readelf -d "$R/usr/bin/gpuslice-hook" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
check "the packaged gpuslice-hook links only libc, json-c, libcap, libseccomp: $hook_libs" \
        '[ "$hook_libs" = "ld-linux-x86-64.so.2 libc.so.6 libcap.so.2 libjson-c.so.5 libseccomp.so.2 " ]'
in_root gpuslice --root /srv/gpu info >"$T/info.out" 2>"$T/info.err"
check "gpuslice --root /srv/gpu info: the simulated GPUs" 'diff -u "$SRC/tests/integration/expected/2gpu.info.txt" "$T/info.out" >"$T/info.diff"'
[ -s "$T/info.diff" ] && sed 's/^/    # /' "$T/info.diff" "$T/info.err" | head -20

# Every file the packages installed is in dpkg -L, and every file dpkg -L lists is there.
snapshot >"$T/after-install"
comm -13 "$T/before" "$T/after-install" >"$T/new"
: >"$T/listed"
for p in gpuslice libgpuslice0 libgpuslice-dev; do in_root dpkg -L "$p" >>"$T/listed"; done
# The root is merged-/usr (/lib -> usr/lib): a file dpkg lists as /lib/... is found as /usr/lib/...
sed -n 's%^/\(lib\|bin\|sbin\)/%/usr/\1/%p' "$T/listed" >>"$T/listed"
sort -u -o "$T/listed" "$T/listed"
# What dpkg, ldconfig and debhelper's postinst (deb-systemd-helper) write besides the packages' files.
bookkeeping='^/var/lib/dpkg/|^/var/log/|^/var/cache/ldconfig/|^/etc/ld\.so\.cache$|^/var/lib/systemd(/deb-systemd-helper-enabled(/.*)?)?$|^/etc/systemd/system/multi-user\.target\.wants(/gpuslice-cdi\.(path|service))?$'
unlisted=$(grep -vxF -f "$T/listed" "$T/new" | grep -vE "$bookkeeping")
check "every new path in the root is one dpkg -L lists (or dpkg's and deb-systemd-helper's records)" '[ -z "$unlisted" ]'
[ -n "$unlisted" ] && sed 's/^/    # unlisted: /' <<<"$unlisted"
gone=$(while IFS= read -r f; do [ -e "$R$f" ] || [ -L "$R$f" ] || echo "$f"; done <"$T/listed")
check "every path dpkg -L lists is installed" '[ -z "$gone" ]'
ma=$(gcc -print-multiarch)
missing=""
for f in /usr/bin/gpuslice /usr/bin/gpuslice-hook /etc/gpuslice/config.toml /usr/share/containers/oci/hooks.d/oci-gpuslice-hook.json \
        /lib/systemd/system/gpuslice-cdi.service /lib/systemd/system/gpuslice-cdi.path \
        /lib/systemd/system/gpuslice-metrics.service /lib/systemd/system/gpuslice-mps.service \
        "/usr/lib/$ma/gpuslice/libgpuslice-vgpu.so" \
        "/usr/lib/$ma/libgpuslice.so.0" /usr/include/gpuslice/gpuslice.h "/usr/lib/$ma/pkgconfig/gpuslice.pc" \
        /usr/share/bash-completion/completions/gpuslice /usr/share/man/man1/gpuslice.1.gz \
        /usr/share/man/man1/gpuslice-doctor.1.gz /usr/share/man/man5/gpuslice.conf.5.gz; do
        grep -qxF "$f" "$T/listed" || missing="$missing $f"
done
check "the packages hold the binary, config, hooks.d file, units, interposer, library, header, .pc, completion, man pages" \
        '[ -z "$missing" ]'
[ -n "$missing" ] && echo "    # not in the packages:$missing"
check "nvidia-container-runtime-hook -> gpuslice-hook" '[ "$(readlink "$R/usr/bin/nvidia-container-runtime-hook")" = gpuslice-hook ]'
check "/etc/gpuslice/config.toml is a conffile" 'in_root dpkg-query -W -f="\${Conffiles}" gpuslice | grep -q "^ /etc/gpuslice/config.toml "'
check "postinst enabled gpuslice-cdi.path and .service, not gpuslice-metrics.service nor gpuslice-mps.service" \
        '[ -L "$R/etc/systemd/system/multi-user.target.wants/gpuslice-cdi.path" ] &&
         [ -L "$R/etc/systemd/system/multi-user.target.wants/gpuslice-cdi.service" ] &&
         [ ! -e "$R/etc/systemd/system/multi-user.target.wants/gpuslice-metrics.service" ] &&
         [ ! -e "$R/etc/systemd/system/multi-user.target.wants/gpuslice-mps.service" ]'
warn=""
for p in $(grep -E '^/usr/share/man/man[1-8]/.*\.gz$' "$T/listed"); do
        w=$(MANWIDTH=80 man --warnings -l "$R$p" 2>&1 >/dev/null)
        [ -z "$w" ] || warn="$warn ${p##*/}: $w"
done
check "every installed man page renders without warnings" '[ -z "$warn" ]'
[ -n "$warn" ] && echo "    # $warn"
# The installed units, checked by this host's systemd (the minimal root has none): copies whose
# executable is the build's gpuslice, the rest as installed.
if command -v systemd-analyze >/dev/null; then
        mkdir -p "$T/units"
        for u in "$R"/lib/systemd/system/gpuslice*; do
                sed "s|/usr/bin/gpuslice|$BUILD/gpuslice|g" "$u" >"$T/units/${u##*/}"
        done
        (cd "$T/units" && systemd-analyze verify --man=no ./*) >"$T/verify.log" 2>&1
        check "systemd-analyze verify: the installed units are valid ($(cd "$T/units" && echo *))" '[ ! -s "$T/verify.log" ]'
        sed 's/^/    # /' "$T/verify.log" | head -10
fi

# doctor before the CDI spec exists (the edited config names the driver root: it stays at removal).
sed -i 's|^#root = "/"$|root = "/srv/gpu"|' "$R/etc/gpuslice/config.toml"
in_root gpuslice doctor --json >"$T/doctor1.json" 2>"$T/doctor1.err"
st() { jq -r --arg n "$2" '.checks[] | select(.name == $n) | .status' "$1"; }
check "doctor before the CDI service ran: cdi-spec warns, with the service as its fix" \
        '[ "$(st "$T/doctor1.json" cdi-spec)" = warn ] && jq -e ".checks[] | select(.name == \"cdi-spec\") | .fix | contains(\"systemctl enable --now gpuslice-cdi.path gpuslice-cdi.service\")" "$T/doctor1.json" >/dev/null'
# What gpuslice-cdi.service runs, as systemd would (its EnvironmentFile, ExecStartPre, ExecStart).
echo 'GPUSLICE_OPTIONS=--root=/srv/gpu' >"$R/etc/default/gpuslice-cdi"
unit=$R/lib/systemd/system/gpuslice-cdi.service
pre=$(sed -n 's/^ExecStartPre=//p' "$unit") start=$(sed -n 's/^ExecStart=//p' "$unit")
if in_root sh -c "set -a; GPUSLICE_OPTIONS= GPUSLICE_CDI_OPTIONS=; . /etc/default/gpuslice-cdi; set +a; $pre && $start" \
        >"$T/cdi.log" 2>&1; then
        ok "gpuslice-cdi.service's command wrote /var/run/cdi/nvidia.yaml ($(grep -o 'wrote [0-9]* devices' "$T/cdi.log"))"
        hooks=$(grep -E '^ *path: ' "$R/run/cdi/nvidia.yaml" | grep -v '^ *path: /dev/' | sort -u | tr -s ' ')
        check "... its hooks run the installed lean hook: $hooks" '[ "$hooks" = " path: /usr/bin/gpuslice-hook" ]'
else
        not_ok "gpuslice-cdi.service's command: $(cat "$T/cdi.log")"
fi
rm -f "$R/etc/default/gpuslice-cdi"
in_root gpuslice doctor --json >"$T/doctor2.json" 2>"$T/doctor2.err"
rc=$?
# (engines: skip, and only that: the clean root has no docker, containerd or CRI-O, which the
# package suggests and does not pull in; a config there would be checked)
bad=$(jq -r '.checks[] | select(.status != "ok" and (.name != "cgroups" or .status != "warn") and (.name != "engines" or .status != "skip"))
        | "\(.name): \(.status): \(.message)"' "$T/doctor2.json" 2>&1)
eng=$(jq -r '.checks[] | select(.name == "engines") | .status' "$T/doctor2.json" 2>/dev/null)
check "gpuslice doctor on the installed node: exit 0, every check ok (cgroups: ok or warn, as this host is; engines: skip, none installed: $eng)" \
        '[ $rc = 0 ] && [ -z "$bad" ] && [ "$eng" = skip ]'
[ -n "$bad" ] && sed 's/^/    # /' <<<"$bad"
jq -r '.checks[] | "# doctor: \(.status) \(.name): \(.message)"' "$T/doctor2.json"
in_root gpuslice doctor >"$T/doctor.txt" 2>&1
check "gpuslice doctor (text) exits 0 and ends with its summary" 'tail -1 "$T/doctor.txt" | grep -qE "^0 failed, [0-9]+ warnings?, [0-9]+ ok, 1 skipped$"'

# ---- 4. remove, purge --------------------------------------------------------------------------
cp "$R/etc/gpuslice/config.toml" "$T/edited.toml"
if in_root dpkg -r gpuslice libgpuslice-dev libgpuslice0 >"$T/remove.log" 2>&1; then ok "dpkg -r"; else
        not_ok "dpkg -r failed:"; sed 's/^/    # /' "$T/remove.log"; fi
check "removal deleted the CDI spec gpuslice-cdi.service wrote (its hooks ran the removed gpuslice)" '[ ! -e "$R/run/cdi/nvidia.yaml" ]'
snapshot >"$T/after-remove"
left=$(comm -13 "$T/before" "$T/after-remove" | grep -vE "$bookkeeping")
check "after dpkg -r only the edited config is left: $(echo $left)" \
        '[ "$left" = "$(printf "/etc/gpuslice\n/etc/gpuslice/config.toml")" ] && cmp -s "$T/edited.toml" "$R/etc/gpuslice/config.toml"'
comm -13 "$T/before" "$T/after-remove" | grep -E "$bookkeeping" | grep -vE '^/var/lib/dpkg/|^/var/log/' |
        sed 's/^/# kept after dpkg -r by Debian'"'"'s tools (until purge): /'
check "dpkg keeps gpuslice's conffile record (config-files)" \
        '[ "$(in_root dpkg-query -W -f="\${Status}" gpuslice)" = "deinstall ok config-files" ]'
if in_root dpkg -P gpuslice libgpuslice-dev libgpuslice0 >"$T/purge.log" 2>&1; then ok "dpkg -P"; else
        not_ok "dpkg -P failed:"; sed 's/^/    # /' "$T/purge.log"; fi
snapshot >"$T/after-purge"
left=$(comm -13 "$T/before" "$T/after-purge" | grep -vE '^/var/lib/dpkg/|^/var/log/|^/var/cache/ldconfig/')
check "after dpkg -P nothing is left but dpkg's own records and logs" '[ -z "$left" ]'
[ -n "$left" ] && sed 's/^/    # left: /' <<<"$left"
changed=$(comm -3 "$T/before" "$T/after-purge" | grep -vE '^\s*/var/lib/dpkg/|^\s*/var/log/|^\s*/var/cache/ldconfig/')
check "and nothing of the clean root is missing" '[ -z "$changed" ]'
[ -n "$changed" ] && sed 's/^/    # /' <<<"$changed"
check "dpkg knows none of the packages any more" '! in_root dpkg-query -W gpuslice libgpuslice0 libgpuslice-dev >/dev/null 2>&1'
finish
