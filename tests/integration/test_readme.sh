#!/usr/bin/env bash
# The README's quick start and tour, run against the simulated GPU, so that the test fails when the
# README's commands stop working. Every ```sh block of README.md carries a marker line before it:
#   <!-- readme-test: setup -->, <!-- readme-test: run -->
#       run here, in README order, in one bash (variables carry over), each block with errexit and
#       pipefail: a block passes when every command in it succeeded. The working directory is a tree
#       whose tests/ and build/ are the source's and this build's; /etc/cdi and /var/run/cdi are
#       private tmpfs mounts (no spec of this machine is read or written; /var/run/cdi is never
#       made, as other tests put their own specs there meanwhile); /tmp/fakegpu is a
#       directory of this test. `podman` is Debian's, with this machine's needs (runc, cgroupfs,
#       file events, ulimits, its own storage), IMAGE a busybox rootfs with the simulated GPU's
#       configuration (FAKEGPU_CONFIG) and APP a CUDA program on the simulated driver that holds
#       512 MiB for a minute (tests/vgpu/vgpu_probe.c); `podman run -d` returns once APP holds its
#       memory. Otherwise the commands are the README's, unchanged.
#   <!-- readme-test: quick-start -->
#       `make run` runs as tests/run-main.sh (what the Makefile's run target runs once built);
#       `make test` is what runs this test, and `git clone` needs the network: not run.
#   <!-- readme-test: skip (REASON) -->
#       not run: REASON says what it needs (a GPU, a Docker engine, a cluster) and which test
#       covers the same commands.
# A ```sh block without a marker fails the test.
. "$(dirname "$0")/lib.sh"

README=$SRC/README.md
need podman runc unshare busybox
PODMAN=$(command -v podman)
RUNC=$(command -v runc)
CDI_ETC_MADE=
cleanup() {
        timeout 60 "$PODMAN" --root "$TMP/podman-root" --runroot "$TMP/podman-run" --tmpdir "$TMP/podman-tmp" \
                --cgroup-manager=cgroupfs --events-backend=file --runtime "$RUNC" rm -af >/dev/null 2>&1
        awk -v t="$TMP/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
                while read -r m; do umount -l "$m"; done
        [ -n "$CDI_ETC_MADE" ] && rmdir /etc/cdi 2>/dev/null
        rm -rf "$TMP"
}
trap cleanup EXIT

# The blocks: "KIND\tSTART-LINE" records with the block's text in $TMP/block.N.
awk -v dir="$TMP" '
        /^<!-- readme-test: / { kind = $3; sub(/ -->$/, "", kind); marked = NR; next }
        /^```sh$/ { n++; inblock = 1; k = (marked == NR - 1) ? kind : "UNMARKED"
                    printf "%s\t%d\n", k, NR; file = dir "/block." n; printf "" >file; next }
        /^```/ && inblock { inblock = 0; close(file); next }
        inblock { print >file }
' "$README" >"$TMP/blocks"
[ -s "$TMP/blocks" ] || { not_ok "no \`\`\`sh blocks found in README.md"; finish; }
n=0 runnable=0
while IFS=$'\t' read -r kind line; do
        n=$((n + 1))
        case $kind in
        setup | run | quick-start) runnable=$((runnable + 1)) ;;
        skip) ;;
        *) not_ok "README.md:$line: a \`\`\`sh block without a <!-- readme-test: setup|run|quick-start|skip (...) --> line before it" ;;
        esac
done <"$TMP/blocks"
[ "$runnable" -ge 4 ] && ok "README.md: $n sh blocks, each marked; $runnable to run" ||
        not_ok "README.md: only $runnable blocks marked to run"

# Quick start: the commands are there, and `make run` works (as the Makefile runs it).
qs=$(awk -F'\t' '$1 == "quick-start" { print NR; exit }' "$TMP/blocks")
if [ -n "$qs" ]; then
        for c in "make run" "make test"; do
                grep -q "^$c" "$TMP/block.$qs" && ok "quick start: '$c'" || not_ok "quick start lacks '$c'"
        done
        grep -q '^run: build$' "$SRC/Makefile" && grep -q 'tests/run-main.sh \$(BUILD)' "$SRC/Makefile" &&
                ok "Makefile: run = build, then tests/run-main.sh" || not_ok "Makefile's run target changed: update this test"
        run quick -- "$SRC/tests/run-main.sh" "$BUILD"
        expect_rc quick 0 "make run (tests/run-main.sh $BUILD)"
        grep -q "NVIDIA A100-SXM4-40GB\|^Model:" "$TMP/quick.out" && ok "make run shows the GPUs" ||
                not_ok "make run printed no GPU: $(head -5 "$TMP/quick.out" | tr '\n' ' ')"
else
        not_ok "README.md has no quick-start block"
fi

# The tour's tree and rootfs.
TREE=$TMP/tree
mkdir -p "$TREE"
ln -s "$SRC/tests" "$TREE/tests"
ln -s "$BUILD" "$TREE/build"
P=$TMP/rootfs
"$SRC/tests/integration/mkrootfs.sh" "$P" >/dev/null || { not_ok "mkrootfs failed"; finish; }
cp "$BUILD/tests/integration/hook-vgpu-probe" "$P/usr/bin/vgpu-probe" || { not_ok "no vgpu probe in $BUILD"; finish; }
[ -d /etc/cdi ] || { mkdir /etc/cdi && CDI_ETC_MADE=1; }

# The script: the shims, then each setup/run block, in order.
{
        cat <<EOF
set -uo pipefail
cd "$TREE"
mount -t tmpfs -o mode=755 gs-readme-cdi /etc/cdi || exit 125
# this machine's specs (other tests' included) stay unseen; none appears there but with a kind of its own
if [ -d /var/run/cdi ]; then mount -t tmpfs -o mode=755 gs-readme-cdi /var/run/cdi || exit 125; fi
podman() {
        local sub=\$1 a args=(); shift
        for a in "\$@"; do
                if [ "\$a" = IMAGE ]; then
                        cp "$TMP/fakegpu/etc/fakegpu/gpus.conf" "$P/etc/fakegpu.conf" || return 1
                        args+=(-e FAKEGPU_CONFIG=/etc/fakegpu.conf --rootfs "$P")
                elif [ "\$a" = APP ]; then args+=(/usr/bin/vgpu-probe hold 512 60)
                else args+=("\$a"); fi
        done
        local extra=() rc name= i
        [ "\$sub" = run ] && extra=(--network=none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096)
        podman_() {
                "$PODMAN" --root "$TMP/podman-root" --runroot "$TMP/podman-run" --tmpdir "$TMP/podman-tmp" \\
                        --cgroup-manager=cgroupfs --events-backend=file --runtime "$RUNC" "\$@"
        }
        podman_ "\$sub" "\${extra[@]}" "\${args[@]}"; rc=\$?
        # a detached APP: wait until it holds its memory (it prints "held")
        if [ "\$sub" = run ] && [ \$rc = 0 ] && [[ " \${args[*]} " == *" -d "*" /usr/bin/vgpu-probe hold "* ]]; then
                for ((i = 0; i < \${#args[@]}; i++)); do if [ "\${args[i]}" = --name ]; then name=\${args[i+1]}; fi; done
                for _ in \$(seq 100); do podman_ logs "\$name" 2>/dev/null | grep -q held && break; sleep 0.1; done
        fi
        return \$rc
}
EOF
        i=0
        while IFS=$'\t' read -r kind line; do
                i=$((i + 1))
                case $kind in setup | run) ;; *) continue ;; esac
                echo "echo '### block $i (README.md:$line)'"
                echo "set -e"
                sed "s|/tmp/fakegpu|$TMP/fakegpu|g" "$TMP/block.$i"
                echo "set +e"
                echo "echo '### ok $i'"
        done <"$TMP/blocks"
        echo "exit 0"
} >"$TMP/tour.sh"

run tour -- timeout 280 unshare -m --propagation private bash "$TMP/tour.sh"
i=0
while IFS=$'\t' read -r kind line; do
        i=$((i + 1))
        case $kind in setup | run) ;; *) continue ;; esac
        first=$(grep -m1 -v '^ *#' "$TMP/block.$i" | cut -c1-60)
        if grep -qx "### ok $i" "$TMP/tour.out"; then ok "README.md:$line ($kind): $first ..."
        elif grep -qx "### block $i (README.md:$line)" "$TMP/tour.out"; then
                not_ok "README.md:$line ($kind): a command failed"
                sed -n "/^### block $i /,\$p" "$TMP/tour.out" | tail -n +2 | tail -15 | sed 's/^/    # /'
                sed 's/^/    # stderr: /' "$TMP/tour.err" | tail -15
        else not_ok "README.md:$line ($kind): not reached"; fi
done <"$TMP/blocks"
[ "$(rc_of tour)" = 0 ] && ok "the tour ran to its end" || not_ok "the tour: exit $(rc_of tour)"
# What the tour's commands showed: the simulated GPUs, the CDI slice names, the slice's quota.
grep -q "GPU-2f8c1d4e-7a90-3b5c-e6d1-0a9b8c7d6e5f" "$TMP/tour.out" && ok "info showed the simulated GPU" ||
        not_ok "info did not show the simulated GPU"
grep -qx "nvidia.com/gpu=0-4g" "$TMP/tour.out" && grep -qx "nvidia.com/gpu=1-half" "$TMP/tour.out" &&
        ok "cdi list showed the slice devices" || not_ok "cdi list lacks nvidia.com/gpu=0-4g or =1-half"
grep -qE "^[0-9a-f]{12}[0-9a-f]* +0 +[1-9][0-9.]*[MG] / 8\.0G " "$TMP/tour.out" &&
        ok "top showed the running container's slice on GPU 0: memory used / 8.0G" ||
        not_ok "top showed no row for GPU 0 with memory used / 8.0G: $(sed -n '/^CONTAINER/,+2p' "$TMP/tour.out" | tr '\n' '|')"
grep -q "^gpuslice_slice_memory_limit_bytes{.*} 8589934592$" "$TMP/tour.out" &&
        ok "metrics showed the running container's 8 GiB quota" ||
        not_ok "metrics showed no 8 GiB quota: $(grep '^gpuslice_slice' "$TMP/tour.out" | head -3 | tr '\n' ' ')"
finish
