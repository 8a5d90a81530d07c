#!/usr/bin/env bash
# gpuslice info (text, --csv, --json) against fake driver roots with 1, 2 and 8 GPUs (one MIG).
. "$(dirname "$0")/lib.sh"

for conf in 1gpu 2gpu 8gpu-mig; do
        ROOT=$(mkroot "$conf" "$conf.conf")
        run "$conf.json" -- "$GS" --root "$ROOT" info --json
        expect_rc "$conf.json" 0 "$conf: info --json"
        jq -S . "$TMP/$conf.json.out" >"$TMP/$conf.jsonn.out" 2>/dev/null
        jq -S . "$EXPECTED/$conf.info.json" >"$TMP/$conf.jsonw"
        expect_same "$conf.jsonn" "$TMP/$conf.jsonw" "$conf: info --json matches the simulated GPUs"
        run "$conf.txt" -- "$GS" --root "$ROOT" info
        expect_same "$conf.txt" "$EXPECTED/$conf.info.txt" "$conf: info text (nvidia-container-cli layout)"
        run "$conf.csv" -- "$GS" --root "$ROOT" info --csv
        expect_same "$conf.csv" "$EXPECTED/$conf.info.csv" "$conf: info --csv"
done

# Every JSON field the issue names, with its type.
run fields -- jq -e '(.driver.version|type=="string") and (.driver.cuda_version|type=="string") and
        (.gpus[2] | (.index|type=="number") and (.minor|type=="number") and (.model|type=="string") and
        (.brand|type=="string") and (.uuid|type=="string") and (.bus_id|type=="string") and
        (.arch|type=="string") and (.memory_total_bytes|type=="number") and (.mig_enabled==true) and
        (.mig_devices[0] | (.index|type=="number") and (.uuid|type=="string") and
        (.gpu_instance|type=="number") and (.compute_instance|type=="number")))' "$TMP/8gpu-mig.json.out"
expect_rc fields 0 "info --json carries every documented field"

# Without root (no chroot possible) the fake NVML is found by the loader: same answer.
ROOT=$TMP/2gpu
run nonroot -- setpriv --reuid=65534 --regid=65534 --clear-groups env FAKEGPU_CONFIG="$ROOT/etc/fakegpu/gpus.conf" \
        LD_LIBRARY_PATH="$ROOT/usr/lib/x86_64-linux-gnu" "$GS" info --json
jq -S . "$TMP/nonroot.out" >"$TMP/nonrootn.out" 2>/dev/null
expect_same nonrootn "$TMP/2gpu.jsonw" "info as an unprivileged user (no --root) reports the same GPUs"

# --user picks the helper's identity; a helper that cannot read the root fails cleanly. In a root
# whose lib dir only root may enter (0700), the helper as root (--user=0:0) loads NVML and gives the
# same answer; as nobody (--user=65534:65534, also the default as root) it cannot load NVML.
LOCK=$(mkroot locked 2gpu.conf)
chmod 0700 "$LOCK/usr/lib/x86_64-linux-gnu"
run user -- "$GS" --root "$LOCK" --user=0:0 info --json
expect_rc user 0 "info --user=0:0 on a root only root may read"
jq -S . "$TMP/user.out" >"$TMP/usern.out" 2>/dev/null
expect_same usern "$TMP/2gpu.jsonw" "... the helper, as root, reports the GPUs"
run nobody -- "$GS" --root "$LOCK" --user=65534:65534 info --json
expect_rc nobody 1 "info --user=65534:65534 on that root fails"
expect_err nobody "gpuslice: initialization error: load library failed: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.159.04: cannot open shared object file: Permission denied" \
        "... cleanly: the helper, as nobody, cannot read NVML in the root, and says so"
expect_empty_out nobody "... and prints nothing on stdout"
run badtimeout -- "$GS" --nvml-timeout 0 info
expect_rc badtimeout 2 "--nvml-timeout 0 is a usage error"
run help -- "$GS" info --help
expect_rc help 0 "info --help"
run both -- "$GS" --root "$ROOT" info --csv --json
expect_rc both 2 "--csv with --json is a usage error"
finish
