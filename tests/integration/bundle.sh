# Shared by test_hook.sh, test_docker.sh and test_podman.sh (sourced after lib.sh): container
# rootfs and OCI bundles for the real runtimes, the check script that runs inside, and the
# host-side checks of what it saw.
#
# Every container runs /check.sh (busybox sh), which prints one fact per line:
#   HAS <path> / NO <path>         for the paths in $FACT_PATHS
#   GPUS <busids>                  ls /proc/driver/nvidia/gpus
#   SMI <line>                     nvidia-smi -L (when /usr/bin/nvidia-smi exists)
#   PRELOAD <line>                 each line of /etc/ld.so.preload
#   SLICE <line>                   each line of /etc/gpuslice/slice.conf
#   SLICE_WRITE <result>           "written" or the error of writing slice.conf as root
#   SLICE_REMOUNT <result>         "remounted" or the error of remounting it read-write
#   PRELOAD_WRITE <result>         the same for /etc/ld.so.preload
#   ENV_LD_PRELOAD <value|unset>   the container's own LD_PRELOAD
#   PROBE_M <line> / PROBE_Q <line> / PROBE_RC <m> <q>   vgpu-probe meminfo / quota 64
#   PROBE_T <line>                 vgpu-probe totals (each GPU: its total and an allocation past it), with PROBE_TOTALS=1
#   DONE
# and the host side asserts on them (expect_fact, expect_no_fact).

RUNC=$(command -v runc || echo /usr/sbin/runc)
DRV_VERSION=580.159.04
LIBDIR=/usr/lib/x86_64-linux-gnu
GPU0_UUID=GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f
GPU1_UUID=GPU-9e3a5b7c-1d2f-4a6b-8c0d-2e4f6a8b0c1d
PROBE=$BUILD/tests/integration/hook-vgpu-probe
POC=$BUILD/tests/integration/poc.so
VGPU_LIB=$BUILD/libgpuslice-vgpu.so
FACT_PATHS="/dev/nvidiactl /dev/nvidia0 /dev/nvidia2 /dev/nvidia-uvm /dev/nvidia-modeset
$LIBDIR/libcuda.so.$DRV_VERSION $LIBDIR/libnvidia-ml.so.$DRV_VERSION /usr/bin/nvidia-smi
/proc/driver/nvidia/version /etc/gpuslice/slice.conf /usr/lib/gpuslice/libgpuslice-vgpu.so
/run/gpuslice/usage"
HOOK_ENV='["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]'
# Docker's default capabilities (moby oci/caps/defaults.go): root in such a container may write
# any file it can reach (CAP_DAC_OVERRIDE), but may not mount (no CAP_SYS_ADMIN).
DOCKER_CAPS='["CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_FSETID","CAP_FOWNER","CAP_MKNOD","CAP_NET_RAW","CAP_SETGID","CAP_SETUID","CAP_SETFCAP","CAP_SETPCAP","CAP_NET_BIND_SERVICE","CAP_SYS_CHROOT","CAP_KILL","CAP_AUDIT_WRITE"]'

write_check_sh() {
        {
                echo "FACT_PATHS='$(echo $FACT_PATHS)'"
                cat <<'EOF'
for p in $FACT_PATHS; do if [ -e "$p" ]; then echo "HAS $p"; else echo "NO $p"; fi; done
echo "GPUS $(ls /proc/driver/nvidia/gpus 2>/dev/null | tr '\n' ' ')"
if [ -x /usr/bin/nvidia-smi ]; then /usr/bin/nvidia-smi -L 2>&1 | sed 's/^/SMI /'; fi
if [ -e /etc/ld.so.preload ]; then sed 's/^/PRELOAD /' /etc/ld.so.preload; fi
if [ -e /etc/gpuslice/slice.conf ]; then
        sed 's/^/SLICE /' /etc/gpuslice/slice.conf
        if (echo "GPUSLICE_MEMORY_LIMIT=0" >>/etc/gpuslice/slice.conf) 2>/tmp/w.err; then echo "SLICE_WRITE written"
        else echo "SLICE_WRITE $(tr '\n' ' ' </tmp/w.err)"; fi
        if mount -o remount,bind,rw /etc/gpuslice/slice.conf 2>/tmp/w.err; then echo "SLICE_REMOUNT remounted"
        else echo "SLICE_REMOUNT $(tr '\n' ' ' </tmp/w.err)"; fi
        if (echo "/tmp/x.so" >>/etc/ld.so.preload) 2>/tmp/w.err; then echo "PRELOAD_WRITE written"
        else echo "PRELOAD_WRITE $(tr '\n' ' ' </tmp/w.err)"; fi
fi
echo "ENV_LD_PRELOAD ${LD_PRELOAD-unset}"
if [ -x /usr/bin/vgpu-probe ] && [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ]; then
        /usr/bin/vgpu-probe meminfo >/tmp/m.out 2>&1; m=$?
        /usr/bin/vgpu-probe quota 64 >/tmp/q.out 2>&1; q=$?
        sed 's/^/PROBE_M /' /tmp/m.out; sed 's/^/PROBE_Q /' /tmp/q.out
        echo "PROBE_RC $m $q"
        # each GPU's view, where the test asks (PROBE_TOTALS=1 in the container's env)
        if [ -n "${PROBE_TOTALS-}" ]; then /usr/bin/vgpu-probe totals 2>&1 | sed "s/^/PROBE_T /"; fi
        if [ -e /etc/gpuslice/slice.conf ]; then
                # Ways out a process could try: a larger limit in its own environment (ours and
                # HAMi's names), its own slice file and region, an invalid value with "run
                # unlimited on config errors". The read-only slice file must win each time (a
                # smaller limit is ignored as well: the container's processes share one region).
                echo GPUSLICE_MEMORY_LIMIT=64Gi >/tmp/mine.conf
                GPUSLICE_MEMORY_LIMIT=64Gi CUDA_DEVICE_MEMORY_LIMIT=64Gi GPUSLICE_MEMORY_LIMIT_0=64Gi \
                        GPUSLICE_SLICE_FILE=/tmp/mine.conf GPUSLICE_REGION=/tmp/myregion \
                        /usr/bin/vgpu-probe meminfo 2>&1 | sed 's/^/ESCAPE_RAISE /'
                GPUSLICE_MEMORY_LIMIT=lots GPUSLICE_ON_CONFIG_ERROR=unlimited \
                        /usr/bin/vgpu-probe meminfo 2>&1 | sed 's/^/ESCAPE_INVALID /'
                GPUSLICE_MEMORY_LIMIT=256Mi /usr/bin/vgpu-probe meminfo 2>&1 | sed 's/^/LOWER /'
                if [ -e /tmp/myregion ]; then echo "ESCAPE_REGION used"; else echo "ESCAPE_REGION unused"; fi
        fi
fi
echo DONE
EOF
        } >"$1"
}

# make_rootfs DIR: busybox + glibc (mkrootfs.sh), the check script, the fake GPUs' config where
# the fake NVML and libcuda look by default (/etc/fakegpu/gpus.conf: no FAKEGPU_CONFIG needed),
# and the interposer probe with the libraries it needs besides libcuda (the driver's, mounted).
# hook_config FILE DRIVER_ROOT REGIONS_DIR [LOG_FILE]: the host config the tests' hooks read.
hook_config() {
        {
                printf '[driver]\nroot = "%s"\n' "$2"
                [ -n "${4:-}" ] && printf '\n[hook]\nlog-file = "%s"\n' "$4"
                printf '\n[slice]\nregions-dir = "%s"\n' "$3"
        } >"$1"
}

# runc_prereqs FILE...: runc and jq installed and each FILE built, else the test fails here (a
# missing prerequisite is not a skip; runc and jq come with `make test-deps`).
runc_prereqs() {
        [ -x "$RUNC" ] || { not_ok "runc is not installed (make test-deps)"; finish; }
        command -v jq >/dev/null || { not_ok "jq is not installed (make test-deps)"; finish; }
        local f
        for f in "$@"; do
                [ -e "$f" ] || { not_ok "$f is not built"; finish; }
        done
}

# runc_setup NAME [LOG_FILE]: what a runc test starts from: a fake driver root of two GPUs ($DRV),
# runc's state ($STATE), its containers' cgroup prefix ($CG: gs-it-NAME-PID), the slices' regions
# ($SLICES), the hooks' host config ($CONF; hook_config's, LOG_FILE the hook's log) and no
# container yet ($ids, which run_bundle adds to and runc_cleanup deletes).
runc_setup() {
        DRV=$(mkroot drv 2gpu.conf)
        STATE=$TMP/runc-state
        CG=gs-it-$1-$$
        SLICES=$TMP/slices
        CONF=$TMP/hook.toml
        hook_config "$CONF" "$DRV" "$SLICES" ${2:+"$2"}
        ids=()
}

# runc_cleanup: the containers in $ids deleted, their cgroups removed (for the test's EXIT trap).
runc_cleanup() {
        local id d
        for id in "${ids[@]}"; do "$RUNC" --root "$STATE" delete -f "$id" >/dev/null 2>&1; done
        for d in /sys/fs/cgroup/*/"$CG"-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
}

make_rootfs() {
        local r=$1 l
        "$SRC/tests/integration/mkrootfs.sh" "$r" || { echo "mkrootfs failed" >&2; exit 1; }
        for l in awk sed sleep; do ln -sfn busybox "$r/bin/$l"; done
        write_check_sh "$r/check.sh"
        mkdir -p "$r/etc/fakegpu"
        cp "$DRV/etc/fakegpu/gpus.conf" "$r/etc/fakegpu/gpus.conf"
        cp "$PROBE" "$r/usr/bin/vgpu-probe"
        for l in $(ldd "$PROBE" "$VGPU_LIB" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u); do
                case ${l##*/} in libcuda.so*) continue ;; esac
                [ -e "$r$LIBDIR/${l##*/}" ] || cp -L "$l" "$r$LIBDIR/${l##*/}"
        done
}

# make_bundle NAME [JQ-FILTER [jq args...]]: $TMP/NAME with a fresh rootfs and `runc spec`'s
# config.json: writable root, no terminal, runs /check.sh as root with Docker's default
# capabilities (CAP_DAC_OVERRIDE, no CAP_SYS_ADMIN), cgroup $CG-NAME; then JQ-FILTER
# (jq gets --arg gs, drv, conf, tmp, bundle, plus the caller's args).
make_bundle() {
        local name=$1 b=$TMP/$1 filter=${2:-.}
        shift; [ $# -gt 0 ] && shift
        rm -rf "$b"; mkdir -p "$b"
        make_rootfs "$b/rootfs"
        (cd "$b" && "$RUNC" spec) || { echo "runc spec failed" >&2; exit 1; }
        jq --arg gs "$GS" --arg drv "$DRV" --arg conf "${CONF:-}" --arg tmp "$TMP" --arg bundle "$b" \
           --arg cg "/$CG-$name" --argjson hookenv "$HOOK_ENV" --argjson caps "$DOCKER_CAPS" "$@" '
                .root = {path: "rootfs", readonly: false}
                | .process.terminal = false
                | .process.args = ["/bin/sh", "/check.sh"]
                | .process.capabilities |= with_entries(.value = $caps)
                | .linux.cgroupsPath = $cg
                | '"$filter" <"$b/config.json" >"$b/config.json.new" && mv "$b/config.json.new" "$b/config.json" ||
                { echo "jq failed for $name: $filter" >&2; exit 1; }
}

# run_bundle NAME: runc run it (60 s at most); results in $TMP/NAME.{out,err,rc}
run_bundle() {
        local id=gs-$$-$1
        ids+=("$id")
        run "$1" -- timeout 60 "$RUNC" --root "$STATE" run --bundle "$TMP/$1" "$id" </dev/null
}

# expect_fact NAME LINE DESC / expect_no_fact NAME LINE DESC: the container printed LINE exactly
expect_fact() {
        if grep -qxF -- "$2" "$TMP/$1.out"; then ok "$3"; else
                not_ok "$3: the container did not print '$2'"; grep -E "^(HAS|NO|SMI|PRELOAD|SLICE|DONE)" "$TMP/$1.out" |
                        sed 's/^/    # /' | head -30; sed 's/^/    # err: /' "$TMP/$1.err" | tail -5; fi
}
expect_no_fact() {
        if grep -qxF -- "$2" "$TMP/$1.out"; then not_ok "$3: the container printed '$2'"; else ok "$3"; fi
}
expect_fact_re() { # NAME ERE DESC
        if grep -qE -- "$2" "$TMP/$1.out"; then ok "$3"; else
                not_ok "$3: no line matches /$2/"; sed 's/^/    # /' "$TMP/$1.out" | head -40; fi
}
expect_done() { # NAME DESC: runc exited 0 and the check script ran to its end
        if [ "$(rc_of "$1")" = 0 ] && grep -qx DONE "$TMP/$1.out"; then ok "$2: the container ran, the check finished"; else
                not_ok "$2: exit $(rc_of "$1")"; sed 's/^/    # /' "$TMP/$1.out" "$TMP/$1.err" | tail -20; fi
}

# The facts of a GPU container that got GPU 0 (minor 0) and not GPU 1 (minor 2), with compute
# and utility.
expect_gpu0() { # NAME DESC
        local n=$1 d=$2
        expect_fact "$n" "HAS /dev/nvidiactl" "$d: /dev/nvidiactl"
        expect_fact "$n" "HAS /dev/nvidia0" "$d: /dev/nvidia0"
        expect_fact "$n" "NO /dev/nvidia2" "$d: no /dev/nvidia2 (GPU 1 not selected)"
        expect_fact "$n" "HAS $LIBDIR/libcuda.so.$DRV_VERSION" "$d: libcuda (compute)"
        expect_fact "$n" "HAS $LIBDIR/libnvidia-ml.so.$DRV_VERSION" "$d: libnvidia-ml (utility)"
        expect_fact "$n" "HAS /usr/bin/nvidia-smi" "$d: nvidia-smi (utility)"
        expect_fact "$n" "GPUS 0000:3b:00.0 " "$d: /proc/driver/nvidia/gpus has GPU 0 only"
        expect_fact "$n" "SMI GPU 0: NVIDIA A100-SXM4-40GB (UUID: $GPU0_UUID)" "$d: nvidia-smi -L shows GPU 0"
}
expect_all_gpus() { # NAME DESC
        local n=$1 d=$2
        expect_fact "$n" "HAS /dev/nvidiactl" "$d: /dev/nvidiactl"
        expect_fact "$n" "HAS /dev/nvidia0" "$d: /dev/nvidia0"
        expect_fact "$n" "HAS /dev/nvidia2" "$d: /dev/nvidia2"
        expect_fact "$n" "GPUS 0000:3b:00.0 0000:86:00.0 " "$d: /proc/driver/nvidia/gpus has both GPUs"
        expect_fact "$n" "SMI GPU 0: NVIDIA A100-SXM4-40GB (UUID: $GPU0_UUID)" "$d: nvidia-smi -L shows GPU 0"
        expect_fact "$n" "SMI GPU 1: NVIDIA A100-SXM4-40GB (UUID: $GPU1_UUID)" "$d: nvidia-smi -L shows GPU 1"
}
# Nothing of the driver at all (void, unset, no GPU requested).
expect_nothing() { # NAME DESC
        local n=$1 d=$2 p
        for p in /dev/nvidiactl /dev/nvidia0 /dev/nvidia2 /dev/nvidia-uvm $LIBDIR/libcuda.so.$DRV_VERSION \
                $LIBDIR/libnvidia-ml.so.$DRV_VERSION /usr/bin/nvidia-smi /proc/driver/nvidia/version; do
                expect_fact "$n" "NO $p" "$d: no $p"
        done
}
expect_no_slice() { # NAME DESC
        local n=$1 d=$2
        expect_fact "$n" "NO /etc/gpuslice/slice.conf" "$d: no slice file"
        expect_fact "$n" "NO /usr/lib/gpuslice/libgpuslice-vgpu.so" "$d: no interposer"
        if grep -q "^PRELOAD " "$TMP/$n.out"; then not_ok "$d: /etc/ld.so.preload exists: $(grep '^PRELOAD' "$TMP/$n.out" | tr '\n' ' ')"
        else ok "$d: no /etc/ld.so.preload"; fi
}
# A slice of LIMIT (as written, e.g. 1Gi) = MIB MiB.
expect_slice() { # NAME DESC LIMIT MIB (slice.conf always uses our variable name)
        local n=$1 d=$2 lim=$3 mib=$4 var=GPUSLICE_MEMORY_LIMIT
        expect_fact "$n" "PRELOAD /usr/lib/gpuslice/libgpuslice-vgpu.so" "$d: /etc/ld.so.preload names the interposer"
        expect_fact "$n" "HAS /usr/lib/gpuslice/libgpuslice-vgpu.so" "$d: the interposer is mounted"
        expect_fact "$n" "SLICE $var=$lim" "$d: slice.conf holds $var=$lim"
        expect_fact_re "$n" "^SLICE_WRITE .*Read-only file system" "$d: slice.conf is read-only, for root in the container too"
        expect_fact_re "$n" "^SLICE_REMOUNT .*(Operation not permitted|[Pp]ermission denied)" \
                "$d: the container (no CAP_SYS_ADMIN) cannot remount slice.conf read-write"
        expect_fact_re "$n" "^PRELOAD_WRITE .*Read-only file system" "$d: /etc/ld.so.preload is read-only"
        expect_fact "$n" "ENV_LD_PRELOAD unset" "$d: no LD_PRELOAD in the container's environment"
        expect_fact "$n" "PROBE_M ok total is the quota ($mib MiB)" \
                "$d: cuMemGetInfo total = $mib MiB through /etc/ld.so.preload alone"
        expect_fact "$n" "PROBE_Q ok the allocation past the quota fails with CUDA_ERROR_OUT_OF_MEMORY (2)" \
                "$d: an allocation past the quota fails with CUDA_ERROR_OUT_OF_MEMORY"
        local got; got=$(awk '$1 == "PROBE_Q" && $2 == "allocated" { print $3 }' "$TMP/$n.out")
        if [ -n "$got" ] && [ "$got" -gt 0 ] && [ "$got" -le "$mib" ]; then ok "$d: $got MiB granted of the $mib MiB quota"
        else not_ok "$d: quota granted ${got:-?} MiB"; grep "^PROBE" "$TMP/$n.out" | sed 's/^/    # /'; fi
        expect_fact "$n" "PROBE_RC 0 0" "$d: the probe's checks all passed"
        expect_fact "$n" "ESCAPE_RAISE ok total is the quota ($mib MiB)" \
                "$d: a process's own larger limit, slice file and region do not raise the quota"
        expect_fact "$n" "ESCAPE_REGION unused" "$d: ... nor move the usage region"
        expect_fact "$n" "ESCAPE_INVALID ok total is the quota ($mib MiB)" \
                "$d: an invalid value with GPUSLICE_ON_CONFIG_ERROR=unlimited does not lift the quota"
        expect_fact "$n" "LOWER ok total is the quota ($mib MiB)" "$d: a process's own smaller limit is ignored too (one region per container)"
}

files_of() { (cd "$1" && find . -xdev | sort); }
