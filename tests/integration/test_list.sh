#!/usr/bin/env bash
# gpuslice list against fake driver roots: categories, order, filters, selection, requirements.
. "$(dirname "$0")/lib.sh"

all_exist() { # NAME: every listed path exists under ROOT
        local bad=0
        while IFS= read -r p; do [ -e "$ROOT$p" ] || { echo "    # missing $ROOT$p"; bad=1; }; done <"$TMP/$1.out"
        [ "$bad" = 0 ] && [ -s "$TMP/$1.out" ]
}

for conf in 1gpu 2gpu 8gpu-mig; do
        ROOT=$(mkroot "$conf" "$conf.conf")
        run "$conf" -- "$GS" --root "$ROOT" list
        expect_rc "$conf" 0 "$conf: list"
        expect_same "$conf" "$EXPECTED/$conf.list" "$conf: list names nvidia-container-cli's categories in its order"
        if all_exist "$conf"; then ok "$conf: every listed path exists in the root"; else not_ok "$conf: listed paths exist"; fi
        expect_out_lacks "$conf" "libnvidia-ml.so.470" "$conf: a library of another driver version is not listed"
        run "$conf.nvml" -- env GPUSLICE_DETECT=nvml "$GS" --root "$ROOT" --debug "$TMP/$conf.nvml.log" list
        expect_same "$conf.nvml" "$EXPECTED/$conf.list" "$conf: the same list when NVML answers instead of procfs"
        grep -q "nvml helper answered" "$TMP/$conf.nvml.log" && ok "$conf: ... and NVML did answer" || not_ok "$conf: NVML not asked"
done
run procfslog -- "$GS" --root "$TMP/2gpu" --debug "$TMP/p.log" list -l
grep -q "devices from $TMP/2gpu/proc/driver/nvidia: 2 GPU(s), driver 580.159.04" "$TMP/p.log" &&
        ok "plain list reads the devices from the root's procfs" || not_ok "list did not use procfs"
run miglog -- "$GS" --root "$TMP/8gpu-mig" --debug "$TMP/m.log" list -l
grep -q "procfs cannot answer (GPU 2 has MIG instances)" "$TMP/m.log" && grep -q "nvml helper answered" "$TMP/m.log" &&
        ok "with MIG instances list asks NVML" || not_ok "MIG instances did not route to NVML"

ROOT=$TMP/2gpu
run libs -- "$GS" --root "$ROOT" list -l
expect_same libs "$EXPECTED/2gpu.list-l" "list -l: 64-bit libraries only, no devices"
run dev1 -- "$GS" --root "$ROOT" list --device 1
expect_same dev1 "$EXPECTED/2gpu.list-device1" "list --device 1: control nodes and /dev/nvidia2 (minor 2)"
run bus -- "$GS" --root "$ROOT" list --device 86:00.0
expect_same bus "$EXPECTED/2gpu.list-device1" "list --device 86:00.0 (bus id without domain) selects the same GPU"
run uuid -- "$GS" --root "$ROOT" list -d GPU-9E3A5B7C-1D2F-4A6B-8C0D-2E4F6A8B0C1D
expect_same uuid "$EXPECTED/2gpu.list-device1" "list -d GPU-UUID (any case) selects the same GPU"
run compute -- "$GS" --root "$ROOT" list -l --compute
expect_out_has compute /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04 "list -l --compute has libcuda"
expect_out_lacks compute libnvidia-ml "list -l --compute leaves out utility libraries"
expect_out_lacks compute libnvidia-encode "list -l --compute leaves out video libraries"
run video -- "$GS" --root "$ROOT" list -l --video
expect_out_has video /usr/lib/x86_64-linux-gnu/libnvidia-encode.so.580.159.04 "list -l --video has the encoder"
expect_out_has video /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04 "--video implies compute libraries"
run utilnodes -- "$GS" --root "$ROOT" list --device 0 --utility
expect_out_lacks utilnodes /dev/nvidia-uvm "list --utility leaves out the UVM nodes (compute only)"
run ipcs -- "$GS" --root "$ROOT" list -i
expect_out_has ipcs /run/nvidia-persistenced/socket "list -i has the persistenced socket (/var/run is a link to /run in the root)"
run nopers -- "$GS" --root "$ROOT" list -i --no-persistenced
expect_out_lacks nopers persistenced "--no-persistenced drops it"
run mps -- env CUDA_MPS_PIPE_DIRECTORY=/nonexistent-mps "$GS" --root "$ROOT" list -i
expect_out_lacks mps /tmp/nvidia-mps "CUDA_MPS_PIPE_DIRECTORY moves the MPS directory"
run fw -- "$GS" --root "$ROOT" list -f
expect_out_has fw /lib/firmware/nvidia/580.159.04/gsp_ga10x.bin "list -f has the GSP firmware"
run nofw -- "$GS" --root "$ROOT" list -f --no-gsp-firmware
expect_empty_out nofw "--no-gsp-firmware lists no firmware"
run none -- "$GS" --root "$ROOT" list --device none
expect_out_lacks none /dev/nvidia0 "--device none: control nodes only"
expect_out_has none /dev/nvidiactl "--device none still lists /dev/nvidiactl"
run json -- "$GS" --root "$ROOT" list --json
jq -r '.devices[], .binaries[], .libraries[], .compat32_libraries[], .ipcs[], .firmwares[]' "$TMP/json.out" >"$TMP/jsonflat.out" 2>/dev/null
expect_same jsonflat "$EXPECTED/2gpu.list" "list --json holds the same paths in the same order"

# MIG
ROOT=$TMP/8gpu-mig
run mig -- "$GS" --root "$ROOT" list --device 2:1
expect_same mig "$EXPECTED/8gpu-mig.list-device2-1" "list --device 2:1: parent node, GI/CI access files and their caps nodes"
run mig2 -- "$GS" --root "$ROOT" list --device 2:gi2:ci1
expect_same mig2 "$EXPECTED/8gpu-mig.list-device2-1" "list --device 2:gi2:ci1 is the same MIG device"
run migcfg -- "$GS" --root "$ROOT" list --device all --mig-config all --mig-monitor all
expect_same migcfg "$EXPECTED/8gpu-mig.list-migcfg" "list --mig-config/--mig-monitor all"
run migbad -- "$GS" --root "$ROOT" list --device 2:1 --mig-config all
expect_rc migbad 1 "mig-config with a specific MIG device is refused"
expect_err migbad "gpuslice: mig-config error: cannot enable mig-config with specific MIG devices selected" "... with nvidia's message"
run migval -- "$GS" --root "$ROOT" list --mig-config 0
expect_err migval "gpuslice: mig-config error: only 'all' devices are currently supported" "--mig-config 0 is refused"

# Requirements, checked per selected GPU before anything is printed.
ROOT=$TMP/2gpu
run req1 -- "$GS" --root "$ROOT" list --device 0 --require 'cuda>=13.0' --require 'arch>=8.0 brand=tesla' -l
expect_rc req1 0 "satisfied requirements"
run req2 -- "$GS" --root "$ROOT" list --device all --require 'cuda>=13.1' -l
expect_rc req2 1 "cuda>=13.1 on a CUDA 13.0 driver fails"
expect_err req2 "gpuslice: requirement error: unsatisfied condition: cuda>=13.1, please update your driver to a newer version, or use an earlier cuda container" "... with nvidia-container-cli's message"
expect_empty_out req2 "... and prints nothing"
run req3 -- "$GS" --root "$ROOT" list --device 0 --require 'brand=tesla,arch>=8.0' -l
expect_err req3 "unsatisfied condition: brand=tesla,arch>=8.0" "brand=tesla fails on an Nvidia-brand GPU"
run req4 -- "$GS" --root "$ROOT" list --require 'cuda >= 12' -l
expect_err req4 "gpuslice: requirement error: invalid expression" "a malformed requirement is an invalid expression"
run req5 -- "$GS" --root "$ROOT" list --require 'arch>=9.0' -l
expect_rc req5 0 "arch requirements pass with no device selected (missing data passes)"

# A requirement is a gate, not a selection: with only --require (and --json) list lists what a
# plain list lists.
run reqonly -- "$GS" --root "$ROOT" list --require 'cuda>=12.0'
expect_rc reqonly 0 "list --require alone, satisfied"
expect_same reqonly "$EXPECTED/2gpu.list" "list --require 'cuda>=12.0' prints the same as plain list"
run reqtwo -- "$GS" --root "$ROOT" list --require 'cuda>=12.0' --require 'driver>=500 arch>=8.0'
expect_same reqtwo "$EXPECTED/2gpu.list" "list with two satisfied --require prints the same as plain list"
run jsonplain -- "$GS" --root "$ROOT" list --json
run jsonreq -- "$GS" --root "$ROOT" list --json --require 'cuda>=12.0'
expect_rc jsonreq 0 "list --json --require, satisfied"
expect_same jsonreq "$TMP/jsonplain.out" "list --json --require 'cuda>=12.0' equals list --json"
run reqjson -- "$GS" --root "$ROOT" list --require 'cuda>=12.0' --json
expect_same reqjson "$TMP/jsonplain.out" "... in either option order"
run requnsat -- "$GS" --root "$ROOT" list --require 'cuda>=13.1'
expect_rc requnsat 1 "list --require alone, unsatisfied, fails"
expect_err requnsat "gpuslice: requirement error: unsatisfied condition: cuda>=13.1, please update your driver to a newer version, or use an earlier cuda container" "... with nvidia-container-cli's message"
expect_empty_out requnsat "... and prints nothing"
run requnsatjson -- "$GS" --root "$ROOT" list --json --require 'brand=tesla'
expect_rc requnsatjson 1 "list --json --require, unsatisfied (checked on every GPU: --device=all), fails"
expect_err requnsatjson "gpuslice: requirement error: unsatisfied condition: brand=tesla" "... naming the condition"
expect_empty_out requnsatjson "... and prints no JSON"
run reqsel -- "$GS" --root "$ROOT" list --require 'cuda>=12.0' -l
expect_same reqsel "$EXPECTED/2gpu.list-l" "--require with -l still lists only what -l selects"

# A wrapper script on PATH (as /usr/bin/nvidia-smi on some hosts) is passed over for the real
# ELF binary further along PATH: the script's target would not be in the container.
WR=$(mkroot wrapped 2gpu.conf)
mkdir -p "$WR/usr/local/nvidia/bin"
mv "$WR/usr/bin/nvidia-smi" "$WR/usr/local/nvidia/bin/nvidia-smi"
printf '#!/bin/sh\nexec /usr/local/nvidia/bin/nvidia-smi "$@"\n' >"$WR/usr/bin/nvidia-smi"; chmod 755 "$WR/usr/bin/nvidia-smi"
run wrapped -- env PATH=/usr/bin:/usr/local/nvidia/bin:/bin "$GS" --root "$WR" list -b
expect_out_has wrapped /usr/local/nvidia/bin/nvidia-smi "a wrapper script on PATH is passed over for the ELF binary"
expect_out_lacks wrapped /usr/bin/nvidia-smi "... and is not listed"

# Alternative ld.so.cache location (--ldcache, inside the root): with the cache moved there, the
# default location fails (so the same answer below comes from the named cache); then put it back.
mv "$ROOT/etc/ld.so.cache" "$ROOT/etc/other.cache"
run noldc -- "$GS" --root "$ROOT" list -l
expect_err noldc "cannot read the dynamic linker cache under $ROOT: open /etc/ld.so.cache: No such file or directory" \
        "without --ldcache, a root whose cache moved fails"
run ldc -- "$GS" --root "$ROOT" --ldcache /etc/other.cache list -l
expect_same ldc "$EXPECTED/2gpu.list-l" "--ldcache names a cache inside the root"
mv "$ROOT/etc/other.cache" "$ROOT/etc/ld.so.cache"
sed -i 's/^NVRM version: .*/NVRM version: garbled/' "$TMP/2gpu/proc/driver/nvidia/version"
run badver -- "$GS" --root "$TMP/2gpu" --debug "$TMP/badver.log" list
expect_rc badver 0 "list with an unreadable procfs version"
expect_same badver "$EXPECTED/2gpu.list" "an unreadable procfs version falls back to NVML with the same answer"
grep -q "procfs cannot answer" "$TMP/badver.log" && grep -q "nvml helper answered" "$TMP/badver.log" &&
        ok "... procfs could not answer and NVML did (the fallback ran)" ||
        not_ok "... no fallback in the log: $(grep -E "procfs|nvml" "$TMP/badver.log" | head -3 | tr '\n' ' ')"
finish
